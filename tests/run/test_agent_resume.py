"""The agent's worker after a run that could not proceed (agent/run/agent.py): a push's run that stops before
planning (remote unreachable, suspended, a lagging server) does not make the worker resume the cut
reconcile at once and forever."""

from __future__ import annotations

import pathlib
import threading
from typing import Any

import pytest

from agent.plan.changes import Plan
from agent.run import agent as run_agent
from agent.run import memorize, orchestrator
from tests.support.agentrun import idle_agent


@pytest.mark.parametrize("then", ["unreachable", "suspended", "partial"])
def test_a_push_run_that_cannot_run_does_not_spin_the_worker(tmp_path: pathlib.Path,
                                                               monkeypatch: pytest.MonkeyPatch, then: str) -> None:
    """HOLE: once a reconcile was cut for a push (`memory.reconcile_pending`), `run_once` triggers
    "resume" after EVERY run while the flag stays set - and only a run that plans the whole revision
    clears it. A push's run that stops before planning (the remote went away: "unreachable"; an
    operator ran `bindy-agent suspend`: "suspended"; another sync holds the lock: "busy") leaves it
    set, so the worker re-runs at once, forever, with no back-off: `git ls-remote` (and a read of the
    state ConfigMap) hundreds of times a second against a remote that is down, or against the API
    server of a suspended agent, until the condition ends. The retry back-off (5 s, doubling) and
    suspension are both defeated.
    The cut is played by a stand-in that does what orchestrator `_cut` does (owes a reconcile,
    returns "preempted"); every later run is the real orchestrator against a repository that is gone
    (for "suspended", with the store's suspend mark set, as `bindy-agent suspend` does); for "partial",
    a stand-in for the push's zones-only run that a lagging server left partial (whose "resume" is that
    run again: tests/integration/test_pushes_first_cut_reconcile.py) - retryable, so it should wait the back-off.
    Fix: trigger "resume" only after a run that applied (or partially applied) the push's zones, i.e.
    `run.outcome in ("applied", "partial")` with the flag still set; let every other outcome take the
    ordinary path (retry back-off / the schedule), or clear the flag when the resume cannot proceed."""
    agent = idle_agent(tmp_path)
    real = orchestrator.run
    calls: list[str] = []

    def run(*args: Any, **kwargs: Any) -> orchestrator.RunOutcome:
        memory = kwargs["memory"]
        calls.append(kwargs.get("run_id", ""))
        if len(calls) == 1:  # the start-up reconcile, cut for a webhook
            memorize.owed(memory, True)  # as the orchestrator's cut does
            return orchestrator.RunOutcome("cut", "a" * 40, "preempted", parsed=True)
        if then == "partial":  # the push's zones-only run, a server lagging (tests/integration/test_pushes_first_cut_reconcile.py)
            return orchestrator.RunOutcome("p", "b" * 40, "partial", parsed=True, retryable=True,
                                           plan=Plan(changes=[], revision="b" * 40))
        return real(*args, **kwargs)

    monkeypatch.setattr(run_agent.runner, "run", run)
    if then == "suspended":
        agent.store.suspend(True)  # `bindy-agent suspend`, right after the cut
    done = threading.Event()
    agent.start()
    try:
        done.wait(2.0)  # the schedule (an hour) never ticks; a retry would come after 5 s at the soonest
    finally:
        agent.stop()
    runs = len(calls)
    assert runs <= 3, (f"{runs} runs in 2 s after a cut whose push's run came back {then!r}: the worker spins "
                       f"(last memory.reconcile_pending={agent.memory.reconcile_pending})")
