"""deploy/ as kustomize renders it (`kubectl kustomize deploy/`, the pinned kubectl of the test
extras): the generated CRDs, the image of this version, and RBAC that grants nothing cluster-wide
but reading CRDs and the cluster-scoped provider. tests/integration/test_deploy_rbac.py applies it."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import textwrap
import tomllib
from typing import Any

import pytest
import yaml

from agent.clients import endpoints
from agent.model import kinds, schema
from agent.run import settings
from tests.conftest import ROOT

KUBECTL = pathlib.Path(sys.executable).parent / "kubectl"
IMAGE = "ghcr.io/bindy-gitops/bindy-agent"


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    done = subprocess.run([str(KUBECTL), "kustomize", str(ROOT / "deploy")], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def _one(docs: list[dict[str, Any]], kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name
             and d["metadata"].get("namespace") == namespace]
    assert len(found) == 1, f"{kind} {namespace}/{name}: {len(found)} found"
    return found[0]


def _container(docs: list[dict[str, Any]]) -> dict[str, Any]:
    pod = _one(docs, "Deployment", "bindy-agent", "bindy-agent")["spec"]["template"]["spec"]
    container: dict[str, Any] = pod["containers"][0]
    return container


def test_the_crds_are_exactly_the_generated_ones(rendered: list[dict[str, Any]]) -> None:
    crds = {d["metadata"]["name"]: d for d in rendered if d["kind"] == "CustomResourceDefinition"}
    assert crds == {k.crd_name: schema.crd(k) for k in kinds.KINDS.values()}


def test_the_image_is_this_version_built_from_the_dockerfile(rendered: list[dict[str, Any]]) -> None:
    assert _container(rendered)["image"] == f"{IMAGE}:{_version()}"


def test_every_agent_setting_in_the_deployment_exists_and_matches_the_rbac(rendered: list[dict[str, Any]]) -> None:
    env = {e["name"]: e.get("value") for e in _container(rendered)["env"] if e["name"].startswith("BINDY_AGENT_")}
    known = {f"BINDY_AGENT_{name.upper()}" for name in settings.Settings.model_fields}
    assert set(env) <= known, set(env) - known
    targets = env["BINDY_AGENT_ALLOWED_NAMESPACES"].split(",")
    for namespace in [*targets, env["BINDY_AGENT_AGENT_NAMESPACE"]]:
        _one(rendered, "Namespace", namespace)
        _one(rendered, "Role", "bindy-agent", namespace)
        binding = _one(rendered, "RoleBinding", "bindy-agent", namespace)
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "bindy-agent", "namespace": "bindy-agent"}]
    assert env["BINDY_AGENT_NAMESPACE"] in targets


def test_the_zone_api_token_is_projected_for_its_audience(rendered: list[dict[str, Any]]) -> None:
    container = _container(rendered)
    env = {e["name"]: e.get("value") for e in container["env"]}
    token = pathlib.PurePosixPath(env["BINDY_AGENT_ZONE_API_TOKEN_FILE"])
    assert str(token) == str(endpoints.ZONE_API_TOKEN) and env["BINDY_AGENT_ZONE_API_AUDIENCE"] == "bindcar"
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == str(token.parent))
    pod = _one(rendered, "Deployment", "bindy-agent", "bindy-agent")["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["projected"]["sources"] == [{"serviceAccountToken": {
        "audience": endpoints.ZONE_API_AUDIENCE, "expirationSeconds": 600, "path": token.name}}]


def test_rbac_is_namespaced_except_crds_and_the_cluster_provider(rendered: list[dict[str, Any]]) -> None:
    cluster_rules = [r for d in rendered if d["kind"] == "ClusterRole" for r in d["rules"]]
    resources = {res for r in cluster_rules for res in r["resources"]}
    assert resources == {"customresourcedefinitions", "clusterbind9providers", "clusterbind9providers/status"}
    crd_writes = [r for r in cluster_rules if set(r["verbs"]) & {"create", "patch", "update", "delete"}
                  and r["resources"] == ["customresourcedefinitions"]]
    assert [sorted(r["resourceNames"]) for r in crd_writes] == [sorted(k.crd_name for k in kinds.KINDS.values())]
    every_rule = cluster_rules + [r for d in rendered if d["kind"] == "Role" for r in d["rules"]]
    assert not [r for r in every_rule if "*" in r["verbs"] + r["resources"] + r["apiGroups"] or "watch" in r["verbs"]]
    namespaces = {d["metadata"]["namespace"] for d in rendered if d["kind"] in ("Role", "RoleBinding")}
    assert namespaces == {"bindy-agent", "dns-system"}
    own = _one(rendered, "Role", "bindy-agent", "bindy-agent")["rules"]
    named = {res: sorted(r["resourceNames"]) for r in own if "resourceNames" in r for res in r["resources"]}
    assert named == {"leases": [settings.Settings.model_fields["lease_name"].default]}
    assert {res for r in own for res in r["resources"]} == {"configmaps", "leases", "events", "namespaces", "pods"}
    assert [r["verbs"] for r in own if "pods" in r["resources"]] == [["list", "patch"]]  # the leader label, nothing more


def test_the_install_pages_overlay_points_the_agent_at_a_repository(tmp_path: pathlib.Path) -> None:
    lines = INSTALL_PAGE.read_text().split("    # dns-agent/kustomization.yaml")[1].split("\n\n")[0]
    overlay = textwrap.dedent("\n".join(lines.splitlines()[1:]))
    shutil.copytree(ROOT / "deploy", tmp_path / "deploy")
    shutil.copytree(ROOT / "schemas" / "crds", tmp_path / "schemas" / "crds")
    (tmp_path / "dns-agent").mkdir()
    (tmp_path / "dns-agent" / "kustomization.yaml").write_text(overlay)
    done = subprocess.run([str(KUBECTL), "kustomize", str(tmp_path / "dns-agent")], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    container = _container([d for d in yaml.safe_load_all(done.stdout) if d])
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["BINDY_AGENT_REPO"] == "https://git.example.com/acme/dns.git"
    assert env["BINDY_AGENT_ALLOWED_NAMESPACES"] == "dns-system"  # the rest of the base is kept
    # the image the user built and pushed, under its own name, with the version's tag kept
    assert container["image"] == f"registry.example.com/platform/bindy-agent:{_version()}"


INSTALL_PAGE = ROOT / "docs" / "install.md"


def _install_section() -> str:
    """The install page up to what the agent does once installed."""
    text = INSTALL_PAGE.read_text()
    return text[:text.index("\n## Namespaces, CRDs and credentials\n")]


def test_the_install_page_says_before_the_install_command_which_image_to_build_and_which_secrets_to_create(
        rendered: list[dict[str, Any]]) -> None:
    before, command, _ = _install_section().partition("\n    kubectl apply -k deploy/")
    assert command, "the Install section shows `kubectl apply -k deploy/`"
    image = yaml.safe_load((ROOT / "deploy" / "kustomization.yaml").read_text())["images"][0]["name"]
    assert image == IMAGE
    assert "There is no published image" in before and f"`{image}:<version>`" in before
    assert "docker build -t $image:$version . && docker push $image:$version" in before
    assert f"kustomize edit set image {image}=$image:$version" in before
    # every Secret the Deployment mounts, with the keys its settings read, is created first
    pod = _one(rendered, "Deployment", "bindy-agent", "bindy-agent")["spec"]["template"]["spec"]
    mounts = {m["name"]: m["mountPath"] for m in _container(rendered)["volumeMounts"]}
    env = [e["value"] for e in _container(rendered)["env"] if "value" in e]
    wanted = {(v["secret"]["secretName"], pathlib.PurePosixPath(value).name) for v in pod["volumes"] if "secret" in v
              for value in env if value.startswith(mounts[v["name"]] + "/")}
    assert wanted == {("bindy-agent-git", "token"), ("bindy-agent-webhook", "secret"), ("bindy-agent-report-key", "key")}
    for secret, key in wanted:
        assert f"kubectl -n bindy-agent create secret generic {secret} --from-file={key}=" in before, secret
    assert before.count("create secret generic") == len(wanted)
    assert "There is no Helm chart" in _install_section()


def _version() -> str:
    version: str = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    return version
