"""The sample world on a real control plane, named and Git (fixture `world`, tests/support/warmcold.py),
for the tests where a remembered cluster must decide as a listed one does: a run whose deletes fail, the
A records and instances as the cluster holds them, pods made ready or crashing, the files of a revision
without some objects, and the gates' policies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml
from kubernetes import client

from agent.gate import safety
from tests.support import dnsworld
from tests.support import warmcold as wc
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster

PRUNE = safety.Policy(force=True, allow_prune=True)
SHIPPED = safety.Policy(delete_threshold=1.0)  # the zone gate out of the way; the prune gate as shipped
BEFORE = "2026-01-01T00:00:00Z"


@pytest.fixture
def world(tmp_path: Any, git_remote: GitRemote, own_dns: dnsworld.Dns, kube: KubeCluster, namespace: str,
          ) -> dict[str, Any]:
    return wc.world_of(tmp_path, git_remote, own_dns.pair, own_dns.apis, kube, namespace)


def _run_failing_deletes(world: dict[str, Any], fails: Callable[[str, str], BaseException | None],
                         policy: safety.Policy) -> Any:
    """One run whose client's delete raises what `fails(kind, name)` gives (None: it deletes)."""
    api = world["api"]
    real = api.delete

    def delete(kind: str, ns: str | None, name: str, **kw: Any) -> bool:
        exc = fails(kind, name)
        if exc is not None:
            raise exc
        return bool(real(kind, ns, name, **kw))

    api.delete = delete
    try:
        return wc.run(world, policy=policy)
    finally:
        del api.delete  # the class's again (an instance attribute holding `real` would be a cycle)


def _arecords(world: dict[str, Any]) -> list[str]:
    found = client.CustomObjectsApi(world["api"].client).list_namespaced_custom_object(
        "bindy.firestoned.io", "v1beta1", world["namespace"], "arecords")["items"]
    return sorted(i["metadata"]["name"] for i in found)


def _without(files: dict[str, str], drop: set[tuple[str, str]]) -> dict[str, str | None]:
    """The record files with the CRs (kind, name) in `drop` taken out."""
    out: dict[str, str | None] = {}
    for path, text in files.items():
        if not path.startswith("records/"):
            continue
        docs = text.split("\n---\n")
        kept = [d for d in docs if ((y := yaml.safe_load(d) or {}).get("kind"), (y.get("metadata") or {}).get("name"))
                not in drop]
        if len(kept) != len(docs):
            out[path] = "\n---\n".join(kept)
    return out


def _removal_order(world: dict[str, Any]) -> list[tuple[str, str]]:
    """The record CRs (kind, name) in an order they may leave Git in: what references addresses
    first, then the addresses (not NS records, nor the delegation's glue)."""
    found = sorted({(y["kind"], y["metadata"]["name"]) for p, t in world["files"].items() if p.startswith("records/")
                    for d in t.split("\n---\n") if (y := yaml.safe_load(d)) and y.get("kind") != "NSRecord"})
    return [r for r in found if r[0] not in ("ARecord", "AAAARecord")] + [
        r for r in found if r[0] in ("ARecord", "AAAARecord") and not r[1].startswith("ns")]


def _instances(world: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in wc.statuses(world).items() if k.startswith("Bind9Instance/")}


def _pods(world: dict[str, Any], ready: bool) -> Callable[[], bool]:
    """Sets every pod Ready (or crashing) as a kubelet would; True once the Deployments count them."""
    ns = world["namespace"]
    apps, core = client.AppsV1Api(world["api"].client), client.CoreV1Api(world["api"].client)

    def check() -> bool:
        for pod in core.list_namespaced_pod(ns).items:
            now = any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
            if pod.metadata.deletion_timestamp is None and now != ready:
                status: dict[str, Any] = {"phase": "Running", "conditions": [
                    {"type": t, "status": str(ready), "lastTransitionTime": BEFORE}
                    for t in ("Ready", "ContainersReady")]}
                if not ready:
                    status["containerStatuses"] = [{
                        "name": "bind9", "ready": False, "restartCount": 5, "image": "bind9", "imageID": "",
                        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off restarting"}}}]
                core.patch_namespaced_pod_status(pod.metadata.name, ns, {"status": status})
        deps = apps.list_namespaced_deployment(ns).items
        return bool(deps) and all(
            ((d.status.ready_replicas or 0) >= (d.spec.replicas or 1)) == ready
            and (not ready or (d.status.observed_generation or 0) >= d.metadata.generation
                 and d.status.updated_replicas == d.status.replicas == (d.spec.replicas or 1)
                 and not d.status.unavailable_replicas) for d in deps)
    return check
