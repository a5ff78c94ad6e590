"""The pure half of a zone leaving Git: a zone that left Git is deleted only when its primary holds
nothing the agent did not write (the zone's own SOA, apex NS, glue and DNSSEC data aside);
otherwise only the agent's RRsets go and the plan says why the zone stays. `--force` deletes it.
The end-to-end half is tests/integration/test_zone_left_git.py."""

from __future__ import annotations

from agent.desired import rrsets
from agent.gate import safety
from agent.model.observed import DnsObserved, ZoneObserved
from agent.model.ownership import ZoneOwnership
from agent.plan import build, zonediff

ZONE = "gone.test."
P, S = "dns-system/dns-primary-0", "dns-system/dns-secondary-0"


def _rr(owner: str, rtype: str, *values: str) -> rrsets.RRset:
    return rrsets.build(ZONE, owner, rtype, 300, values)


def _served(*extra: rrsets.RRset) -> dict[tuple[str, str], rrsets.RRset]:
    own = [_rr(ZONE, "SOA", f"ns1.{ZONE} hostmaster.{ZONE} 5 3600 600 604800 300"), _rr(ZONE, "NS", f"ns1.{ZONE}"),
           _rr(f"ns1.{ZONE}", "A", "192.0.2.53"), _rr(f"www.{ZONE}", "A", "192.0.2.10"),
           _rr(f"mail.{ZONE}", "TXT", '"agent"')]
    return {r.key: r for r in [*own, *extra]}


def _world(served: ZoneObserved) -> DnsObserved:
    owned = ZoneOwnership(ZONE, {P: "primary", S: "secondary"}, {(f"www.{ZONE}", "A"), (f"mail.{ZONE}", "TXT")})
    return DnsObserved({ZONE: owned}, {ZONE: {P: served}}, {P, S})


def test_a_zone_without_foreign_data_is_deleted_everywhere() -> None:
    plan = zonediff.plan_zone(ZONE, None, _world(ZoneObserved(_served())))
    assert (plan.deletes, plan.kept, plan.records, plan.placements_after) == ([P, S], "", {}, {})


def test_a_zone_with_foreign_data_stays_and_only_the_agents_rrsets_are_deleted() -> None:
    acme = _rr(f"_acme-challenge.{ZONE}", "TXT", '"token"')
    plan = zonediff.plan_zone(ZONE, None, _world(ZoneObserved(_served(acme))))
    assert plan.deletes == [] and plan.placements_after == {P: "primary", S: "secondary"}
    assert [(c.action, c.key) for c in plan.records[P].changes] == [("delete", (f"mail.{ZONE}", "TXT")),
                                                                    ("delete", (f"www.{ZONE}", "A"))]
    assert plan.managed_after == set()
    assert plan.kept == (f"zone kept on 2 server(s) although it left Git: it holds 1 RRset(s) the agent did not "
                         f"write (_acme-challenge.{ZONE} TXT); the agent's own RRsets in it are deleted; `--force` "
                         "deletes the zone with them")
    conflicts: list[str] = []
    build._zone_view([], conflicts, [], [plan])
    assert conflicts == [f"{ZONE}: {plan.kept}"]
    assert safety.zone_refusal(plan, safety.Policy()) is None  # 2 managed RRsets: under the gate's minimum


def test_force_deletes_a_zone_with_foreign_data() -> None:
    acme = _rr(f"_acme-challenge.{ZONE}", "TXT", '"token"')
    plan = zonediff.plan_zone(ZONE, None, _world(ZoneObserved(_served(acme))), force=True)
    assert (plan.deletes, plan.kept, plan.records) == ([P, S], "", {})


def test_a_primary_that_could_not_be_read_keeps_the_zone() -> None:
    plan = zonediff.plan_zone(ZONE, None, _world(ZoneObserved(None, error=f"{P}: AXFR of {ZONE} failed: timed out")))
    assert plan.deletes == [] and plan.records == {}
    assert plan.kept.startswith("zone kept on 2 server(s) although it left Git: what its primary serves could not be "
                                f"read ({P}: {P}: AXFR of {ZONE} failed: timed out)")


def test_a_primary_that_lost_the_zone_does_not_keep_it() -> None:
    plan = zonediff.plan_zone(ZONE, None, _world(ZoneObserved(None)))
    assert (plan.deletes, plan.kept) == ([P, S], "")
