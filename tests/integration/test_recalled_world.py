"""The same revision and the same live world decide alike whether a long-running agent recalled the
cluster it left (agent/run/memory.py, kubeobserve.recall) or listed it (a cold agent, the next full
observe): a delete that failed is tried again by the next run and counted in the prune gate's base;
an instance's status and an RNDC rotation read its Deployment as the cluster has it now; the agent's
namespace, once created, is not created again; a same-named object its owner removed is created; an
object held by a finalizer is created again once it is gone. Real kube-apiserver, named and Git
(the sample world, tests/support/sampleworld.py); each test fails on the code before.
"""

from __future__ import annotations

import math
import uuid
from typing import Any

import pytest
from kubernetes import client

from agent.clients.deadline import DeadlineExceeded
from agent.clients.statestore import FileStore
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


@pytest.mark.parametrize("why", ["server error", "deadline"])
def test_a_delete_that_failed_is_tried_again_by_the_next_run(world: dict[str, Any], why: str) -> None:
    """The run says 'the rest is tried again on the next run': the next run (same revision, same
    cluster, the remembered one) deletes the record CR the failed run left, as a cold run plans."""
    assert wc.run(world, policy=PRUNE).outcome == "applied"
    wc.commit(world, {wc.WEB: wc.docs_without(world["files"][wc.WEB], "www")})
    failed: list[str] = []

    def once(kind: str, name: str) -> BaseException | None:
        if kind != "ARecord" or failed:
            return None
        failed.append(name)
        if why == "deadline":  # what Deadline.check raises in kubeapply when the run's time is up
            return DeadlineExceeded("the run's deadline passed before deleting it")
        return KubeError("server error (injected): 503 Service Unavailable", reason="server")

    first = _run_failing_deletes(world, once, PRUNE)
    assert first.outcome == "partial" and failed == ["www"], (first.outcome, first.message)
    cold = wc.cold_plan(world, policy=PRUNE)
    assert any("delete" in line and "ARecord" in line for line in cold), cold
    again = wc.run(world, policy=PRUNE)
    assert wc.lines(again) == cold and again.outcome == "applied", (again.outcome, wc.lines(again), cold)
    assert "www" not in _arecords(world)
    assert wc.cold_plan(world, policy=PRUNE) == []


def test_the_prune_gate_decides_alike_after_a_delete_that_failed(world: dict[str, Any]) -> None:
    """R1 removes 3 records whose deletes fail; R2 removes enough more that, with the 3 left over, the
    prune limit is passed: the remembered cluster and a listed one refuse R2 alike."""
    assert wc.run(world, policy=SHIPPED).outcome == "applied"
    records = _removal_order(world)
    first = set(records[:3])
    wc.commit(world, _without(world["files"], first))
    injected = KubeError("server error (injected): 503", reason="server")
    failing = _run_failing_deletes(world, lambda kind, name: injected if (kind, name) in first else None, SHIPPED)
    assert failing.outcome == "partial"
    managed = wc.run(world, Memory(), dry_run=True, policy=SHIPPED).plan.kube_managed
    more = math.floor(safety.PRUNE_THRESHOLD * (managed - len(first)))  # under the limit without the 3
    assert more + len(first) > safety.PRUNE_THRESHOLD * managed and more <= len(records) - len(first)
    wc.commit(world, _without(world["files"], first | set(records[3:3 + more])))
    cold = wc.run(world, Memory(), dry_run=True, policy=SHIPPED)
    warm = wc.run(world, policy=SHIPPED)
    assert cold.plan.refusals and warm.outcome == "rejected", (warm.outcome, warm.message, cold.plan.refusals)
    assert warm.plan.refusals == cold.plan.refusals


def test_an_instance_becomes_ready_on_the_next_push_once_its_pods_are(world: dict[str, Any]) -> None:
    assert wc.run(world).outcome == "applied"
    until("the instances' pods ready", _pods(world, True), timeout=60)
    wc.commit(world, {wc.WEB: world["files"][wc.WEB].replace("192.0.2.12", "192.0.2.77")})
    assert wc.run(world).outcome == "applied"
    assert all(("Ready", "True", "AllReady", "All 1 pods are ready") in v for v in _instances(world).values()), \
        _instances(world)
    assert {k: v for k, v in wc.status_vs_cold(world).items() if k.startswith("Bind9Instance/")} == {}


def test_an_instance_whose_pods_crash_is_degraded_on_the_next_push(world: dict[str, Any]) -> None:
    assert wc.run(world).outcome == "applied"
    until("the instances' pods ready", _pods(world, True), timeout=60)
    world["memory"].kube_at = 0.0  # the resync is due: the next run lists the cluster, all ready
    wc.commit(world, {wc.WEB: world["files"][wc.WEB].replace("192.0.2.12", "192.0.2.78")})
    assert wc.run(world).outcome == "applied"
    assert all(("Ready", "True", "AllReady", "All 1 pods are ready") in v for v in _instances(world).values())
    until("the instances' pods crashing", _pods(world, False), timeout=60)
    wc.commit(world, {wc.WEB: world["files"][wc.WEB].replace("192.0.2.78", "192.0.2.79")})
    assert wc.run(world).outcome == "applied"
    assert all(any(c[:2] == ("Degraded", "True") and "CrashLoopBackOff" in c[3] for c in v)
               for v in _instances(world).values()), _instances(world)
    assert {k: v for k, v in wc.status_vs_cold(world).items() if k.startswith("Bind9Instance/")} == {}


