"""Bindy's CRDs and the namespaces a sync creates are plan lines, against a real API
server of this module's own (a fresh cluster: no CRD, no namespace of the revision): the plan of the
fresh cluster lists them, the sync creates them, the next plan lists neither, and a revision the
gate refuses writes no CRD - not even one the plan shows as differing."""

from __future__ import annotations

import json
import pathlib
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from agent.model import kinds, names
from tests.conftest import SAMPLE
from tests.support import clirun
from tests.support.kube import KubeCluster

pytestmark = pytest.mark.integration
CRD = "CustomResourceDefinition"
TXT = f"txtrecords.{kinds.GROUP}"


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    """A control plane nobody else installs CRDs in or creates namespaces on."""
    cluster = KubeCluster(tmp_path_factory.mktemp("fresh-kube"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def _lines(doc: dict[str, Any], kind: str) -> list[tuple[str, str]]:
    return [(c["action"], c["target"]["name"]) for c in doc["changes"] if c["target"].get("kind") == kind]


def _printer_columns(api_client: Any) -> int:
    crd = client.ApiextensionsV1Api(api_client).read_custom_resource_definition(TXT)
    return len(crd.spec.versions[0].additional_printer_columns or [])


def test_crds_and_namespaces_are_plan_lines_created_once_and_a_refused_revision_writes_no_crd(
        fresh: KubeCluster, tmp_path: pathlib.Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    sync = (str(root), "--kubeconfig", str(fresh.kubeconfig), "--state", str(tmp_path / "state"),
            "--create-namespaces")
    api_client = fresh.api_client()
    ext = client.ApiextensionsV1Api(api_client)
    assert [c.metadata.name for c in ext.list_custom_resource_definition().items] == []

    # the fresh cluster: every CRD and both namespaces are lines of the plan, before anything is written
    shown = clirun.main("plan", str(root), "--kubeconfig", str(fresh.kubeconfig), "-o", "json", "--detailed-exitcode")
    assert shown.returncode == 2, shown.stderr  # changes
    doc = json.loads(shown.stdout)
    assert _lines(doc, CRD) == [("create", k.crd_name) for k in kinds.KINDS.values()]
    dry = clirun.main("sync", *sync, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"  + {CRD} {TXT}  (Bindy's CRD, generated from the agent's models)" in dry.stdout.splitlines()
    assert "  + Namespace dns-system  (created: objects are declared in it)" in dry.stdout.splitlines()
    assert f"  + Namespace {names.DEFAULT_AGENT_NAMESPACE}  (created: the agent's own namespace (its inventory " \
           "and state))" in dry.stdout.splitlines()
    assert dry.stdout.splitlines()[-1] == "Plan: 52 to create, 0 to update, 0 to delete."  # 38 objects, 12, 2
    assert ext.list_custom_resource_definition().items == []  # planning wrote nothing

    applied = clirun.main("sync", *sync)
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout == dry.stdout  # the plan shown is the plan applied
    assert len(ext.list_custom_resource_definition().items) == 12
    core = client.CoreV1Api(api_client)
    assert {"dns-system", names.DEFAULT_AGENT_NAMESPACE} <= {n.metadata.name for n in core.list_namespace().items}

    # after the apply: neither CRD nor namespace lines
    again = clirun.main("sync", *sync, "--dry-run")
    assert (again.returncode, again.stdout.splitlines()[-1]) == (0, "No changes: the world matches the revision.")
    doc = json.loads(clirun.main("plan", str(root), "--kubeconfig", str(fresh.kubeconfig), "-o", "json").stdout)
    assert (_lines(doc, CRD), _lines(doc, "Namespace"), doc["summary"]["create"]) == ([], [], 0)

    # a CRD edited by hand is an update line; a revision the gate refuses (a large prune) writes no CRD
    ext.patch_custom_resource_definition(TXT, [{"op": "remove", "path": "/spec/versions/0/additionalPrinterColumns/0"}])
    columns = _printer_columns(api_client)
    shutil.rmtree(root / "records")
    shutil.rmtree(root / "zones")
    refused = clirun.main("sync", *sync)
    assert refused.returncode == 2, refused.stderr
    assert any(line.startswith(f"  ~ {CRD} {TXT}  (the installed CRD differs from the agent's models) changed: "
                               "spec.versions[0].additionalPrinterColumns") for line in refused.stdout.splitlines())
    assert "The safety gate refuses this plan" in refused.stdout
    assert _printer_columns(api_client) == columns  # not restored: the refused plan wrote nothing

    # the same revision, allowed: the CRD is restored with the rest of the plan
    allowed = clirun.main("sync", *sync, "--allow-prune")
    assert allowed.returncode == 0, allowed.stderr
    assert _printer_columns(api_client) == columns + 1
    api_client.close()
