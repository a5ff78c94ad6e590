"""The gate's one entry (agent/gate/verdict.py): a plan comes back with its refusals - the zones', then
the prune's - and in a second DNS round every zone's, then the primaries that still refuse the agent's
transfer; the plan itself is not changed, the gate returns a copy."""

from __future__ import annotations

import dataclasses
import pathlib
import shutil

import pytest

from agent.desired import hierarchy
from agent.gate import safety, transfers, verdict
from agent.model.findings import Refusal
from agent.model.scope import ALL, Scope
from agent.plan import delta
from agent.plan.changes import Plan
from agent.plan.zoneplan import ZonePlan
from tests.conftest import SAMPLE, load_dir

ZONE = "example.com."
MANY = "".join(f"---\napiVersion: bindy.firestoned.io/v1beta1\nkind: ARecord\nmetadata:\n  name: h{i}\n"
               f"  namespace: dns-system\n  labels: {{zone: example-com}}\nspec:\n  name: h{i}\n"
               f"  ipv4Addresses: [192.0.2.{i + 100}]\n" for i in range(12))


@pytest.fixture
def mass_delete(tmp_path: pathlib.Path) -> Plan:
    """A pull request that deletes 12 of a zone's 14 managed RRsets."""
    base, head = tmp_path / "base", tmp_path / "head"
    shutil.copytree(SAMPLE, base)
    shutil.copytree(SAMPLE, head)
    (base / "records" / "example-com" / "many.yaml").write_text(MANY)
    return delta.delta(hierarchy.build(load_dir(base)), hierarchy.build(load_dir(head)))


def test_a_refused_plan_comes_back_with_the_zone_and_the_text_people_read(mass_delete: Plan) -> None:
    gated = verdict.approve(mass_delete, safety.Policy())
    [refusal] = gated.refused
    assert refusal.zone == ZONE and str(refusal) == refusal.text
    assert refusal.text.startswith(f"zone {ZONE}: refusing to delete 12 of ")
    assert gated.refusals == [refusal.text]
    assert mass_delete.refused == () and mass_delete.refusals == []  # the plan given is not changed
    assert dataclasses.replace(gated, refused=()) == mass_delete


def test_the_operator_forces_it_and_nothing_is_refused(mass_delete: Plan) -> None:
    assert verdict.approve(mass_delete, safety.Policy(force=True)).refused == ()
    assert verdict.approve(mass_delete, safety.Policy(delete_threshold=1.0)).refused == ()


def test_the_gate_refuses_what_safety_check_refuses_in_its_order(mass_delete: Plan) -> None:
    assert verdict.refusals(mass_delete, safety.Policy(), ALL) == safety.check(mass_delete, safety.Policy())


def _reopening(name: str, *servers: str) -> ZonePlan:
    return ZonePlan(name, None, [], [], reopen=list(servers), allow_transfer=["10.0.0.9", "fd00::9"])


def test_a_second_round_refuses_a_primary_that_still_refuses_the_transfer(mass_delete: Plan) -> None:
    zones = [_reopening("a.example.", "dns/p-0", "dns/p-1"), *(mass_delete.zones or []), _reopening("b.example.")]
    plan = dataclasses.replace(mass_delete, zones=zones)
    stale = Scope.stale(frozenset({"a.example.", ZONE, "b.example."}))
    refused = verdict.approve(plan, safety.Policy(), stale).refused
    assert [r.zone for r in refused] == [ZONE, "a.example."]  # the safety rules' first, then the transfers'
    assert refused[1].text == transfers.STILL_REFUSED.format(zone="a.example.", servers="dns/p-0, dns/p-1",
                                                             acl="10.0.0.9, fd00::9")
    # a first round does not look at the transfers: its reopen is what it writes
    assert [r.zone for r in verdict.approve(plan, safety.Policy()).refused] == [ZONE]


def test_a_zone_refused_by_the_safety_rules_is_not_refused_twice(mass_delete: Plan) -> None:
    [zone] = [zp for zp in mass_delete.zones or [] if zp.name == ZONE]
    plan = dataclasses.replace(mass_delete, zones=[dataclasses.replace(zone, reopen=["dns/p-0"])])
    refused = verdict.approve(plan, safety.Policy(), Scope.stale(frozenset({ZONE}))).refused
    assert len(refused) == 1 and "refusing to delete 12 of" in refused[0].text


def test_a_prune_refusal_names_no_zone() -> None:
    assert Refusal(None, "Kubernetes: refusing").zone is None
