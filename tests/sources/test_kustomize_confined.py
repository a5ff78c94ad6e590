"""A kustomization reads nothing of the machine but the repository, and fetches nothing: whatever way it names
a path or a URL (an entry that starts like an inline patch, a field name in another case or with Unicode folding
that kustomize still reads, a field the agent did not use to look at), it is refused at its line before kustomize
runs; and kustomize itself runs with no network where the machine allows it (real kubectl kustomize, real
loopback HTTP server, real Git)."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

from tests.conftest import SAMPLE
from tests.support import clirun
from tests.support.gitremote import GitRemote
from tests.support.recorder import Recorder

LEAK = """apiVersion: bindy.firestoned.io/v1beta1
kind: TXTRecord
metadata: {name: leak, namespace: dns-system, labels: {zone: example-com}}
spec: {name: leak, text: ["placeholder"]}
"""
STEAL = """replacements:
- source: {kind: ConfigMap, fieldPath: data.secret}
  targets:
  - select: {kind: TXTRecord, name: leak}
    fieldPaths: [spec.text.0]
"""


def _repo(root: pathlib.Path) -> pathlib.Path:
    root.mkdir(parents=True)
    shutil.copytree(SAMPLE / "zones", root / "zones")
    shutil.copytree(SAMPLE / "infrastructure", root / "infrastructure")
    (root / "txt.yaml").write_text(LEAK)
    return root


def _elsewhere(tmp: pathlib.Path) -> pathlib.Path:
    """A directory of the machine outside the repository holding a kustomization and a secret."""
    where = tmp / "elsewhere"
    where.mkdir()
    (where / "kustomization.yaml").write_text("configMapGenerator:\n- name: stolen\n  files: [secret]\n")
    (where / "secret").write_text("SUPERSECRET-abc")
    return where


def _climb(where: pathlib.Path, start: str = "apiVersion") -> str:
    return start + "/.." * 30 + str(where)


@pytest.mark.parametrize("field", ["resources", "components", "bases", "patchesStrategicMerge"])
def test_an_entry_that_starts_like_an_inline_patch_is_still_a_path(tmp_path: pathlib.Path, field: str) -> None:
    repo = _repo(tmp_path / "repo")
    entry = _climb(_elsewhere(tmp_path))
    (repo / "kustomization.yaml").write_text(f"{field}:\n- {entry}\n" + (
        "resources: [infrastructure/cluster.yaml, zones/example-com.yaml, txt.yaml]\n" if field != "resources" else
        "- infrastructure/cluster.yaml\n- zones/example-com.yaml\n- txt.yaml\n") + STEAL)
    plan = clirun.main("plan", str(repo), "-o", "text")
    assert "SUPERSECRET" not in plan.stdout + plan.stderr
    assert plan.returncode == 1
    assert f"{repo}/kustomization.yaml:2: {field}[0] '{entry}' is outside the repository" in plan.stderr


def test_an_inline_patch_that_is_also_a_path_outside_is_refused(tmp_path: pathlib.Path) -> None:
    """kustomize reads a patchesStrategicMerge entry as a file when a file of that name exists, even when it
    parses as a patch: `{apiVersion: v1, kind: X, a: /../../..}` climbs out of any directory."""
    repo = _repo(tmp_path / "repo")
    entry = "{apiVersion: v1, kind: ConfigMap, a: " + "/.." * 30 + str(_elsewhere(tmp_path)) + "/secret}"
    (repo / "kustomization.yaml").write_text(f"resources: [txt.yaml]\npatchesStrategicMerge:\n- '{entry}'\n")
    result = clirun.main("validate", str(repo))
    assert result.returncode == 1
    assert "kustomization.yaml:3: patchesStrategicMerge[0]" in result.stderr
    assert "is an inline patch that is also a path outside the repository" in result.stderr


@pytest.mark.parametrize("name", ["RESOURCES", "Resources", "re\u017fources"])  # \u017f: long s, folds to s
def test_a_field_name_kustomize_folds_is_refused_not_ignored(tmp_path: pathlib.Path, name: str) -> None:
    repo = _repo(tmp_path / "repo")
    (repo / "kustomization.yaml").write_text(f"resources: [txt.yaml]\n{name}:\n- {_climb(_elsewhere(tmp_path), '')}\n")
    result = clirun.main("validate", str(repo))
    assert result.returncode == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{repo}/kustomization.yaml:2: field "), first
    assert "kustomize would read it as 'resources'" in first


def test_a_nested_field_is_read_as_exactly_as_a_top_one(tmp_path: pathlib.Path) -> None:
    repo = _repo(tmp_path / "repo")
    (repo / "kustomization.yaml").write_text("resources: [txt.yaml]\npatches:\n- target: {kind: TXTRecord}\n"
                                             "  PATH: /etc/hostname\n")
    result = clirun.main("validate", str(repo))
    assert result.returncode == 1
    assert result.stderr.startswith(f"{repo}/kustomization.yaml:4: field \"PATH\" in patches[0] is not 'path'")


def _with_entry(field: str, url: str) -> str:
    return {"openapi": f"openapi: {{path: '{url}'}}\n", "configurations": f"configurations: ['{url}']\n",
            "replacements": f"replacements: [{{path: '{url}'}}]\n", "crds": f"crds: ['{url}']\n",
            "resources": f"resources: ['{url}']\n", "components": f"components: ['{url}']\n",
            "patches": f"patches: [{{path: '{url}'}}]\n", "envs": f"configMapGenerator: [{{name: c, envs: ['{url}']}}]\n",
            }[field]


@pytest.mark.parametrize("field", ["openapi", "configurations", "replacements", "crds", "resources", "components",
                                   "patches", "envs"])
def test_no_field_makes_the_agent_fetch_a_url(tmp_path: pathlib.Path, field: str) -> None:
    repo = _repo(tmp_path / "repo")
    with Recorder() as server:
        head = "resources: [txt.yaml]\n" if field != "resources" else ""
        (repo / "kustomization.yaml").write_text(head + _with_entry(field, server.url + "/x"))
        result = clirun.main("validate", str(repo))
    assert result.returncode == 1
    assert "is a remote base: the agent builds only from the files of the revision (no network)" in result.stderr
    assert server.received == []


def test_kustomize_itself_runs_without_a_network(tmp_path: pathlib.Path) -> None:
    """The second wall: even a kustomization the agent's reading let through could reach no address."""
    from agent.sources import kustbuild

    if not kustbuild.isolation():
        pytest.skip("this machine does not allow an unprivileged network namespace (the agent runs without)")
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    with Recorder() as server:
        (work / "kustomization.yaml").write_text(f"resources: ['{server.url}/api/v1/secret.yaml']\n")
        with pytest.raises(Exception, match="kustomize could not build it"):
            kustbuild.build(str(work), str(home), kustbuild.Budget(30, 1 << 20), shown=str(work))
    assert server.received == []
    kubectl = kustbuild.kubectl()
    assert kubectl is not None
    # the same kustomization run by hand, outside the namespace, does reach the server: the test can fail
    with Recorder() as server:
        (work / "kustomization.yaml").write_text(f"resources: ['{server.url}/api/v1/secret.yaml']\n")
        subprocess.run([kubectl, "kustomize", str(work)], capture_output=True, check=False, timeout=60,
                       env={**os.environ, "NO_PROXY": "*"})
    assert [r.path for r in server.received] == ["/api/v1/secret.yaml"]


