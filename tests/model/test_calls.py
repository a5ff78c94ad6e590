"""The targets of the external-call tally as one enumeration: its values are the `target` every
measured client passes today (read from agent/'s source), plus the outgoing posts to forges and alerts."""

from __future__ import annotations

import ast
import pathlib

from agent.model import calls
from agent.model.calls import CallTarget

AGENT = pathlib.Path(__file__).resolve().parents[2] / "agent"


def _measured_targets() -> set[str]:
    found: set[str] = set()
    for path in AGENT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "measured"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                found.add(node.args[0].value)
    return found


def test_every_measured_target_is_a_call_target() -> None:
    measured = _measured_targets()
    assert measured == {t.value for t in CallTarget} - {CallTarget.FORGE, CallTarget.ALERT}
    assert calls.__doc__ is not None
    assert all(f"    {t} " in calls.__doc__ for t in measured)  # the module's table names each


def test_a_call_target_counts_as_its_string() -> None:
    heard: list[str] = []
    stop = calls.listen(lambda target, *_: heard.append(target))
    try:
        calls.measured(CallTarget.AXFR, "axfr")(lambda: None)()
    finally:
        stop()
    assert heard == ["axfr"] and ("axfr", "axfr", "ok") in calls.totals()
