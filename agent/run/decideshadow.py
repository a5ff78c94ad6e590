"""Shadow mode of a run's decision: while the orchestrator still picks its path by its own conditions,
it also asks `decide` (agent/run/decide.py); with BINDY_AGENT_DECIDE_SHADOW=1 in the environment, a
path that differs from the decision raises (and is logged), so that tests running the old path prove
the table. Off, nothing is checked. Goes once the orchestrator executes the decision alone."""

from __future__ import annotations

import logging
import os

from agent.run.decision import Decision

log = logging.getLogger(__name__)
ENV = "BINDY_AGENT_DECIDE_SHADOW"


class Mismatch(AssertionError):
    """The run took a path its decision did not name (a bug in one of them)."""


def on() -> bool:
    return os.environ.get(ENV) == "1"


def check(agrees: bool, what: str, decision: Decision | None) -> None:
    """Raises `Mismatch` when shadow mode is on and the path (`what`) disagrees with `decision`."""
    if agrees or not on():
        return
    said = f"{decision.kind}/{decision.why}" if decision is not None else "nothing"
    log.error("decide shadow mismatch: %s; decided %s (%s)", what, said, decision)
    journal = os.environ.get(f"{ENV}_LOG")  # where a test run collects the mismatches of agents it started
    if journal:
        with open(journal, "a", encoding="utf-8") as out:
            out.write(f"{what}; decided {said} ({decision})\n")
    raise Mismatch(f"decide shadow mismatch: {what}; decided {said}")
