"""`bindy-agent run` signs the reports it writes with the key of its settings, and warns at start when it has
none (reports unsigned)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from agent.run import agent as run_agent
from agent.run import settings as config
from tests.support import notesworld
from tests.support.notesworld import KEY, World
from tests.support.procs import free_port, wait_for

world = notesworld.world  # the fixture, shared


def _agent(world: World, **settings: Any) -> run_agent.Agent:
    flags = {"repo": world.remote.url, "cache": str(world.tmp / "run-cache"), "endpoints": str(world.endpoints),
             "state": str(world.tmp / "run-state"), "listen": f"127.0.0.1:{free_port()}", "interval": 3600,
             **settings}
    return run_agent.Agent(config.load_settings(flags, environ={}))


def test_run_signs_with_the_key_from_its_settings(world: World) -> None:
    world.commit("handled by run")
    agent = _agent(world, report_key_file=str(world.key))
    agent.start()  # the start trigger runs once
    try:
        wait_for(lambda: agent.runs == 1, 30)
    finally:
        agent.stop()
    shown = world.report(world.remote.head())
    assert shown.returncode == 0, shown.stdout
    assert shown.stdout.splitlines()[0].startswith(f"bindy-agent: applied {world.remote.head()[:12]}")


def test_run_without_a_key_warns_that_reports_are_unsigned(world: World, caplog: pytest.LogCaptureFixture) -> None:
    agent = _agent(world)
    agent.run_once = lambda: None  # type: ignore[assignment,method-assign,return-value]
    with caplog.at_level(logging.WARNING, logger="agent.run.scheduler"):
        agent.start()
        agent.stop()
    assert any("commit reports are not signed" in r.getMessage() for r in caplog.records)
    keyed = _agent(world, report_key_file=str(world.key))
    keyed.run_once = lambda: None  # type: ignore[assignment,method-assign,return-value]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agent.run.scheduler"):
        keyed.start()
        keyed.stop()
    assert not any("not signed" in r.getMessage() for r in caplog.records)
    assert KEY not in caplog.text
