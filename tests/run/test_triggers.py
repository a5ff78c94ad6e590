"""The triggers of a run as one enumeration: its values are the words the agent passes to its worker
today, and each one's label is the word operators read (start line, `trigger` metric label, Events)."""

from __future__ import annotations

import ast
import pathlib

from agent.podready import watch as podwatch
from agent.run import decide, runtrace, throttle
from agent.run.decision import Phase, Standing
from agent.run.triggers import LABELS, Trigger

AGENT = pathlib.Path(__file__).resolve().parents[2] / "agent"


def _requested() -> set[str]:
    """Every string literal the agent passes to `trigger(...)`, `request(...)`, `run_once(...)`, to a
    Timer or a scheduled job calling `trigger` (`args=[...]`)."""
    words: set[str] = set()
    paths = [*(AGENT / "run").rglob("*.py"), *(AGENT / "podready").rglob("*.py")]  # the agent's loop: clients'
    for path in paths:  # `request("GET", ...)` are HTTP
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            args = list(node.args)
            if name == "Timer" and len(args) == 3 and isinstance(args[2], ast.List):
                args = list(args[2].elts)
            elif name == "add_job":
                args = [e for k in node.keywords if k.arg == "args" and isinstance(k.value, ast.List)
                        for e in k.value.elts]
            elif name not in ("trigger", "request", "run_once", "start"):
                continue
            words |= {a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return words


def test_every_trigger_the_agent_asks_for_is_a_trigger_value() -> None:
    owed = Phase(Standing.WARM, keeps=True, owed=True)  # a cut reconcile asks for its push, then itself
    follow_ups = {decide.next_phase(owed, decide.RunEnded(None, outcome))[1] for outcome in ("preempted", "applied")}
    asked = _requested() | {throttle.WEBHOOK, podwatch.TRIGGER} | {t.value for t in follow_ups if t is not None}
    assert asked == {t.value for t in Trigger}


def test_each_label_is_the_word_operators_read_today() -> None:
    assert {t.value: t.label for t in Trigger} == runtrace.TRIGGERS
    assert set(LABELS) == set(Trigger)
    assert Trigger.RESUME.label == "resync" and Trigger.PUSH.label == "webhook"


def test_a_trigger_is_its_string() -> None:
    assert Trigger.WEBHOOK == throttle.WEBHOOK and Trigger.PODS == podwatch.TRIGGER
    assert runtrace.TRIGGERS.get(Trigger.LEADERSHIP) == "start-up"
