"""A primary is told again whom to NOTIFY when its secondaries' pods move (issue 25, found on the
real node): a secondary that became ready after the zone was created on its primary, or whose pod
was replaced, must be in the primary's also-notify, or it waits for the zone's refresh (an hour)
before it serves a push. The addresses last told are part of the zone's stored ownership."""

from __future__ import annotations

import pathlib

from agent.clients import endpoints as endpoint_map
from agent.clients.endpoints import Endpoint, Server
from agent.model.observed import DnsObserved, ZoneObserved
from agent.model.ownership import ZoneOwnership
from agent.observe import dnsobserve
from agent.plan import zonediff
from tests.support.podworld import PRIMARY, SECONDARY, _desired


def _world(desired, notify: list[str] | None, secondary_ips: tuple[str, ...]):  # type: ignore[no-untyped-def]
    zone = desired.zones[0]
    primary = Endpoint(PRIMARY, "svc", 53, "http://svc", servers=(Server("10.1.0.4", "10.1.0.4", 5353, "http://a"),))
    secondary = Endpoint(SECONDARY, "svc2", 53, "http://svc2",
                         servers=tuple(Server(ip, ip, 5353, f"http://{ip}") for ip in secondary_ips))
    eps = {PRIMARY: primary, SECONDARY: secondary}
    owned = ZoneOwnership(zone.name, {PRIMARY: "primary", SECONDARY: "secondary"}, set(zone.rrsets), notify=notify)
    seen = {f"{PRIMARY}@10.1.0.4": ZoneObserved(dict(zone.rrsets), serial=7)}
    seen.update({f"{SECONDARY}@{ip}": ZoneObserved(None, serial=7) for ip in secondary_ips})
    return zone, DnsObserved({zone.name: owned}, {zone.name: seen}, set(eps), servers=dnsobserve.reach(eps),
                             pods=endpoint_map.servers_of(eps))


def test_a_secondary_pod_that_moved_is_told_to_the_primary_and_remembered(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    zone, world = _world(desired, ["10.1.0.7:5353"], ("10.1.0.8",))  # the secondary's pod was replaced
    plan = zonediff.plan_zone(zone.name, zone, world)
    primary_pod = f"{PRIMARY}@10.1.0.4"
    assert plan.renotify == [primary_pod] and not plan.in_sync
    assert plan.transfers[primary_pod].also_notify == ("10.1.0.8:5353",)
    assert plan.ownership_after("rev").notify == ["10.1.0.8:5353"]
    assert plan.in_flight().notify == ["10.1.0.7:5353"]  # until told, the old list is what is known


def test_nothing_is_sent_when_the_primary_was_told_the_same_addresses(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    zone, world = _world(desired, ["10.1.0.8:5353"], ("10.1.0.8",))
    plan = zonediff.plan_zone(zone.name, zone, world)
    assert plan.renotify == [] and plan.transfers == {}


def test_the_addresses_last_told_survive_the_state_store(tmp_path: pathlib.Path) -> None:
    owned = ZoneOwnership("example.com.", {PRIMARY: "primary"}, notify=["10.1.0.8:5353"])
    assert ZoneOwnership.from_json(owned.to_json()).notify == ["10.1.0.8:5353"]
    assert ZoneOwnership.from_json(ZoneOwnership("example.com.").to_json()).notify is None
