"""The targets of the external-call tally as one enumeration: its values are the `target` every
measured client passes (read from agent/'s source), the outgoing posts to forges and alerts included;
a delivery that gives up is an "error" of its target."""

from __future__ import annotations

import ast
import pathlib

from agent.clients import httppost
from agent.model import calls
from agent.model.calls import CallTarget
from tests.support.procs import free_port
from tests.support.recorder import Answer, Recorder

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
    assert measured == {t.value for t in CallTarget}
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


def test_a_commit_status_and_an_alert_are_measured_calls_ok_or_error() -> None:
    """A post that is delivered is an "ok" call of its target, one that gives up an "error"; never raised."""
    heard: list[tuple[str, str, str]] = []
    stop = calls.listen(lambda target, op, result, _: heard.append((target, op, result)))
    quick = httppost.Budget(timeout=2, retries=0)
    try:
        with Recorder(Answer(201), Answer(404)) as rec:
            assert httppost.post(CallTarget.FORGE, "status", rec.url + "/s", body=b"{}", headers={}, budget=quick)
            assert not httppost.post(CallTarget.ALERT, "alert", rec.url + "/a", body=b"{}", headers={}, budget=quick)
        assert not httppost.post(CallTarget.ALERT, "alert", f"http://127.0.0.1:{free_port()}/", body=b"{}", headers={},
                                 budget=quick)  # nothing listens
    finally:
        stop()
    assert heard == [("forge", "post", "ok"), ("alert", "post", "error"), ("alert", "post", "error")]
