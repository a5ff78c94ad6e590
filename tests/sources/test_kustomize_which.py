"""Which kustomizations are built, as Flux's kustomize-controller builds the path of a Kustomization without
breaking repositories the agent read before: a kustomization at the top of the directory read is built (under
any of the names kustomize reads), one in a subdirectory only when its files hold a Bindy object; YAML files
no build reads are named in a warning; and a valid overlay that names other files of the repository
(`configurations`, `replacements`, `openapi`, generators from `.env` files or directories) builds exactly as
`kubectl kustomize` builds it (real kubectl kustomize, real Git)."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

from agent.sources import kustomize, localdir
from tests.conftest import SAMPLE
from tests.support import clirun
from tests.support.gitremote import GitRemote


def _sample(root: pathlib.Path) -> pathlib.Path:
    shutil.copytree(SAMPLE, root)
    (root / "README.md").unlink()
    return root


def _summary(result: clirun.Result) -> str:
    return result.stderr.splitlines()[-1].split(": ", 1)[1]


def test_an_unrelated_kustomization_below_is_skipped_with_a_warning(tmp_path: pathlib.Path) -> None:
    """deploy/monitoring/ of another tool, with a remote base: the repository reads as it did before."""
    repo = _sample(tmp_path / "repo")
    before = clirun.main("validate", str(repo))
    (repo / "deploy" / "monitoring").mkdir(parents=True)
    (repo / "deploy" / "monitoring" / "kustomization.yaml").write_text(
        "resources:\n- https://github.com/prometheus-operator/kube-prometheus?ref=v0.13.0\n")
    result = clirun.main("validate", str(repo))
    assert result.returncode == 0, result.stderr
    assert _summary(before) == "27 objects in 9 files: valid (0 warnings)"
    assert _summary(result) == "27 objects in 10 files: valid (1 warnings)"  # the same objects, one more file
    assert f"warning: {repo}/deploy/monitoring/kustomization.yaml:1: skipped: a kustomization whose files hold no " \
           "Bindy object (bindy.firestoned.io): not built" in result.stderr


def test_a_top_kustomization_naming_few_files_warns_about_the_others(tmp_path: pathlib.Path) -> None:
    repo = _sample(tmp_path / "repo")
    (repo / "kustomization.yaml").write_text("resources: [infrastructure/cluster.yaml]\n")
    result = clirun.main("validate", str(repo))
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    unread = sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*.yaml")
                    if p.name != "kustomization.yaml" and p.relative_to(repo).as_posix() != "infrastructure/cluster.yaml")
    assert warnings == [f"warning: {repo}/kustomization.yaml:1: {len(unread)} YAML files below . are read by no "
                        f"kustomize build, so not by the agent (as Flux): {', '.join(unread[:5])} and "
                        f"{len(unread) - 5} more; name them in a kustomization's resources, or move it out of the "
                        "directory the agent reads"]


@pytest.mark.parametrize("name", ["Kustomization", "kustomization.yml"])
def test_every_name_kustomize_reads_is_built(tmp_path: pathlib.Path, name: str) -> None:
    repo = _sample(tmp_path / "repo")
    (repo / name).write_text("resources: [infrastructure/cluster.yaml, zones/example-com.yaml]\n"
                             "commonLabels: {env: named}\n")
    result = clirun.main("plan", str(repo), "-o", "json")
    assert result.returncode == 0, result.stderr
    assert '"env": "named"' in result.stdout
    assert "read by no kustomize build" in result.stderr


def test_two_kustomizations_in_one_directory_are_refused(tmp_path: pathlib.Path) -> None:
    repo = _sample(tmp_path / "repo")
    (repo / "kustomization.yaml").write_text("resources: [infrastructure/cluster.yaml]\n")
    (repo / "Kustomization").write_text("resources: [zones/example-com.yaml]\n")
    result = clirun.main("validate", str(repo))
    assert result.returncode == 1
    assert "a second kustomization in . (kustomization.yaml, Kustomization)" in result.stderr


OVERLAY = {
    "kustomization.yaml": """resources: [../base]
configurations: [kustomizeconfig.yaml]
openapi: {path: schema.json}
replacements:
- path: replacements.yaml
configMapGenerator:
- name: settings
  envs: [.env]
  files: [conf/one.conf, extra=notes.txt]
""",
    "kustomizeconfig.yaml": "nameReference: []\n",
    "schema.json": '{"definitions": {}}\n',
    "replacements.yaml": "- source: {kind: ConfigMap, name: settings, fieldPath: data.ADDRESS}\n"
                         "  targets: [{select: {kind: ARecord, name: www}, fieldPaths: [spec.ipv4Addresses.0]}]\n",
    ".env": "ADDRESS=203.0.113.77\n",
    "conf/one.conf": "one\n",
    "notes.txt": "notes\n",
}


def _overlay(root: pathlib.Path) -> pathlib.Path:
    base = _sample(root / "base")
    listed = sorted(p.relative_to(base).as_posix() for p in base.rglob("*.yaml"))
    (base / "kustomization.yaml").write_text("resources:\n" + "".join(f"- {p}\n" for p in listed))
    for name, text in OVERLAY.items():
        (root / "prod" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "prod" / name).write_text(text)
    return root / "prod"


def test_an_overlay_naming_other_files_builds_as_kubectl_kustomize_builds_it(tmp_path: pathlib.Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    prod = _overlay(repo)
    kubectl = kustomize.kubectl()
    assert kubectl is not None
    expected = subprocess.run([kubectl, "kustomize", str(prod)], capture_output=True, check=True).stdout
    built = [f for f in kustomize.render(localdir.files(prod), max_bytes=1 << 26)]
    assert [f.path for f in built] == ["(kustomize build)"]
    assert built[0].read() == expected
    assert b"203.0.113.77" in expected and b"one.conf: |" in expected and b"extra: |" in expected


def test_the_same_overlay_builds_from_a_commit(tmp_path: pathlib.Path) -> None:
    """From Git objects (a pull request's plan): the `.env` and `.json` files come from the commit too."""
    git = GitRemote(tmp_path)
    _overlay(git.work)
    git.commit("overlay", {})
    git.cmd("checkout", "-q", "-b", "pr")
    git.commit("a new address", {"prod/.env": "ADDRESS=203.0.113.78\n"})
    result = clirun.main("plan", "--base", "main", "--head", "pr", "--path", "prod", "-o", "json",
                         "--detailed-exitcode", cwd=git.work)
    assert result.returncode == 2, result.stderr
    assert '"203.0.113.78"' in result.stdout and '"203.0.113.77"' in result.stdout
