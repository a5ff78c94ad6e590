"""A run while the head is rejected (agent/run/orchestrator.py): a pod waiting for its zones gets the revision
that serves, not the rejected head, and what the agent knows of the servers is kept."""

from __future__ import annotations

import time

from agent.model.ownership import RunState
from agent.run import memorize, orchestrator
from agent.run.decision import Head, Why
from agent.run.memory import Memory
from agent.run.planner import Options
from tests.support.runsource import _Source


def test_a_pod_waiting_for_its_zones_while_the_head_is_rejected_gets_the_revision_that_serves() -> None:
    memory = Memory()
    memorize.pods_seen(memory, True, frozenset())
    memory.served_at = time.monotonic()  # the last resync was just now: none is due
    memory.serials_at = 123.0
    source = _Source()
    run = orchestrator._Run(source, None, Options(resync_after=3600), "r1", memory)  # type: ignore[arg-type]
    run.state = RunState("a" * 40, "b" * 40, "rejected", time.time() - 60, message="rejected")
    assert run._decide(Head("b" * 40)).why is Why.REPAIR_FOR_PODS  # not unchanged, not a resync
    run._snapshot("b" * 40)
    assert source.read == ["at aaaa"] and run.repairing
    assert memory.serials_at == 123.0  # not a resync: what the agent knows of the servers is kept
