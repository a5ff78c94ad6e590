"""The remembered cluster against a listed one, on objects that changed since (beside
test_recalled_world.py): a delete that failed is retried only on the object as it is now (gone: a record back in Git is
created; someone else's since: left alone, and a DELETE names the uid the plan saw); a Deployment
deleted by hand is made again on the next push and its instance is not Ready meanwhile; an object
already deleted but held by a finalizer is neither deleted again nor counted in the prune gate's
base, listed or remembered; a namespace deleted by hand is created again by the run after the first
that failed in it. Real kube-apiserver, named and Git (the sample world); each fails on the code before.
"""

from __future__ import annotations

import math
import time
import uuid
from typing import Any

import pytest
from kubernetes import client

from agent.clients.statestore import ConfigMapStore
from agent.errors import KubeError
from agent.gate import safety
from agent.run.memory import Memory
from agent.sources.git import GitSource
from tests.support import agentrun, recalledworld
from tests.support import warmcold as wc
from tests.support.procs import until
from tests.support.recalledworld import (
    PRUNE,
    SHIPPED,
    _arecords,
    _instances,
    _pods,
    _removal_order,
    _run_failing_deletes,
    _without,
)

pytestmark = pytest.mark.integration
world = recalledworld.world  # the fixture, shared
GROUP = ("bindy.firestoned.io", "v1beta1")
__all__ = ["world"]  # the fixture


def _www_delete_fails(world: dict[str, Any], *, deleted: bool) -> None:
    """`www` leaves Git and its DELETE fails once (`deleted`: the server deleted it, the reply was lost)."""
    real = world["api"].delete
    failed: list[str] = []

    def once(kind: str, name: str) -> BaseException | None:
        if kind != "ARecord" or failed:
            return None
        failed.append(name)
        if deleted:
            real(kind, world["namespace"], name)
        return KubeError("server error (injected): 504 Gateway Timeout", reason="server")

    wc.commit(world, {wc.WEB: wc.docs_without(world["files"][wc.WEB], "www")})
    first = _run_failing_deletes(world, once, PRUNE)
    assert first.outcome == "partial" and failed == ["www"], (first.outcome, first.message)


@pytest.mark.parametrize("how", ["labels removed (taken over)", "made again by another owner"])
def test_a_failed_delete_is_not_retried_on_an_object_no_longer_the_agents(world: dict[str, Any], how: str) -> None:
    crs, ns = client.CustomObjectsApi(world["api"].client), world["namespace"]
    assert wc.run(world, policy=PRUNE).outcome == "applied"
    _www_delete_fails(world, deleted=False)
    if how.startswith("labels"):
        crs.patch_namespaced_custom_object(*GROUP, ns, "arecords", "www", {"metadata": {"labels": None}})
    else:
        spec = crs.get_namespaced_custom_object(*GROUP, ns, "arecords", "www")["spec"]
        crs.delete_namespaced_custom_object(*GROUP, ns, "arecords", "www")
        crs.create_namespaced_custom_object(*GROUP, ns, "arecords", {
            "apiVersion": "/".join(GROUP), "kind": "ARecord", "spec": spec,
            "metadata": {"name": "www", "namespace": ns, "labels": {"team": "someone-else"}}})
    cold = [line for line in wc.cold_plan(world, policy=PRUNE) if "ARecord" in line]
    out = wc.run(world, policy=PRUNE)
    assert [line for line in wc.lines(out) if "ARecord" in line] == cold == [], cold
    assert out.outcome == "applied" and "www" in _arecords(world), (out.outcome, out.message)


