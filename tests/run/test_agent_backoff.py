"""The agent's worker after a run that could not proceed (agent/run/agent.py): a push's run that stops before
planning (remote unreachable, suspended, a lagging server) does not make the worker run again at once and
forever after a cut reconcile, and a long streak of retryable runs keeps its back-off (no overflow)."""

from __future__ import annotations

import pathlib
import threading
from typing import Any

import pytest

from agent.plan.changes import Plan
from agent.run import agent as run_agent
from agent.run import orchestrator
from agent.run import settings as config
from tests.support.procs import free_port


def _agent(tmp_path: pathlib.Path) -> run_agent.Agent:
    settings = config.load_settings({"repo": str(tmp_path / "gone"), "cache": str(tmp_path / "cache"),
                                     "listen": f"127.0.0.1:{free_port()}", "interval": 3600}, environ={})
    return run_agent.Agent(settings)


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
    The cut is played by a stand-in that does what orchestrator `_cut` does (sets `reconcile_pending`,
    returns "preempted"); every later run is the real orchestrator against a repository that is gone
    (for "suspended", with the store's suspend mark set, as `bindy-agent suspend` does); for "partial",
    a stand-in for the push's zones-only run that a lagging server left partial (whose "resume" is that
    run again: tests/integration/test_pushes_first_cut_reconcile.py) - retryable, so it should wait the back-off.
    Fix: trigger "resume" only after a run that applied (or partially applied) the push's zones, i.e.
    `run.outcome in ("applied", "partial")` with the flag still set; let every other outcome take the
    ordinary path (retry back-off / the schedule), or clear the flag when the resume cannot proceed."""
    agent = _agent(tmp_path)
    real = orchestrator.run
    calls: list[str] = []

    def run(*args: Any, **kwargs: Any) -> orchestrator.RunOutcome:
        memory = kwargs["memory"]
        calls.append(kwargs.get("run_id", ""))
        if len(calls) == 1:  # the start-up reconcile, cut for a webhook
            memory.reconcile_pending = True
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


def test_a_long_streak_of_retryable_runs_keeps_the_back_off(tmp_path: pathlib.Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """HOLE (found through the spin above, which gets there in under a second; without it, a server
    that stays unreachable for ~1,000 intervals - 17 hours at a 60 s interval): `_retry` computes
    `RETRY_FIRST * 2 ** self.backoff` before capping it at the interval, and `self.backoff` only grows,
    so after 1,024 retryable runs in a row it raises OverflowError. From then on every retryable run
    ends in "sync run failed" with a traceback (counted as a failed run in the metrics), and no
    retry is scheduled, until a run needs none.
    Fix: stop increasing `backoff` once the delay reached the interval (or compute it with min() on the
    exponent: `min(interval, RETRY_FIRST * 2 ** min(backoff, 32))`)."""
    agent = _agent(tmp_path)
    delays: list[float] = []

    class Timer:
        def __init__(self, delay: float, *_: Any) -> None:
            delays.append(delay)

        def start(self) -> None:
            pass

    monkeypatch.setattr(run_agent.threading, "Timer", Timer)
    failing = orchestrator.RunOutcome("r", None, "unreachable", retryable=True)
    for _ in range(1100):
        agent._retry(failing)
    assert len(delays) == 1100 and delays[-1] == 3600
