"""The run state's writing mark (RunState.writing_at): saved before a run's first Kubernetes write and
cleared by its end; while it is set, no replica trusts a list of the cluster (agent/run/follow.py,
Memory.take_over)."""

from __future__ import annotations

import time

from agent.model.observed import KubeObserved
from agent.model.ownership import RunState
from agent.run import memorize
from agent.run.memory import Memory


def test_the_mark_is_kept_by_the_state_record_and_absent_when_clear() -> None:
    marked = RunState("a" * 40, "b" * 40, "applied", 1000.0, writing_at=1234.5)
    assert RunState.from_json(marked.to_json()).writing_at == 1234.5
    assert "writingAt" not in RunState("a" * 40, reconciled_at=1000.0).to_json()  # earlier versions read it as is
    assert RunState.from_json('{"applied": null, "seen": null, "outcome": null, "reconciledAt": 5}').writing_at == 0


def test_while_a_run_writes_no_list_of_the_cluster_is_trusted_by_a_replica_that_takes_over() -> None:
    for state, trusted in ((RunState(reconciled_at=100.0), True), (RunState(reconciled_at=100.0, writing_at=90.0),
                                                                   False)):
        memory = Memory()
        memory.kube, memory.kube_at, memory.kube_listed = KubeObserved({}, set(), set()), time.monotonic(), 500.0
        memorize.take_over(memory, applied_at=state.wrote_at)
        assert memory.kube_fresh(600, memory.agent_namespace) is trusted, state


def test_before_any_runs_end_was_saved_no_list_of_the_cluster_is_trusted() -> None:
    """A first run that creates the state's namespace cannot save its mark before its first writes:
    a state never saved counts as a run writing (a follower lists again, a new leader reads in full)."""
    assert RunState().wrote_at == float("inf")
    memory = Memory()
    memory.kube, memory.kube_at, memory.kube_listed = KubeObserved({}, set(), set()), time.monotonic(), 500.0
    memorize.take_over(memory, applied_at=RunState().wrote_at)
    assert not memory.kube_fresh(600, memory.agent_namespace)
