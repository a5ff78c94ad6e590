"""A Plan is made whole by build and never edited after: assigning any of its fields fails, and the
gate's refusals or a delta's base come with a copy (dataclasses.replace)."""

from __future__ import annotations

import dataclasses

import pytest

from agent.desired import hierarchy
from agent.gate import safety, verdict
from agent.model.findings import Refusal
from agent.model.scope import Scope, ScopeRule
from agent.plan import build, delta, render
from agent.plan.changes import Plan
from tests.conftest import SAMPLE, load_dir


def _plan() -> Plan:
    return build.offline(hierarchy.build(load_dir(SAMPLE)))


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(Plan)])
def test_no_field_of_a_plan_can_be_assigned(field: str) -> None:
    plan = _plan()
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(plan, field, getattr(plan, field))


def test_the_refusals_people_read_are_the_texts_of_the_gates_records() -> None:
    plan = dataclasses.replace(_plan(), refused=(Refusal("a.", "zone a.: no"), Refusal(None, "Kubernetes: no")))
    assert plan.refusals == ["zone a.: no", "Kubernetes: no"]
    assert "  ! zone a.: no\n  ! Kubernetes: no\n" in render.render_text(plan)


def test_a_push_first_plan_says_so_instead_of_kubernetes_not_observed() -> None:
    desired = hierarchy.build(load_dir(SAMPLE))
    world = build.empty_world(desired)
    zones = frozenset({z.name for z in desired.zones})
    first = build.build(desired, dataclasses.replace(world, kube=None),
                        scope=Scope(zones, False, ScopeRule.CHANGED_ZONES))
    assert first.notes == [build.PUSH_FIRST.format(zones=len(zones))]
    again = build.build(desired, dataclasses.replace(world, kube=None), scope=Scope.stale(zones))
    assert again.notes == [build.NOT_OBSERVED_KUBE]


def test_a_delta_is_a_new_plan_with_its_base() -> None:
    desired = hierarchy.build(load_dir(SAMPLE))
    plan = delta.delta(desired, desired, base_revision="a" * 40, head_revision="b" * 40)
    assert (plan.base, plan.revision) == ("a" * 40, "b" * 40)
    assert verdict.approve(plan, safety.Policy()).refused == ()