def test_a_pull_request_cannot_copy_a_file_of_the_ci_machine_into_the_comment(tmp_path: pathlib.Path) -> None:
    """`plan --base --head -o markdown` (what ci-plan posts) builds the head from Git objects."""
    other = tmp_path / "_work" / "other-repo" / "deploy"
    other.mkdir(parents=True)
    (other / "kustomization.yaml").write_text("secretGenerator:\n- name: db\n  envs: [db.env]\n")
    (other / "db.env").write_text("PASSWORD=hunter2-from-another-repo\n")
    git = GitRemote(tmp_path)
    _repo(git.work / "dns")
    git.commit("base", {"dns/kustomization.yaml": "resources: [infrastructure/cluster.yaml, zones/example-com.yaml]\n"})
    git.cmd("checkout", "-q", "-b", "pr")
    git.commit("add a TXT record", {"dns/kustomization.yaml": (
        "resources:\n- infrastructure/cluster.yaml\n- zones/example-com.yaml\n- txt.yaml\n"
        f"- {_climb(other)}\nreplacements:\n- source: {{kind: Secret, name: db, fieldPath: data.PASSWORD}}\n"
        "  targets: [{select: {kind: TXTRecord, name: leak}, fieldPaths: [spec.text.0]}]\n")})
    result = clirun.main("plan", "--base", "main", "--head", "pr", "--path", "dns", "-o", "markdown", cwd=git.work)
    assert "aHVudGVyMi1mcm9tLWFub3RoZXItcmVwbw" not in result.stdout  # the password, base64
    assert "hunter2" not in result.stdout + result.stderr
    assert "is outside the repository" in result.stdout + result.stderr


def test_a_kustomization_that_links_out_of_the_repository_is_not_read(tmp_path: pathlib.Path) -> None:
    repo = _repo(tmp_path / "repo")
    where = _elsewhere(tmp_path)
    (repo / "kustomization.yaml").symlink_to(where / "kustomization.yaml")
    result = clirun.main("plan", str(repo), "-o", "text")
    assert result.returncode == 1 and "SUPERSECRET" not in result.stdout + result.stderr
    assert f"{repo}/kustomization.yaml:1: not read: a symbolic link pointing outside the repository" in result.stderr
