"""A repository kept as kustomize overlays (a base and two overlays with patches) is read as Flux's
kustomize-controller reads it: the directory the agent is pointed at is built with kustomize (from the
repository's other files too: the base), and plans exactly as `kubectl kustomize` renders it. A remote
base, a plugin, a Helm chart and a path outside the repository are refused with a clear message at the
kustomization's line. A repository without a kustomization is read as before."""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
from typing import Any

import pytest

from agent.sources import kustbuild, kustomize, localdir
from tests.conftest import SAMPLE
from tests.support import clirun
from tests.support.gitremote import GitRemote

KUBECTL = kustomize.kubectl()
PROD_PATCH = """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../../base]
patches:
  - target: {kind: ARecord, name: www}
    patch: |
      - op: replace
        path: /spec/ipv4Addresses
        value: [203.0.113.10, 203.0.113.11]
"""
DEV_PATCH = """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../../base]
commonLabels: {env: dev}
patches:
  - path: short-ttl.yaml
"""
SHORT_TTL = """apiVersion: bindy.firestoned.io/v1beta1
kind: ARecord
metadata: {name: www, namespace: dns-system}
spec: {ttl: 60}
"""


def _overlays(root: pathlib.Path) -> pathlib.Path:
    """The sample repository as a base, with a prod and a dev overlay patching it, in a Git work tree (the
    repository an overlay may build from: outside Git, the directory read is a repository of its own)."""
    base = root / "base"
    shutil.copytree(SAMPLE, base)
    (base / "README.md").unlink()
    listed = sorted(p.relative_to(base).as_posix() for p in base.rglob("*.yaml"))
    (base / "kustomization.yaml").write_text("resources:\n" + "".join(f"  - {p}\n" for p in listed))
    for overlay, text in (("prod", PROD_PATCH), ("dev", DEV_PATCH)):
        (root / "overlays" / overlay).mkdir(parents=True)
        (root / "overlays" / overlay / "kustomization.yaml").write_text(text)
    (root / "overlays" / "dev" / "short-ttl.yaml").write_text(SHORT_TTL)
    if not (root / ".git").exists():
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _plan(directory: pathlib.Path, *args: str) -> dict[str, Any]:
    result = clirun.main("plan", str(directory), "-o", "json", "--detailed-exitcode", *args)
    assert result.returncode == 2, result.stderr  # changes
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _rendered(tmp: pathlib.Path, repo: pathlib.Path, overlay: str) -> pathlib.Path:
    """What `kubectl kustomize` renders, written as a plain directory of CRs."""
    assert KUBECTL is not None
    out = tmp / f"rendered-{overlay}"
    out.mkdir()
    built = subprocess.run([KUBECTL, "kustomize", str(repo / "overlays" / overlay)], capture_output=True, text=True,
                           check=True)
    (out / "all.yaml").write_text(built.stdout)
    return out


@pytest.mark.parametrize("overlay", ["prod", "dev"])
def test_an_overlay_plans_as_kubectl_kustomize_renders_it(tmp_path: pathlib.Path, overlay: str) -> None:
    repo = _overlays(tmp_path / "repo")
    planned = _plan(repo / "overlays" / overlay)
    rendered = _plan(_rendered(tmp_path, repo, overlay))
    assert planned["changes"] == rendered["changes"] and planned["summary"] == rendered["summary"]
    records = {(c["target"]["name"], c["target"]["type"]): c["after"] for c in planned["changes"]
               if c["layer"] == "records"}
    if overlay == "prod":
        assert records[("www.example.com.", "A")] == {"ttl": 300, "values": ["203.0.113.10", "203.0.113.11"]}
    else:
        assert records[("www.example.com.", "A")]["ttl"] == 60
        zone = next(c for c in planned["changes"] if c["target"].get("kind") == "DNSZone")
        assert zone["after"]["metadata"]["labels"]["env"] == "dev"


def test_a_pull_request_on_an_overlay_in_git_plans_the_built_delta(tmp_path: pathlib.Path) -> None:
    """From Git (the commit's tree, no work tree): the overlay builds from the base elsewhere in the commit."""
    git = GitRemote(tmp_path)
    _overlays(git.work)
    git.commit("overlays", {})
    git.cmd("checkout", "-q", "-b", "feature")
    git.commit("prod: one address", {"overlays/prod/kustomization.yaml": PROD_PATCH.replace(
        "value: [203.0.113.10, 203.0.113.11]", "value: [203.0.113.12]")})
    result = clirun.main("plan", "--base", "main", "--head", "feature", "--path", "overlays/prod", "-o", "json",
                         "--detailed-exitcode", cwd=git.work)
    assert result.returncode == 2, result.stderr
    doc = json.loads(result.stdout)
    assert [(c["action"], c["layer"], c["target"].get("name")) for c in doc["changes"]] == [
        ("update", "kubernetes", "www"), ("update", "records", "www.example.com.")]
    assert doc["changes"][1]["after"]["values"] == ["203.0.113.12"]
    comment = clirun.main("plan", "--base", "main", "--head", "feature", "--path", "overlays/prod", "-o", "markdown",
                          "--link-base", "https://git.example/o/r/blob", cwd=git.work)
    row = next(line for line in comment.stdout.splitlines() if line.startswith("| `~` | `www` |"))
    # the built output is no file of the repository: the change links to the overlay's kustomization
    assert row.endswith(f"(https://git.example/o/r/blob/{git.head()}/overlays/prod/kustomization.yaml#L1) |"), row


