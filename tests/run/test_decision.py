"""The types a run's decision is told in (agent/run/decision.py, agent/model/scope.py and
agent/model/reading.py): every behaviour is a run of one kind, the words are the ones logs and metric
labels show, the phase is named by precedence, and a decision cannot be changed once made."""

from __future__ import annotations

import dataclasses
import re

import pytest

from agent.model import scope as scopes
from agent.model.key import ObjectKey
from agent.model.reading import DnsRead, KubeRead, Reading
from agent.run.decision import (
    KIND_OF,
    Decision,
    Phase,
    Revision,
    RunKind,
    Standing,
    StatusScope,
    Why,
)


def test_every_behaviour_is_a_run_of_one_kind_and_every_kind_has_one() -> None:
    assert set(KIND_OF) == set(Why) and len(Why) == 20
    assert set(KIND_OF.values()) == set(RunKind)
    assert KIND_OF[Why.PUSH_FIRST_AFTER_RESTART] is RunKind.PUSH_FIRST and KIND_OF[Why.STANDBY] is RunKind.FOLLOW


@pytest.mark.parametrize("enum", [RunKind, Why, Revision, StatusScope, Standing, KubeRead, DnsRead, scopes.ScopeRule])
def test_the_words_are_lowercase_kebab_case(enum: type) -> None:
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*", member.value) for member in enum)


def test_scopes() -> None:
    everything = scopes.ALL
    assert everything == scopes.Scope(None, True, scopes.ScopeRule.ALL)
    stale = scopes.Scope.stale(frozenset({"example.com"}))
    assert stale.zones == frozenset({"example.com"}) and not stale.kubernetes and stale.rule is scopes.ScopeRule.STALE
    first = scopes.Scope.changed_zones()
    assert first.zones is None and not first.kubernetes and first.rule is scopes.ScopeRule.CHANGED_ZONES


def test_the_phase_is_named_standby_then_owed_then_its_standing() -> None:
    assert Phase(Standing.STANDBY, keeps=True, owed=True).name == "standby"
    assert Phase(Standing.NEW_LEADER, keeps=True, owed=True).name == "owed"
    assert Phase(Standing.NEW_LEADER, keeps=True).name == "new-leader"
    assert Phase(Standing.COLD, keeps=True).name == "cold"
    moved = Phase(Standing.WARM, keeps=True, pods_moved=frozenset({ObjectKey("Pod", "dns-system", "p")}))
    assert moved.name == "warm" and hash(moved) == hash(dataclasses.replace(moved))


def test_a_decision_is_frozen() -> None:
    reading = Reading(KubeRead.RECALL, DnsRead.FOCUSED, remembered=True, refresh_ownership=False, zones_first=False,
                      plan_memo=True)
    decision = Decision(RunKind.PUSH_FIRST, Why.PUSH_FIRST, Revision.HEAD, scopes.Scope.changed_zones(), reading,
                        may_yield=False, statuses=StatusScope.NONE, keep_rejection=False, baseline=False, writes=True,
                        names_superseded=True, alerts=True, publish_pending_notes=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.kind = RunKind.RECONCILE  # type: ignore[misc]
    assert decision.message == "" and dataclasses.replace(decision, why=Why.NEW_HEAD) != decision
