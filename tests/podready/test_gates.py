"""A rollout (key rotation, `kubectl rollout restart`, a drain, a scale-up) leaves no serving gap
(issue 26): a generated pod is Ready only once the agent gave it every zone of its instance.

The rendered pod carries the zones-loaded readiness gate and its Deployment rolls a new pod first; a
pod that runs and waits for its gate is observed as a server of its instance (written like any pod);
after the DNS step its gate opens when every zone was written to it and it answers each one's SOA,
and stays closed, saying why, when one failed; a new waiting pod asks for a run at once, and a run
while a pod waits does not stop at an unchanged head.
"""

from __future__ import annotations

import pathlib
import shutil
import time
from typing import Any

from agent.clients import endpoints as endpoint_map
from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint, Server
from agent.desired import hierarchy
from agent.desired.hierarchy import Desired
from agent.model import names, podreadiness
from agent.model.key import ObjectKey
from agent.model.ownership import RunState
from agent.observe import dnsobserve, instancereach
from agent.outcome import pods as pod_problems
from agent.podready import condition as podcondition
from agent.podready import gates as podgates
from agent.podready import step as podstep
from agent.podready import watch as podwatch
from agent.reconcile.dnsresult import DnsResult, ZoneResult
from agent.run import decide, memorize, orchestrator, throttle
from agent.run.decision import Head, Now, Why
from agent.run.memory import Memory
from agent.run.planner import Options
from tests.conftest import SAMPLE, load_dir

PRIMARY = "dns-system/dns-primary-0"
GATE = names.ZONES_LOADED_CONDITION


def _desired(tmp_path: pathlib.Path) -> Desired:
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    return hierarchy.build(load_dir(root))


def _pod(name: str, ip: str, *, containers: str = "True", gate: str | None = None, gated: bool = True,
         deleting: bool = False, ready: str = "False") -> dict[str, Any]:
    conditions = [{"type": "ContainersReady", "status": containers}, {"type": "Ready", "status": ready}]
    if gate is not None:
        conditions.append({"type": GATE, "status": gate})
    meta: dict[str, Any] = {"name": name, "namespace": "dns-system", "uid": f"uid-{name}"}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-26T00:00:00Z"
    return {"metadata": meta, "spec": {"readinessGates": [{"conditionType": GATE}] if gated else []},
            "status": {"podIP": ip, "conditions": conditions}}