REFUSED = {
    "a remote base": ("resources:\n  - ../../base\n  - https://github.com/example/dns//base?ref=v1\n", 3,
                      "resources[1] 'https://github.com/example/dns//base?ref=v1' is a remote base: the agent builds "
                      "only from the files of the revision (no network); vendor it into the repository"),
    "a git remote": ("resources:\n  - git@github.com:example/dns.git\n", 2, "is a remote base"),
    "a plugin": ("resources: [../../base]\ngenerators: [gen.yaml]\n", 2,
                 "generators: a generator plugin (it would run code) is refused: the agent builds kustomizations "
                 "without plugins, exec functions or Helm; render it in CI and commit the output"),
    "a transformer": ("resources: [../../base]\ntransformers: [t.yaml]\n", 2, "a transformer plugin"),
    "a Helm chart": ("helmCharts:\n  - {name: bind, repo: https://charts.example}\n", 1, "a Helm chart is refused"),
    "a path outside": ("resources: [../../../../etc]\n", 1, "resources[0] '../../../../etc' is outside the "
                                                               "repository"),
    "a file outside": ("configMapGenerator:\n  - name: x\n    files: [/etc/passwd]\n", 3,
                       "configMapGenerator[0].files[0] '/etc/passwd' is outside the repository"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_would_reach_beyond_the_revision_is_refused_at_its_line(tmp_path: pathlib.Path, case: str) -> None:
    repo = _overlays(tmp_path / "repo")
    text, line, message = REFUSED[case]
    (repo / "overlays" / "prod" / "kustomization.yaml").write_text(text)
    result = clirun.main("validate", str(repo / "overlays" / "prod"))
    assert result.returncode == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{repo}/overlays/prod/kustomization.yaml:{line}: "), first
    assert message in first


def test_a_refused_base_is_named_where_it_is(tmp_path: pathlib.Path) -> None:
    repo = _overlays(tmp_path / "repo")
    (repo / "base" / "kustomization.yaml").write_text("resources:\n  - https://example.com/dns.yaml\n")
    result = clirun.main("validate", str(repo / "overlays" / "dev"))
    assert result.returncode == 1
    assert result.stderr.startswith(f"{repo}/overlays/dev/../../base/kustomization.yaml:2: resources[0] "
                                    "'https://example.com/dns.yaml' is a remote base")


def test_a_plain_repository_is_read_as_before(tmp_path: pathlib.Path) -> None:
    files = localdir.files(SAMPLE)
    assert kustomize.render(files, max_bytes=1 << 30) is files  # nothing built, nothing copied
    assert clirun.main("validate", str(SAMPLE)).returncode == 0


def test_without_kubectl_the_overlay_is_refused_with_what_to_install(tmp_path: pathlib.Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _overlays(tmp_path / "repo")
    monkeypatch.setattr(kustbuild, "kubectl", lambda: None)
    result = clirun.main("validate", str(repo / "overlays" / "prod"))
    assert result.returncode == 1
    assert "overlays/prod/kustomization.yaml:1: this directory is a kustomize overlay, and building it needs " \
           "kubectl" in result.stderr


def test_the_agents_git_source_builds_the_overlay_from_the_commit(tmp_path: pathlib.Path) -> None:
    """What `sync --repo URL --path overlays/prod` and `run` read: the fetched commit's tree, built."""
    from agent.run import validation
    from agent.sources.git import GitSource

    git = GitRemote(tmp_path)
    _overlays(git.work)
    git.commit("overlays", {})
    git.push()
    source = GitSource(git.url, tmp_path / "cache", path="overlays/prod")
    try:
        files = source.fetch().files()
        built = kustomize.render(files, max_bytes=1 << 30)
        assert [f.path for f in built] == ["(kustomize build)"]
        validated = validation.validate(files, default_namespace="dns-system", repo_policy=_policy(),
                                        delete_threshold=0.3, limits=_limits())
    finally:
        source.close()
    assert validated.ok, [str(p) for p in validated.problems]
    www = next(o for o in validated.manifest.objects if o.key.name == "www" and o.key.kind == "ARecord")
    assert www.model.spec.ipv4_addresses == ["203.0.113.10", "203.0.113.11"]  # type: ignore[attr-defined]


def _policy() -> Any:
    from agent.desired import policy

    return policy.PolicySettings.of()


def _limits() -> Any:
    from agent.model.limits import Limits

    return Limits()
