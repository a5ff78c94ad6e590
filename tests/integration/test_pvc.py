"""`storage.persistentVolumeClaim` against the real kube-apiserver (issue 26, "Pods and storage"): a
sync creates the claim the instance asks for (server-side apply, the agent's labels, no owner) and the
Deployment mounts it as the zones volume; a claim that exists is left alone (a bigger size in Git
does not resize it, a claim someone else made is used and not labelled), and removing the instance
from Git keeps its claim (it holds the zone files and DNSSEC keys)."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from kubernetes import client

from agent.clients.kubeapi import KubeApi
from agent.model.names import AGENT_LABEL, MANAGED_BY_KEY
from tests.support import agentrun, dnsrepo

pytestmark = pytest.mark.integration

INSTANCE = """apiVersion: bindy.firestoned.io/v1beta1
kind: Bind9Instance
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  clusterRef: dns
  role: primary
  storage:
    storageType: persistentVolumeClaim
    persistentVolumeClaim: {pvc}
"""


def _instance(root: pathlib.Path, namespace: str, name: str, pvc: str) -> pathlib.Path:
    path = root / "infrastructure" / f"{name}.yaml"
    path.write_text(INSTANCE.format(name=name, namespace=namespace, pvc=pvc))
    return path


def _zones_claim(apps: client.AppsV1Api, namespace: str, name: str) -> str:
    volumes = apps.read_namespaced_deployment(name, namespace).spec.template.spec.volumes
    zones = next(v for v in volumes if v.name == "zones")
    return str(zones.persistent_volume_claim.claim_name)


def test_a_sync_creates_the_claim_mounts_it_and_never_resizes_labels_or_deletes_one(
        tmp_path: pathlib.Path, kube_client: Any, namespace: str) -> None:
    root, _ = dnsrepo.unique_sample(tmp_path / "repo", namespace=namespace)
    stored = _instance(root, namespace, "stored-0", "{size: 1Gi, storageClassName: fast, accessModes: [ReadWriteOnce]}")
    core, apps = client.CoreV1Api(kube_client), client.AppsV1Api(kube_client)
    # a claim made by someone else, which the second instance names
    core.create_namespaced_persistent_volume_claim(namespace, {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "theirs", "labels": {"owner": "dba"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "3Gi"}}}})
    _instance(root, namespace, "theirs-0", "{claimName: theirs, size: 1Gi}")
    api = KubeApi(kube_client)

    first = agentrun.sync_dir(root, state=tmp_path / "state", kube_api=api, agent_namespace=namespace)
    assert first.outcome == "applied" and first.kube is not None and first.kube.failed == {}, first.message
    pvc = core.read_namespaced_persistent_volume_claim("stored-0-zones", namespace)
    assert (pvc.spec.resources.requests, pvc.spec.storage_class_name, pvc.spec.access_modes) == (
        {"storage": "1Gi"}, "fast", ["ReadWriteOnce"])
    assert pvc.metadata.labels[AGENT_LABEL] == namespace and MANAGED_BY_KEY in pvc.metadata.labels
    assert not pvc.metadata.owner_references  # the instance's deletion never garbage-collects the data
    assert _zones_claim(apps, namespace, "stored-0") == "stored-0-zones"
    assert _zones_claim(apps, namespace, "theirs-0") == "theirs"
    theirs = core.read_namespaced_persistent_volume_claim("theirs", namespace)
    assert theirs.metadata.labels == {"owner": "dba"} and theirs.spec.resources.requests == {"storage": "3Gi"}
    assert not first.conflicts, first.conflicts  # a claim someone else made is no conflict: it is used

    # a bigger size in Git: the plan has no change for the claim, and the claim keeps its size
    stored.write_text(stored.read_text().replace("size: 1Gi", "size: 5Gi"))
    planned = agentrun.sync_dir(root, state=tmp_path / "state", kube_api=api, agent_namespace=namespace, dry_run=True)
    assert planned.plan is not None
    assert [c for c in planned.plan.kube or [] if c.key.kind == "PersistentVolumeClaim"] == []
    resized = agentrun.sync_dir(root, state=tmp_path / "state", kube_api=api, agent_namespace=namespace)
    assert resized.outcome == "applied", resized.message
    assert core.read_namespaced_persistent_volume_claim("stored-0-zones", namespace).spec.resources.requests == {
        "storage": "1Gi"}

    # the instance removed from Git: its Deployment goes, its claim stays
    stored.unlink()
    removed = agentrun.sync_dir(root, state=tmp_path / "state", kube_api=api, agent_namespace=namespace,
                                allow_prune=True)
    assert removed.outcome == "applied", removed.message
    names = {d.metadata.name for d in apps.list_namespaced_deployment(namespace).items}
    assert "stored-0" not in names and "theirs-0" in names
    assert core.read_namespaced_persistent_volume_claim("stored-0-zones", namespace).metadata.deletion_timestamp is None

    # deleted by hand while still wanted: created again
    stored.write_text(INSTANCE.format(name="stored-0", namespace=namespace, pvc="{size: 2Gi}"))
    core.delete_namespaced_persistent_volume_claim("stored-0-zones", namespace)
    gone = _wait_gone(core, namespace, "stored-0-zones")
    assert gone
    back = agentrun.sync_dir(root, state=tmp_path / "state", kube_api=api, agent_namespace=namespace)
    assert back.outcome == "applied", back.message
    assert core.read_namespaced_persistent_volume_claim("stored-0-zones", namespace).spec.resources.requests == {
        "storage": "2Gi"}


def _wait_gone(core: client.CoreV1Api, namespace: str, name: str) -> bool:
    """The claim is deleted (the pvc-protection finalizer is removed only by a controller that does
    not run here, so it is removed by hand)."""
    import time

    end = time.monotonic() + 30
    while time.monotonic() < end:
        try:
            pvc = core.read_namespaced_persistent_volume_claim(name, namespace)
        except client.ApiException as exc:
            if exc.status == 404:
                return True
            raise
        if pvc.metadata.finalizers:
            core.patch_namespaced_persistent_volume_claim(name, namespace, {"metadata": {"finalizers": None}})
        time.sleep(0.2)
    return False
