"""Refusals, conflicts and failures as records: each prints as the text a plan, a report, a note or a
status shows today, and holds as fields what the code parses back out of that text today."""

from __future__ import annotations

import dataclasses

import pytest

from agent.desired.rrsets import RRset
from agent.model.findings import Conflict, Failure, Refusal, RRsetConflict
from agent.plan import rrsetdiff

ZONE = "example.com."


def _foreign_www() -> str:
    """The conflict text rrsetdiff writes for an RRset someone else wrote."""
    want = RRset(ZONE, f"www.{ZONE}", "A", 300, ("192.0.2.1",))
    have = RRset(ZONE, f"www.{ZONE}", "A", 300, ("198.51.100.7",))
    key = (want.name, "A")
    plan = rrsetdiff.rrset_plan(ZONE, {key: want}, {key: have}, managed=set())
    [text] = plan.conflicts
    return text


def test_an_rrset_conflict_prints_as_rrsetdiff_writes_it() -> None:
    text = _foreign_www()
    owner, rtype = text.split(":", 1)[0].split(" ", 1)  # as outcome/status.py reads it back
    found = RRsetConflict(owner, rtype, text.split(": ", 1)[1])
    assert str(found) == text
    assert (found.owner, found.rtype) == (f"www.{ZONE}", "A")


def test_a_zone_conflict_holds_the_subject_the_run_outcome_parses_back() -> None:
    inner = _foreign_www()
    text = f"{ZONE}: {inner}"  # as plan/build.py writes a zone's conflicts
    conflict = Conflict(ZONE, inner)
    assert str(conflict) == text
    assert conflict.subject == text.split(": ", 1)[0]  # run/runoutcome.py's filter of a replanned zone


def test_a_refusal_and_a_failure_print_their_text() -> None:
    refusal = Refusal(ZONE, f"zone {ZONE}: refusing to delete 13 of 15 managed RRsets (87%)")
    assert str(refusal) == refusal.text and f"{refusal}" == refusal.text
    assert str(Refusal(None, "the whole plan")) == "the whole plan"
    assert str(Failure("zone example.com. on dns-primary-0", "timed out")) == (
        "zone example.com. on dns-primary-0: timed out")


def test_findings_are_values() -> None:
    assert Conflict("a", "b") == Conflict("a", "b") and len({Conflict("a", "b"), Conflict("a", "b")}) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        Refusal(None, "x").text = "y"  # type: ignore[misc]
