"""ADVERSARY S24: holes found in this session's warm standby, leader label and AXFR reopen changes.

Each test names the hole it pins. Tests marked xfail(strict=True) document a hole left open (a proposal
in the adversary's report); the others fail without the fix that came with them."""

from __future__ import annotations

import pathlib
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from agent.clients.statestore import FileStore
from agent.model.observed import KubeObserved, Observed
from agent.model.ownership import RunState
from agent.run import follow, memorize
from agent.run import memory as memory_mod
from agent.run.memory import Memory
from agent.run.planner import Options, Targets


class _Source:
    def __init__(self, tmp: pathlib.Path) -> None:
        self.lock_path = tmp / "lock"

    def bound(self, _remaining: Any) -> None:
        pass

    def snapshot(self) -> Any:
        return SimpleNamespace(revision="a" * 40)


def _planned(kube: KubeObserved) -> Any:
    validated = SimpleNamespace(desired=SimpleNamespace(zones=[]), ok=True)
    return SimpleNamespace(validated=validated, plan=object(), observed=Observed(kube=kube), kube_fast=False,
                           dns_fast=False, error=None)


def test_s24_a_list_made_before_the_old_leaders_last_write_is_not_trusted_on_taking_over(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HOLE: follow stamped `kube_listed` when the follow ended, not when the cluster was listed. The old
    leader writes (and records reconciled_at) while the standby's follow is still planning (AXFRs take
    seconds); the standby then trusts a list older than that write, and the new leader skips a write it
    must make (the revert of the old leader's last write is never applied until the next resync)."""
    monkeypatch.setattr(memory_mod, "CLOCK_SKEW", 0.0)
    store = FileStore(tmp_path / "state")
    stale = KubeObserved({}, set(), set())

    def plan(*_a: Any, **_k: Any) -> Any:  # the standby lists the cluster here ...
        time.sleep(0.01)
        store.save_run(RunState("b" * 40, "b" * 40, "applied", time.time()))  # ... the old leader writes
        time.sleep(0.01)
        return _planned(stale)  # ... and the standby's plan ends later

    monkeypatch.setattr(follow, "plan", plan)
    memory = Memory()
    done = follow.follow(_Source(tmp_path), Targets(store), Options(lock_wait=1), memory)
    assert not done.problem and memory.kube is stale
    memorize.take_over(memory, applied_at=store.load_run().reconciled_at)
    assert not memory.kube_fresh(600, memory.agent_namespace)  # the cluster is read again


class _Elector:
    def __init__(self) -> None:
        self.leader = False
        self.wins = threading.Event()  # the old leader's Lease expired: the next tick takes it

    def tick(self) -> bool:
        self.leader = self.wins.is_set()
        return self.leader


def _agent(tmp_path: pathlib.Path, store: FileStore, elector: _Elector) -> Any:
    """A run_agent.Agent with its worker's and lease thread's collaborators only (no cluster, no server)."""
    from agent.run import agent as run_agent
    from agent.run import throttle

    agent: Any = object.__new__(run_agent.Agent)
    agent.settings = SimpleNamespace(lease_duration=0.03)
    agent.stopping, agent.memory, agent.store, agent.label, agent.elector = threading.Event(), Memory(), store, None, \
        elector
    agent.triggers, agent.backoff, agent.runs = throttle.Triggers(0), 0, 0
    agent.led, agent.terms, agent.taken = True, 0, 0
    agent.warm_since = None  # not followed yet
    agent.built = SimpleNamespace(source=_Source(tmp_path), targets=Targets(store), options=Options(lock_wait=1))
    agent.metrics = SimpleNamespace(follows=SimpleNamespace(labels=lambda _r: SimpleNamespace(inc=lambda: None)))
    agent.fresh = []

    def run_once(_why: str) -> None:  # the new leader's first run: does it trust the cluster it remembers?
        agent.fresh.append(agent.memory.kube_fresh(600, agent.memory.agent_namespace))
        agent.stopping.set()

    agent.run_once = run_once
    return agent


def _wait(condition: Any) -> None:
    deadline = time.monotonic() + 5
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_s24_a_follow_in_flight_when_the_lease_is_taken_does_not_make_the_new_leader_trust_its_list(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HOLE: `_take_over` ran on the lease thread while the worker could be in the middle of a follow; the
    follow then wrote its list (made before the old leader's last write) into the memory as fresh, after
    take_over had marked the cluster to be read again. The first leader run trusted it and skipped writes."""
    store = FileStore(tmp_path / "state")
    listed, resume = threading.Event(), threading.Event()
    elector = _Elector()

    def plan(*_a: Any, **_k: Any) -> Any:
        listed.set()
        assert resume.wait(5)
        return _planned(KubeObserved({}, set(), set()))

    monkeypatch.setattr(follow, "plan", plan)
    agent = _agent(tmp_path, store, elector)
    worker = threading.Thread(target=agent._loop, daemon=True)
    worker.start()
    agent.trigger("schedule")  # a standby: it follows
    assert listed.wait(5)  # the standby listed the cluster; then the old leader writes and its Lease expires
    store.save_run(RunState("b" * 40, "b" * 40, "applied", time.time() + 10))
    elect = threading.Thread(target=agent._elect, daemon=True)
    elect.start()
    elector.wins.set()
    _wait(lambda: elector.leader)
    time.sleep(0.1)  # the lease thread saw the new term (before the fix: and took over on its own thread)
    resume.set()  # the follow that was in flight ends
    worker.join(5)
    agent.stopping.set()
    elect.join(5)
    assert agent.fresh == [False]  # the cluster is read in full before the new leader's first run trusts it


def test_s24_a_leader_that_lost_and_took_the_lease_again_without_following_takes_over(
        tmp_path: pathlib.Path) -> None:
    """The fix above must not lose the old behaviour: a leader that lost the Lease (a partition) and took
    it again with no follow in between trusts nothing another replica may have written meanwhile."""
    store = FileStore(tmp_path / "state")
    elector = _Elector()
    agent = _agent(tmp_path, store, elector)
    agent.memory.kube, agent.memory.kube_at = KubeObserved({}, set(), set()), time.monotonic()
    agent.memory.kube_listed = time.time()
    store.save_run(RunState("b" * 40, "b" * 40, "applied", time.time() + 10))  # the other replica wrote
    elect = threading.Thread(target=agent._elect, daemon=True)
    elect.start()
    elector.wins.set()
    _wait(lambda: agent.terms == 1)
    worker = threading.Thread(target=agent._loop, daemon=True)
    worker.start()
    worker.join(5)
    agent.stopping.set()
    elect.join(5)
    assert agent.fresh == [False]


class _Pods:
    """The agent namespace's pods as the API holds them (labels only), with the calls made."""

    def __init__(self, labels: dict[str, dict[str, str]], *, list_fails: bool = False) -> None:
        self.labels, self.list_fails, self.patches = labels, list_fails, []  # type: list[tuple[str, Any]]

    def list(self, kind: str, *, label_selector: str | None = None, namespace: str | None = None) -> list[Any]:
        from agent.errors import KubeError

        if self.list_fails:
            raise KubeError("pods is forbidden: cannot list", reason="forbidden")
        key, _, value = (label_selector or "").partition("=")
        return [{"metadata": {"name": n, "namespace": namespace, "labels": dict(lb)}}
                for n, lb in self.labels.items() if not key or lb.get(key) == value]

    def merge_patch(self, kind: str, namespace: str | None, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        self.patches.append((name, patch))
        for k, v in patch["metadata"]["labels"].items():
            if v is None:
                self.labels[name].pop(k, None)
            else:
                self.labels[name][k] = v
        return {}


def test_s24_a_new_leader_takes_the_label_off_a_pod_that_kept_it() -> None:
    """HOLE: only a replica removes its own label. An old leader that cannot (its node partitioned, its
    container in CrashLoopBackOff before `start`, SIGKILL) keeps `bindy.firestoned.io/leader=true`, and
    the webhook Service (publishNotReadyAddresses: true, so not-ready and terminating pods stay in its
    endpoints) sends part of the pushes to it: lost, or 503, for as long as that pod exists."""
    from agent.model import names
    from agent.run.leaderlabel import LeaderLabel

    pods = _Pods({"old": {names.LEADER_LABEL: "true"}, "me": {}})
    LeaderLabel(pods, "bindy-agent", "me").follow(True)  # type: ignore[arg-type]
    assert pods.labels == {"old": {}, "me": {names.LEADER_LABEL: "true"}}


def test_s24_a_leader_that_may_not_list_pods_still_labels_itself() -> None:
    from agent.model import names
    from agent.run.leaderlabel import LeaderLabel

    pods = _Pods({"old": {names.LEADER_LABEL: "true"}, "me": {}}, list_fails=True)
    label = LeaderLabel(pods, "bindy-agent", "me")  # type: ignore[arg-type]
    label.follow(True)
    label.follow(True)
    assert pods.labels["me"] == {names.LEADER_LABEL: "true"} and label.marked is True


def test_s24_a_new_leader_reconciles_the_head_the_old_leader_applied() -> None:
    """HOLE: a long-running agent reconciles an unchanged head on its first run (`Memory.blank`: "drift
    made while it was down is repaired"). A standby that followed has loaded the revision, so it was no
    longer blank: the new leader's first run stopped at "already applied; nothing to do" and left what
    changed during the failover (a hand edit, the dead leader's unfinished resync) until resync_after."""
    memory = Memory()
    memory.files.loaded = True  # the standby followed the head (agent/run/follow.py)
    assert not memory.blank
    memorize.take_over(memory, applied_at=0.0)
    assert memory.blank  # decide.unchanged: the first run as the leader reconciles
