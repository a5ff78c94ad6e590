"""The outcome words as one enumeration: its values are exactly the strings the code compares, assigns
and serialises today (read from agent/'s source), so a run outcome, a state record, a note or a
metric label written with it is the same text as before."""

from __future__ import annotations

import ast
import json
import pathlib

from agent.model.outcomes import Outcome
from agent.model.ownership import RunState
from agent.outcome import forge
from agent.run import runtrace

AGENT = pathlib.Path(__file__).resolve().parents[2] / "agent"


def _strings(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _strings(node.body) | _strings(node.orelse)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return set().union(*(_strings(e) for e in node.elts)) if node.elts else set()
    return set()


def _is_outcome(node: ast.AST) -> bool:
    """`x.outcome`, `outcome` or `doc["outcome"]`."""
    return ((isinstance(node, ast.Attribute) and node.attr == "outcome")
            or (isinstance(node, ast.Name) and node.id == "outcome")
            or (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                and node.slice.value == "outcome"))


def _outcome_words() -> dict[str, set[str]]:
    """Every string compared with, assigned to or passed as an outcome in agent/, by file."""
    found: dict[str, set[str]] = {}
    for path in AGENT.rglob("*.py"):
        words: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(_is_outcome(n) for n in (node.left, *node.comparators)):
                for n in (node.left, *node.comparators):
                    words |= _strings(n)
            elif isinstance(node, ast.Assign) and any(_is_outcome(t) for t in node.targets):
                words |= _strings(node.value)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "RunOutcome":
                if len(node.args) >= 3:
                    words |= _strings(node.args[2])
            elif isinstance(node, ast.keyword) and node.arg == "outcome":
                words |= _strings(node.value)
            elif (isinstance(node, ast.AnnAssign) and _is_outcome(node.target)
                  and isinstance(node.annotation, ast.Subscript)):  # outcome: Literal[...]
                words |= _strings(node.annotation.slice)
        if words:
            found[str(path.relative_to(AGENT))] = words
    return found


def test_every_outcome_word_in_the_code_is_an_outcome_value() -> None:
    found = _outcome_words()
    assert len(found) >= 8  # the scan sees the orchestrator, the reports, the forges, the notify, the metrics
    values = {o.value for o in Outcome}
    stray = {path: words - values for path, words in found.items() if words - values}
    assert stray == {}


def test_the_enumeration_invents_no_word() -> None:
    used = set().union(*_outcome_words().values()) | set(forge.STATES["github"]) | set(runtrace.RECONCILED)
    assert {o.value for o in Outcome} == used


def test_an_outcome_is_its_string_in_json_and_in_the_state_record() -> None:
    assert Outcome.IN_SYNC == "in-sync" and f"{Outcome.APPLIED}" == "applied"
    assert json.dumps({"outcome": Outcome.REFUSED}) == json.dumps({"outcome": "refused"})
    written = RunState("a" * 40, "a" * 40, Outcome.APPLIED, 1.0).to_json()
    assert written == RunState("a" * 40, "a" * 40, "applied", 1.0).to_json()
    assert RunState.from_json(written).outcome is not None and RunState.from_json(written).outcome == Outcome.APPLIED


def test_the_forges_states_and_the_reconciled_outcomes_are_outcomes() -> None:
    for states in forge.STATES.values():
        assert set(states) <= set(Outcome)
    assert set(runtrace.RECONCILED) <= set(Outcome)