def test_a_rolled_out_rndc_rotation_drops_the_previous_key_on_the_next_push(world: dict[str, Any]) -> None:
    """A rotation stamps the Deployments; once their pods rolled, the next push drops the previous
    key from the Secret (no pod uses it), as a cold run plans."""
    assert wc.run(world).outcome == "applied"
    wc.commit(world, {wc.WEB: world["files"][wc.WEB].replace("192.0.2.12", "192.0.2.81")})
    assert wc.run(world, rotate_rndc_keys=True).outcome == "applied"
    until("the rotation rolled out", _pods(world, True), timeout=90)
    wc.commit(world, {wc.WEB: world["files"][wc.WEB].replace("192.0.2.81", "192.0.2.82")})
    cold = [line for line in wc.cold_plan(world) if "Secret" in line]
    assert cold, "a cold run drops the previous key"
    assert [line for line in wc.lines(wc.run(world)) if "Secret" in line] == cold
    core = client.CoreV1Api(world["api"].client)
    keys = {s.metadata.name: sorted(s.data or {}) for s in core.list_namespaced_secret(world["namespace"]).items
            if s.metadata.name.endswith("rndc-key")}
    assert keys and not any("previous-secret" in v for v in keys.values()), keys


def test_the_agents_namespace_is_created_once(world: dict[str, Any], tmp_path: Any) -> None:
    agent_ns = f"recalled-agent-{uuid.uuid4().hex[:6]}"
    memory = Memory()

    def run(mem: Memory, **kw: Any) -> Any:
        return agentrun.sync_git(GitSource(world["remote"].url, world["cache"]), store=FileStore(tmp_path / "state"),
                                 kube_api=world["api"], endpoints=world["endpoints"], agent_namespace=agent_ns,
                                 memory=mem, create_namespaces=True, **kw)

    try:
        first = run(memory)
        assert first.outcome == "applied" and first.plan.namespaces == [agent_ns], (first.outcome, first.message)
        for i in range(2):
            wc.commit(world, {wc.WEB: world["files"][wc.WEB].replace("192.0.2.12", f"192.0.2.{60 + i}")})
            cold = run(Memory(), dry_run=True)
            push = run(memory)
            assert push.outcome == "applied", (push.outcome, push.message)
            assert push.plan.namespaces == cold.plan.namespaces == [], (push.plan.namespaces, cold.plan.namespaces)
    finally:
        client.CoreV1Api(world["api"].client).delete_namespace(agent_ns)


def test_a_same_named_object_its_owner_removed_is_created_on_the_next_push(world: dict[str, Any]) -> None:
    core, ns = client.CoreV1Api(world["api"].client), world["namespace"]
    planned = wc.run(world, Memory(), dry_run=True)
    sa = next(c.target for c in planned.plan.changes if getattr(c.target, "kind", "") == "ServiceAccount")
    core.create_namespaced_service_account(ns, {"metadata": {"name": sa.name, "labels": {"owner": "them"}}})
    first = wc.run(world)
    assert first.outcome == "partial" and first.plan.conflicts
    core.delete_namespaced_service_account(sa.name, ns)  # its owner removes it
    wc.commit(world, {wc.WEB: world["files"][wc.WEB].replace("192.0.2.12", "192.0.2.91")})
    cold = [line for line in wc.cold_plan(world) if "ServiceAccount" in line]
    push = wc.run(world)
    assert [line for line in wc.lines(push) if "ServiceAccount" in line] == cold and cold, cold
    assert push.outcome == "applied", (push.outcome, push.message)
    assert core.read_namespaced_service_account(sa.name, ns).metadata.labels.get("owner") != "them"


def test_an_object_held_by_a_finalizer_is_created_again_once_it_is_gone(world: dict[str, Any]) -> None:
    """A pruned record CR held by another controller's finalizer; the record back in Git while it
    terminates: the run says so (partial, why), and the first run after it is gone creates it."""
    crs, ns = client.CustomObjectsApi(world["api"].client), world["namespace"]
    group = ("bindy.firestoned.io", "v1beta1", ns, "arecords", "www")
    assert wc.run(world, policy=PRUNE).outcome == "applied"
    crs.patch_namespaced_custom_object(*group, {"metadata": {"finalizers": ["example.com/hold"]}})
    web = world["files"][wc.WEB]
    wc.commit(world, {wc.WEB: wc.docs_without(web, "www")})
    assert wc.run(world, policy=PRUNE).outcome == "applied"
    assert crs.get_namespaced_custom_object(*group)["metadata"].get("deletionTimestamp")
    wc.commit(world, {wc.WEB: web})  # wanted again while the old object terminates
    held = wc.run(world, policy=PRUNE)
    why = list(held.kube.failed.values()) if held.kube else []
    assert held.outcome == "partial" and any("being deleted" in w for w in why), (held.outcome, held.message, why)
    crs.patch_namespaced_custom_object(*group, {"metadata": {"finalizers": None}})  # the other controller is done
    until("the held record gone", lambda: "www" not in _arecords(world), timeout=30)
    again = wc.run(world, policy=PRUNE)
    assert again.outcome == "applied", (again.outcome, again.message)
    assert "www" in _arecords(world)
    assert not crs.get_namespaced_custom_object(*group)["metadata"].get("deletionTimestamp")
    assert wc.cold_plan(world, policy=PRUNE) == []