@pytest.mark.parametrize("how", ["deleted by hand", "deleted, the reply lost"])
def test_a_failed_delete_whose_object_went_is_created_when_it_is_back_in_git(world: dict[str, Any],
                                                                           how: str) -> None:
    assert wc.run(world, policy=PRUNE).outcome == "applied"
    web = world["files"][wc.WEB]
    _www_delete_fails(world, deleted=how != "deleted by hand")
    if how == "deleted by hand":
        client.CustomObjectsApi(world["api"].client).delete_namespaced_custom_object(
            *GROUP, world["namespace"], "arecords", "www")
    assert "www" not in _arecords(world)
    wc.commit(world, {wc.WEB: web})  # a revert
    cold = [line for line in wc.cold_plan(world, policy=PRUNE) if "ARecord" in line]
    out = wc.run(world, policy=PRUNE)
    assert [line for line in wc.lines(out) if "ARecord" in line] == cold and cold, cold
    assert out.outcome == "applied" and "www" in _arecords(world), (out.outcome, out.message)


def test_a_deployment_deleted_by_hand_is_made_again_by_the_next_push(world: dict[str, Any]) -> None:
    ns = world["namespace"]
    apps = client.AppsV1Api(world["api"].client)
    assert wc.run(world).outcome == "applied"
    until("the instances' pods ready", _pods(world, True), timeout=60)
    wc.commit(world, {wc.WEB: world["files"][wc.WEB].replace("192.0.2.12", "192.0.2.78")})
    assert wc.run(world).outcome == "applied"
    name = sorted(d.metadata.name for d in apps.list_namespaced_deployment(ns).items)[0]
    apps.delete_namespaced_deployment(name, ns)
    until("the Deployment gone", lambda: name not in [d.metadata.name for d in apps.list_namespaced_deployment(ns).items],
          timeout=30)
    wc.commit(world, {wc.WEB: world["files"][wc.WEB].replace("192.0.2.78", "192.0.2.79")})
    cold = [line for line in wc.cold_plan(world) if "Deployment" in line]
    out = wc.run(world)
    assert [line for line in wc.lines(out) if "Deployment" in line] == cold and cold, cold
    assert name in [d.metadata.name for d in apps.list_namespaced_deployment(ns).items]
    assert not any(c[:2] == ("Ready", "True") for c in _instances(world)[f"Bind9Instance/{name}"])
    assert {k: v for k, v in wc.status_vs_cold(world).items() if k.startswith("Bind9Instance/")} == {}


def test_an_object_already_deleted_but_held_is_not_deleted_again_nor_counted(world: dict[str, Any]) -> None:
    """R1 prunes 3 records another controller's finalizer holds; R2 prunes as many more as the limit
    allows without them: the running agent and a restarted one (which lists the 3, terminating)
    plan the same deletes from the same base, and apply R2."""
    crs, ns = client.CustomObjectsApi(world["api"].client), world["namespace"]
    assert wc.run(world, policy=SHIPPED).outcome == "applied"
    records = _removal_order(world)
    first = set(records[:3])
    try:
        for kind, name in first:
            crs.patch_namespaced_custom_object(*GROUP, ns, kind.lower() + "s", name,
                                               {"metadata": {"finalizers": ["example.com/hold"]}})
        wc.commit(world, _without(world["files"], first))
        assert wc.run(world, policy=SHIPPED).outcome == "applied"
        cold = wc.run(world, Memory(), dry_run=True, policy=SHIPPED)
        assert wc.lines(cold) == [], wc.lines(cold)  # not deleted again
        more = math.floor(safety.PRUNE_THRESHOLD * cold.plan.kube_managed) if cold.plan.kube_managed else 1
        wc.commit(world, _without(world["files"], first | set(records[3:3 + more])))
        cold = wc.run(world, Memory(), dry_run=True, policy=SHIPPED)
        warm = wc.run(world, dry_run=True, policy=SHIPPED)
        assert (warm.plan.refusals, warm.plan.kube_managed) == (cold.plan.refusals, cold.plan.kube_managed) \
            and not cold.plan.refusals, (warm.plan.refusals, cold.plan.refusals)
        assert wc.lines(warm) == wc.lines(cold)
    finally:
        for kind, name in first:
            crs.patch_namespaced_custom_object(*GROUP, ns, kind.lower() + "s", name, {"metadata": {"finalizers": None}})