# -- the rendered pod ------------------------------------------------------------------------------
def test_the_generated_pods_are_ready_only_through_the_zones_loaded_gate_and_roll_a_new_pod_first(
        tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    deployment = desired.object("Deployment", "dns-system", "dns-primary-0")
    assert deployment is not None
    spec = deployment.body["spec"]
    assert spec["template"]["spec"]["readinessGates"] == [{"conditionType": "bindy.firestoned.io/zones-loaded"}]
    # the old pod goes only once a new one is Ready (with one replica the default would be the same;
    # with four, 25% would let one go before its replacement has its zones)
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
    # an old pod's named keeps answering while kube-proxy stops sending it queries
    bind9 = next(c for c in spec["template"]["spec"]["containers"] if c["name"] == "bind9")
    assert bind9["lifecycle"] == {"preStop": {"exec": {"command": ["sleep", "5"]}}}


# -- which pods wait -------------------------------------------------------------------------------
def test_a_pod_waits_while_it_runs_with_ready_containers_and_its_gate_is_not_true() -> None:
    assert podreadiness.is_waiting(_pod("new", "10.1.0.9"))  # no condition yet: the agent has not seen it
    assert podreadiness.is_waiting(_pod("failed", "10.1.0.9", gate="False"))  # its zones failed last time
    assert not podreadiness.is_waiting(_pod("open", "10.1.0.9", gate="True", ready="True"))
    assert not podreadiness.is_waiting(_pod("starting", "10.1.0.9", containers="False"))  # named not up: not written
    assert not podreadiness.is_waiting(_pod("leaving", "10.1.0.9", deleting=True))
    assert not podreadiness.is_waiting(_pod("old", "10.1.0.9", gated=False))  # a pod of before the gate: Ready as it is
    assert podreadiness.waiting_of([_pod("a", "10.1.0.8"), _pod("b", "10.1.0.9", gate="True")]) == {"10.1.0.8": "a"}


class _Api:
    """Endpoints with one ready and one not-ready pod; the instance's pods; status patches recorded."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = pods
        self.patches: list[tuple[str, str, dict[str, Any]]] = []
        self.lists = 0

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        if kind != "Endpoints" or name != "dns-primary-0":
            return None
        not_ready = [{"ip": p["status"]["podIP"], "targetRef": {"kind": "Pod", "name": p["metadata"]["name"]}}
                     for p in self.pods if p["metadata"]["name"] != "ready"]
        return {"subsets": [{"addresses": [{"ip": "10.1.0.4", "targetRef": {"kind": "Pod", "name": "ready"}}],
                             "notReadyAddresses": not_ready,
                             "ports": [{"name": "dns-tcp", "port": 5353}, {"name": "http", "port": 8080}]}]}

    def list(self, kind: str, *, label_selector: str | None = None, namespace: str | None = None) -> list[Any]:
        self.lists += 1
        assert kind == "Pod" and label_selector is not None and "app.kubernetes.io/name=bind9" in label_selector
        return self.pods

    def patch_status(self, kind: str, namespace: str | None, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        self.patches.append((f"{namespace}/{name}", kind, patch))
        return {}


def test_a_waiting_pod_is_a_server_of_its_instance_and_a_starting_one_is_not(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    api = _Api([_pod("ready", "10.1.0.4", gate="True", ready="True"), _pod("new", "10.1.0.7"),
                _pod("starting", "10.1.0.8", containers="False")])
    eps = instancereach.from_cluster(api, desired, token_file=tmp_path / "none", agent_addresses=[])  # type: ignore[arg-type]
    primary = eps[PRIMARY]
    assert [(s.name, s.waiting) for s in primary.servers] == [("10.1.0.4", ""), ("10.1.0.7", "new")]
    assert sorted(endpoint_map.by_server({PRIMARY: primary})) == [f"{PRIMARY}@10.1.0.4", f"{PRIMARY}@10.1.0.7"]
    # its secondaries transfer from it, and a waiting secondary is allowed to transfer (per-zone ACLs)
    assert primary.transfer_hosts() == ["10.1.0.4", "10.1.0.7"]
    assert podgates.waiting(eps) == {f"{PRIMARY}@10.1.0.7": "new"}


def test_with_every_pod_ready_no_pod_is_listed(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    api = _Api([_pod("ready", "10.1.0.4", gate="True", ready="True")])
    eps = instancereach.from_cluster(api, desired, token_file=tmp_path / "none", agent_addresses=[])  # type: ignore[arg-type]
    assert api.lists == 0 and not podgates.waiting(eps)


# -- the gate after the DNS step -------------------------------------------------------------------
def _world(desired: Desired) -> dict[str, Endpoint]:
    servers = (Server("10.1.0.4", "10.1.0.4", 5353, "http://a"), Server("10.1.0.7", "10.1.0.7", 5353, "http://b",
                                                                      waiting="new"))
    return {PRIMARY: Endpoint(PRIMARY, "svc", 53, "http://svc", servers=servers)}


def _zones_on_primary(desired: Desired) -> list[str]:
    return sorted(z.name for z in desired.zones if any(f"{k.namespace}/{k.name}" == PRIMARY for k in z.instances))


def _result(desired: Desired, failed: str | None = None) -> DnsResult:
    out = []
    for name in _zones_on_primary(desired):
        zr = ZoneResult(None, name)
        zr.servers[f"{PRIMARY}@10.1.0.4"] = ("Configured", "primary zone configured")
        zr.servers[f"{PRIMARY}@10.1.0.7"] = (("Failed", "zone API: 500 boom") if name == failed
                                              else ("Configured", "primary zone configured"))
        out.append(zr)
    return DnsResult(out, [])


def test_the_status_patch_sets_only_the_zones_loaded_condition() -> None:
    body = podcondition.condition_patch(loaded=True, why="", now="2026-11-26T10:00:00Z")
    assert body == {"status": {"conditions": [{
        "type": "bindy.firestoned.io/zones-loaded", "status": "True", "reason": "ZonesLoaded",
        "message": "every zone of its instance is served by this pod", "lastTransitionTime": "2026-11-26T10:00:00Z"}]}}
    closed = podcondition.condition_patch(loaded=False, why="example.com: zone API: 500", now="t")
    assert closed["status"]["conditions"][0]["status"] == "False"  # type: ignore[index]
    assert closed["status"]["conditions"][0]["message"] == "example.com: zone API: 500"  # type: ignore[index]


def test_a_run_that_wrote_every_zone_to_a_waiting_pod_opens_its_gate(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    zones = _zones_on_primary(desired)
    api = _Api([])
    asked: list[tuple[str, list[str]]] = []

    def serials(endpoint: Endpoint, names_: list[str], *, timeout: float) -> dict[str, int | None]:
        asked.append((endpoint.instance, list(names_)))
        return dict.fromkeys(names_, 7)

    done = podstep.after_dns(api, desired, _world(desired), _result(desired), wait=1,  # type: ignore[arg-type]
                             deadline=Deadline(10), serials=serials)
    assert done.opened == ["dns-system/new"] and not done.closed
    assert asked == [(f"{PRIMARY}@10.1.0.7", zones)]  # the waiting pod itself answers every zone's SOA
    (where, kind, patch), = api.patches
    assert (where, kind) == ("dns-system/new", "Pod")
    assert patch["status"]["conditions"][0]["status"] == "True"


def test_a_waiting_pod_whose_zone_failed_stays_not_ready_and_says_why(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    failed = _zones_on_primary(desired)[0]
    api = _Api([])
    done = podstep.after_dns(api, desired, _world(desired), _result(desired, failed=failed), wait=1,  # type: ignore[arg-type]
                             deadline=Deadline(10), serials=lambda *a, **k: {})
    assert not done.opened
    why = done.closed["dns-system/new"]
    assert why == f"{failed.rstrip('.')}: zone API: 500 boom", why
    condition = api.patches[0][2]["status"]["conditions"][0]
    assert (condition["status"], condition["reason"]) == ("False", "ZonesNotLoaded") and condition["message"] == why
    # the instance's status says it, as it says why a pod does not start
    pod = _pod("new", "10.1.0.7")
    pod["status"]["conditions"].append({"type": GATE, **{k: condition[k] for k in ("status", "reason", "message")}})
    assert pod_problems.of_pod(pod) == ("ZonesNotLoaded", why)


def test_a_secondary_pod_that_has_not_transferred_its_zones_yet_is_not_opened(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    zones = _zones_on_primary(desired)
    api = _Api([])
    done = podstep.after_dns(api, desired, _world(desired), _result(desired), wait=0.3,  # type: ignore[arg-type]
                             deadline=Deadline(10), serials=lambda e, n, **k: {z: None for z in n})
    assert not done.opened
    assert "not answered by the pod yet" in done.closed["dns-system/new"]
    assert api.patches[0][2]["status"]["conditions"][0]["status"] == "False"
    assert len(zones) >= 1


def test_no_waiting_pod_no_patch(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    eps = {PRIMARY: Endpoint(PRIMARY, "svc", 53, "http://svc", servers=(Server("10.1.0.4", "10.1.0.4", 5353, "x"),))}
    api = _Api([])
    done = podstep.after_dns(api, desired, eps, _result(desired), wait=1, deadline=Deadline(10))  # type: ignore[arg-type]
    assert not (done.opened or done.closed or done.errors)
    assert not api.patches


def test_a_run_observes_the_zones_of_an_instance_with_a_waiting_pod_even_when_nothing_changed_in_them(
        tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    assert dnsobserve.zones_of_waiting(desired, _world(desired)) == set(_zones_on_primary(desired))


# -- asking for a run ------------------------------------------------------------------------------
class _Pods:
    def __init__(self) -> None:
        self.pods: list[dict[str, Any]] = []
        self.deployments: list[dict[str, Any]] = []

    def list(self, kind: str, *, label_selector: str | None = None, namespace: str | None = None) -> list[Any]:
        assert label_selector == "app.kubernetes.io/name=bind9,app.kubernetes.io/managed-by=bindy-agent"
        return self.pods if kind == "Pod" else self.deployments


def _deployment(name: str, want: int, ready: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "dns", "generation": 2}, "spec": {"replicas": want},
            "status": {"observedGeneration": 2, "readyReplicas": ready, "updatedReplicas": want,
                       "availableReplicas": ready}}


def _seen(queue: throttle.Triggers, memory: Memory) -> frozenset[ObjectKey]:
    """What the sync worker hands the memory before a run (agent/run/agent.py)."""
    memorize.pods_seen(memory, *queue.pods_seen())
    return memory.pods_moved


def _unchanged(memory: Memory, state: RunState, head: str) -> bool:
    decision = decide.decide(state, memory.phase(), Head(head), Options(), Now(time.time(), time.monotonic()))
    return decision.why is Why.UNCHANGED


def test_pods_that_become_ready_or_go_ask_for_a_run_that_writes_their_instances_status() -> None:
    api, memory, queue = _Pods(), Memory(), throttle.Triggers(0)
    triggers: list[str] = []
    watch = podwatch.PodWatch(api, trigger=triggers.append, waiting=lambda w: None,  # type: ignore[arg-type]
                              leading=lambda: True, moved=queue.pods_moved)
    api.deployments = [_deployment("dns-primary-0", 1, 0), _deployment("dns-secondary-0", 1, 1)]
    assert not watch.look() and not triggers  # the first look takes note (a new leader computes every status)
    assert not watch.look() and not _seen(queue, memory)
    api.deployments[0] = _deployment("dns-primary-0", 1, 1)  # its pod became Ready (the agent opened its gate)
    assert watch.look() and triggers == ["pods"]
    assert _seen(queue, memory) == {ObjectKey("Bind9Instance", "dns", "dns-primary-0")}
    memorize.statuses_computed(memory, {}, set(), written=False, moved=memory.pods_moved)  # the run wrote its status
    api.deployments[1] = _deployment("dns-secondary-0", 0, 0)  # scaled to 0
    assert watch.look() and _seen(queue, memory) == {ObjectKey("Bind9Instance", "dns", "dns-secondary-0")}
    api.deployments = api.deployments[:1]  # gone
    assert watch.look() and len(triggers) == 3
    assert not watch.look() and len(triggers) == 3  # nothing moved since


def test_a_run_while_pods_moved_does_not_stop_at_an_unchanged_head() -> None:
    memory = Memory()
    memory.files.loaded = True
    state = RunState("abc", "abc", "applied", time.time(), message="applied abc")
    assert _unchanged(memory, state, "abc")
    memorize.pods_seen(memory, None, frozenset({ObjectKey("Bind9Instance", "dns", "dns-primary-0")}))
    assert not _unchanged(memory, state, "abc")  # its status is written by this run


def test_a_new_waiting_pod_asks_for_a_run_at_once_and_again_later_while_it_waits() -> None:
    api, now = _Pods(), [100.0]
    triggers: list[str] = []
    memory, queue = Memory(), throttle.Triggers(0)
    watch = podwatch.PodWatch(api, trigger=triggers.append,  # type: ignore[arg-type]
                              waiting=queue.pods_waiting, leading=lambda: True, clock=lambda: now[0])
    assert not watch.look() and not triggers and not _seen(queue, memory) and not memory.pods_waiting
    api.pods = [_pod("new", "10.1.0.7")]
    assert watch.look() and triggers == ["pods"] and not _seen(queue, memory) and memory.pods_waiting
    now[0] += podwatch.POLL
    assert not watch.look()  # asked already; the run is on its way
    now[0] += podwatch.RETRY_FIRST
    assert watch.look() and triggers == ["pods", "pods"]  # still waiting (its zones failed): asked again
    api.pods = [_pod("new", "10.1.0.7", gate="True", ready="True")]
    assert not watch.look() and not _seen(queue, memory) and not memory.pods_waiting
    assert not _seen(queue, memory) and not memory.pods_waiting  # not looked at since: as last seen


def test_a_standby_does_not_ask() -> None:
    api = _Pods()
    api.pods = [_pod("new", "10.1.0.7")]
    triggers: list[str] = []
    watch = podwatch.PodWatch(api, trigger=triggers.append, waiting=lambda w: None,  # type: ignore[arg-type]
                              leading=lambda: False)
    assert not watch.look() and not triggers


def test_a_run_while_a_pod_waits_does_not_stop_at_an_unchanged_head() -> None:
    memory = Memory()
    memory.files.loaded = True  # not a fresh process
    state = RunState("abc", "abc", "applied", time.time(), message="applied abc")
    assert _unchanged(memory, state, "abc")  # a scheduled run with nothing new stops there
    memorize.pods_seen(memory, True, frozenset())
    assert not _unchanged(memory, state, "abc")  # a new pod waits for its zones: this run gives them


def test_pods_that_moved_while_the_head_is_rejected_get_their_statuses_from_the_revision_that_serves() -> None:
    from tests.support.runsource import _Source

    memory = Memory()
    memory.files.loaded = True
    memory.served_at = time.monotonic()  # no resync is due
    memorize.pods_seen(memory, None, frozenset({ObjectKey("Bind9Instance", "dns", "dns-primary-0")}))
    source = _Source()
    run = orchestrator._Run(source, None, Options(resync_after=3600), "r1", memory)  # type: ignore[arg-type]
    run.state = RunState("a" * 40, "b" * 40, "rejected", time.time() - 60, message="rejected")
    assert run._decide(Head("b" * 40)).why is Why.REPAIR_FOR_PODS
    run._snapshot("b" * 40)
    assert source.read == ["at aaaa"] and run.repairing  # not the rejected head again
