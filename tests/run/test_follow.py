"""A standby's follow (agent/run/follow.py) stamps its list of the cluster with the time it was listed, not
the time the follow ended: a write of the old leader in between makes the new leader read the cluster again."""

from __future__ import annotations

import pathlib
import time
from typing import Any

import pytest

from agent.clients.statestore import FileStore
from agent.model.observed import KubeObserved
from agent.model.ownership import RunState
from agent.run import follow, memorize
from agent.run import memory as memory_mod
from agent.run.memory import Memory
from agent.run.planner import Options, Targets
from tests.support.standby import _planned, _Source


def test_a_list_made_before_the_old_leaders_last_write_is_not_trusted_on_taking_over(
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