def test_a_namespace_deleted_by_hand_is_made_again_within_two_runs(world: dict[str, Any]) -> None:
    api, ns = world["api"], world["namespace"]
    core = client.CoreV1Api(api.client)
    agent_ns = f"recalled-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=agent_ns)))
    memory = Memory()

    def run(mem: Memory, **kw: Any) -> Any:
        return agentrun.sync_git(GitSource(world["remote"].url, world["cache"]), store=ConfigMapStore(api, agent_ns),
                                 kube_api=api, endpoints=world["endpoints"], agent_namespace=agent_ns,
                                 memory=mem, create_namespaces=True, **kw)

    try:
        assert run(memory).outcome == "applied"
        core.delete_namespace(ns)
        until("the namespace gone", lambda: ns not in [n.metadata.name for n in core.list_namespace().items],
              timeout=90)
        outcomes = []
        for i in range(2):
            wc.commit(world, {wc.WEB: world["files"][wc.WEB].replace("192.0.2.12", f"192.0.2.{70 + i}")})
            outcomes.append(run(memory).outcome)
        assert outcomes[-1] == "applied", outcomes
        assert wc.lines(run(Memory(), dry_run=True)) == []
    finally:
        core.delete_namespace(agent_ns)


def _restore(world: dict[str, Any], plural: str, name: str) -> str:
    """Deletes a CR and makes it again from its body (labels, annotations, spec), as a backup restore or
    `kubectl replace --force` does; returns the new uid."""
    crs, ns = client.CustomObjectsApi(world["api"].client), world["namespace"]
    body = crs.get_namespaced_custom_object(*GROUP, ns, plural, name)
    crs.delete_namespaced_custom_object(*GROUP, ns, plural, name)
    meta = {k: v for k, v in body["metadata"].items() if k in ("name", "namespace", "labels", "annotations")}
    made = crs.create_namespaced_custom_object(*GROUP, ns, plural, {
        **{k: v for k, v in body.items() if k not in ("metadata", "status")}, "metadata": meta})
    return str(made["metadata"]["uid"])


def test_a_restored_instance_s_deployment_is_made_again_owned_by_the_live_instance(world: dict[str, Any]) -> None:
    """The garbage collector removes the children of the instance deleted; the next push makes its
    Deployment again, owned by the instance as it is now (owned by the old uid, it would be removed
    again at once while the run said applied)."""
    ns = world["namespace"]
    apps = client.AppsV1Api(world["api"].client)

    def owners() -> dict[str, list[str]]:
        return {d.metadata.name: [o.uid for o in d.metadata.owner_references or []]
                for d in apps.list_namespaced_deployment(ns).items}

    assert wc.run(world).outcome == "applied"
    name = sorted(owners())[0]
    uid = _restore(world, "bind9instances", name)
    until("the garbage collector removed the old Deployment", lambda: name not in owners(), timeout=60)
    wc.commit(world, {wc.WEB: world["files"][wc.WEB].replace("192.0.2.12", "192.0.2.77")})
    out = wc.run(world)
    assert out.outcome == "applied", (out.outcome, out.message)
    assert any(line.startswith("create Deployment") and name in line for line in wc.lines(out)), wc.lines(out)
    until("the Deployment kept a while", lambda: owners().get(name) == [uid], timeout=10)
    time.sleep(3)  # the garbage collector had time to act on a wrong owner
    assert owners().get(name) == [uid], owners()


def test_a_restored_object_is_deleted_when_it_leaves_git(world: dict[str, Any]) -> None:
    """The plan remembered the old uid: the DELETE is refused (precondition), the object read again,
    and deleted since it is still the agent's (as a cold run does), in the same run."""
    assert wc.run(world, policy=PRUNE).outcome == "applied"
    _restore(world, "arecords", "www")
    wc.commit(world, {wc.WEB: wc.docs_without(world["files"][wc.WEB], "www")})
    cold = wc.run(world, Memory(), dry_run=True, policy=PRUNE)
    warm = wc.run(world, policy=PRUNE)
    assert wc.lines(warm) == wc.lines(cold)
    assert warm.outcome == "applied" and "www" not in _arecords(world), (warm.outcome, warm.message)
