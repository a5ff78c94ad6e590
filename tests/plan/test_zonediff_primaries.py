"""The plan re-creates a secondary's zone when its primaries' pods moved (issue 26): bindcar cannot
change a zone's `primaries`, and a secondary asking a dead address never transfers again. The
addresses the secondaries were created with are part of the zone's stored ownership; the real-named
test is tests/integration/test_primaries_follow.py."""

from __future__ import annotations

import pathlib

from agent.clients import endpoints as endpoint_map
from agent.clients.endpoints import Endpoint, Server
from agent.desired.hierarchy import Desired
from agent.desired.placement import Zone
from agent.model.observed import DnsObserved, ZoneObserved
from agent.model.ownership import ZoneOwnership
from agent.observe import dnsobserve
from agent.plan import zonediff
from agent.reconcile import dnsapply
from agent.reconcile.dnsresult import ZoneResult
from tests.support.podworld import PRIMARY, SECONDARY, _desired

SECONDARY_POD = f"{SECONDARY}@10.1.0.8"


def _world(desired: Desired, transfer_from: list[str] | None, primary_ip: str | None,
           placed: bool = True) -> tuple[Zone, DnsObserved]:
    zone = desired.zones[0]
    pods = (Server(primary_ip, primary_ip, 5353, "http://a"),) if primary_ip else ()
    primary = Endpoint(PRIMARY, "svc", 53, "http://svc", servers=pods, pods=None if primary_ip else ())
    secondary = Endpoint(SECONDARY, "svc2", 53, "http://svc2", servers=(Server("10.1.0.8", "10.1.0.8", 5353, "http://b"),))
    eps = {PRIMARY: primary, SECONDARY: secondary}
    placements = {PRIMARY: "primary", SECONDARY: "secondary"} if placed else {PRIMARY: "primary"}
    owned = ZoneOwnership(zone.name, placements, set(zone.rrsets), notify=["10.1.0.8:5353"],
                          transfer_from=transfer_from)
    seen = {f"{PRIMARY}@{primary_ip}": ZoneObserved(dict(zone.rrsets), serial=7)} if primary_ip else {}
    return zone, DnsObserved({zone.name: owned}, {zone.name: seen}, set(eps), servers=dnsobserve.reach(eps),
                             pods=endpoint_map.servers_of(eps))


def test_a_moved_primary_pod_recreates_the_secondary_zone_with_its_new_address(tmp_path: pathlib.Path) -> None:
    zone, world = _world(_desired(tmp_path), ["10.1.0.4:5353"], "10.1.0.9")  # the primary's pod was replaced
    plan = zonediff.plan_zone(zone.name, zone, world)
    assert plan.repoint == [SECONDARY_POD] and (SECONDARY_POD, "secondary") in plan.creates and not plan.in_sync
    assert plan.bodies[SECONDARY_POD]["zoneConfig"]["primaries"] == ["10.1.0.9:5353"]
    assert plan.deletes == []  # not a removal the gate counts: the zone stays placed where it was
    assert plan.in_flight().transfer_from == ["10.1.0.4:5353"]  # until re-created, the old address is what is known
    assert plan.ownership_after("rev").transfer_from == ["10.1.0.9:5353"]


def test_nothing_is_recreated_when_the_primary_pods_are_where_they_were(tmp_path: pathlib.Path) -> None:
    zone, world = _world(_desired(tmp_path), ["10.1.0.9:5353"], "10.1.0.9")
    plan = zonediff.plan_zone(zone.name, zone, world)
    assert plan.repoint == [] and plan.creates == [] and plan.in_sync


def test_an_older_record_is_completed_without_recreating_anything(tmp_path: pathlib.Path) -> None:
    zone, world = _world(_desired(tmp_path), None, "10.1.0.9")
    plan = zonediff.plan_zone(zone.name, zone, world)
    assert plan.repoint == [] and plan.empty and not plan.in_sync  # stored once, nothing sent
    assert plan.ownership_after("rev").transfer_from == ["10.1.0.9:5353"]


def test_no_ready_primary_pod_keeps_the_secondary_and_what_was_known(tmp_path: pathlib.Path) -> None:
    zone, world = _world(_desired(tmp_path), ["10.1.0.4:5353"], None)
    plan = zonediff.plan_zone(zone.name, zone, world)
    assert plan.repoint == [] and SECONDARY_POD not in dict(plan.creates)
    assert plan.ownership_after("rev").transfer_from == ["10.1.0.4:5353"]


def test_a_recreation_that_failed_is_tried_again_next_run(tmp_path: pathlib.Path) -> None:
    zone, world = _world(_desired(tmp_path), ["10.1.0.4:5353"], "10.1.0.9")
    plan = zonediff.plan_zone(zone.name, zone, world)
    result = ZoneResult(zone.key, zone.name)
    result.servers[SECONDARY_POD] = ("Failed", "could not remove the zone: connection refused")
    owned = dnsapply._ownership_reached(plan, result, "rev")
    assert owned.transfer_from == ["10.1.0.4:5353"] and owned.placements[SECONDARY] == "secondary"
    again = zonediff.plan_zone(zone.name, zone, DnsObserved({zone.name: owned}, world.zones, world.reachable,
                                                            servers=world.servers, pods=world.pods))
    assert again.repoint == [SECONDARY_POD]


def test_the_addresses_survive_the_state_store() -> None:
    owned = ZoneOwnership("example.com.", {PRIMARY: "primary"}, transfer_from=["10.1.0.9:5353"])
    assert ZoneOwnership.from_json(owned.to_json()).transfer_from == ["10.1.0.9:5353"]
    assert ZoneOwnership.from_json(ZoneOwnership("example.com.").to_json()).transfer_from is None
