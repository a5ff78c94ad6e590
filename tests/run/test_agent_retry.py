"""A run that may succeed later (its errors are retryable: a pod not ready yet, a server not
reachable) is run again soon, with a doubling back-off, instead of at the next tick of the interval
(issue 24: retry uses the errors' `retryable`; issue 25: the first sync after an install otherwise
waits a whole interval for the pods that were starting)."""

from __future__ import annotations

import pathlib
import threading
import time
from typing import Any

import pytest

from agent.run import agent as run_agent
from agent.run import orchestrator
from tests.support.agentrun import idle_agent
from tests.support.procs import free_port


@pytest.fixture
def delays(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The delay of every retry the agent schedules (its timers are recorded, never started)."""
    scheduled: list[float] = []

    class Timer:
        def __init__(self, delay: float, *_: Any) -> None:
            scheduled.append(delay)

        def start(self) -> None:
            pass

    monkeypatch.setattr(run_agent.threading, "Timer", Timer)
    return scheduled


@pytest.mark.parametrize("outcomes, runs", [((True, True, False), 3), ((False,), 1)])
def test_a_retryable_run_runs_again_soon_until_one_needs_no_retry(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, outcomes: tuple[bool, ...], runs: int) -> None:
    monkeypatch.setattr(run_agent, "RETRY_FIRST", 0.1)
    agent = idle_agent(tmp_path)
    seen: list[str] = []
    done = threading.Event()

    def run_once(why: str = "schedule") -> Any:
        seen.append(why)
        retryable = outcomes[min(len(seen), len(outcomes)) - 1]
        if len(seen) >= len(outcomes):
            done.set()
        return orchestrator.RunOutcome("r", None, "partial" if retryable else "applied", retryable=retryable)

    agent.run_once = run_once  # type: ignore[assignment,method-assign]
    agent.start()  # the start trigger; the interval (an hour) never ticks in this test
    try:
        assert done.wait(5)
        time.sleep(0.8)  # a retry would come within 0.1-0.4 s
        assert seen == ["start", *["retry"] * (runs - 1)]
        assert agent.backoff == 0
    finally:
        agent.stop()


def test_the_back_off_doubles_and_stops_at_the_interval(tmp_path: pathlib.Path, delays: list[float]) -> None:
    agent = idle_agent(tmp_path)
    failing = orchestrator.RunOutcome("r", None, "unreachable", retryable=True)
    for _ in range(12):
        agent._retry(failing)
    assert delays[:4] == [5, 10, 20, 40] and delays[-1] == 3600 and max(delays) == 3600
    agent._retry(orchestrator.RunOutcome("r", None, "applied"))
    assert agent.backoff == 0


def test_a_run_whose_servers_cannot_be_reached_is_retryable(tmp_path: pathlib.Path) -> None:
    from agent.clients.endpoints import Endpoint
    from tests.conftest import SAMPLE
    from tests.support import agentrun

    closed = free_port()  # nothing listens there: as a pod that is not ready yet
    ends = {i: Endpoint(i, "127.0.0.1", closed, f"http://127.0.0.1:{closed}")
            for i in ("dns-system/dns-primary-0", "dns-system/dns-secondary-0")}
    run = agentrun.sync_dir(SAMPLE, state=tmp_path / "state", endpoints=ends, deadline=20)
    assert run.outcome in ("partial", "unreachable") and run.retryable, (run.outcome, run.message)


def test_a_long_streak_of_retryable_runs_keeps_the_back_off(tmp_path: pathlib.Path, delays: list[float]) -> None:
    """1,100 retryable runs in a row (a server unreachable for ~1,000 intervals): the delay stays at
    the interval; the back-off does not grow past it (2 ** 1024 would overflow and end every later
    retryable run in a traceback, with no retry scheduled)."""
    agent = idle_agent(tmp_path)
    failing = orchestrator.RunOutcome("r", None, "unreachable", retryable=True)
    for _ in range(1100):
        agent._retry(failing)
    assert len(delays) == 1100 and delays[-1] == 3600
