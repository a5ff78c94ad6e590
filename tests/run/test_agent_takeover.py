"""A standby that becomes the leader (agent/run/agent.py): the take-over runs on the worker, so a follow in
flight when the Lease is taken cannot make the new leader trust a list of the cluster made before the old
leader's last write; a leader that lost the Lease and took it again without following takes over too."""

from __future__ import annotations

import pathlib
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from agent.clients.statestore import FileStore
from agent.model.observed import KubeObserved
from agent.model.ownership import RunState
from agent.run import follow
from agent.run.memory import Memory
from agent.run.planner import Options, Targets
from tests.support.standby import _planned, _Source


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


def test_a_follow_in_flight_when_the_lease_is_taken_does_not_make_the_new_leader_trust_its_list(
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


def test_a_leader_that_lost_and_took_the_lease_again_without_following_takes_over(
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
