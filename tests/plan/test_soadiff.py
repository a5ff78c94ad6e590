"""The zone's SOA follows the DNSZone's soaRecord after creation (agent/plan/soadiff.py): one update
with the served serial plus one when the mailbox, the primary name server or a timer differ; nothing
when they agree (whatever the serial); never the agent's own data, never confirmed by its serial."""

from __future__ import annotations

from agent.desired import hierarchy, rrsets
from agent.desired.placement import Zone
from agent.plan import soadiff
from agent.plan.zoneplan import RRsetPlan, ZonePlan
from tests.conftest import SAMPLE, load_dir


def _zone() -> Zone:
    zone = next(z for z in hierarchy.build(load_dir(SAMPLE)).zones if z.name == "example.com.")
    spec = zone.spec.soa_record
    assert (spec.primary_ns, spec.refresh) == ("ns1.example.com.", 3600), spec
    return zone


def _served(value: str, ttl: int = 3600) -> dict[tuple[str, str], rrsets.RRset]:
    return {("example.com.", "SOA"): rrsets.build("example.com.", "example.com.", "SOA", ttl, [value])}


def test_an_soa_that_says_what_the_dnszone_says_is_left_alone_whatever_its_serial() -> None:
    zone = _zone()
    spec = zone.spec.soa_record
    same = f"NS1.Example.COM. {spec.admin_email} 987 {spec.refresh} {spec.retry} {spec.expire} {spec.negative_ttl}"
    assert soadiff.change(zone, _served(same)) is None
    assert soadiff.change(zone, {}) is None  # not served (yet): the create writes it


def test_a_moved_primary_name_server_is_one_update_with_the_next_serial_and_the_served_ttl() -> None:
    zone = _zone()
    spec = zone.spec.soa_record
    old = f"ns0.example.com. {spec.admin_email} 4294967295 {spec.refresh} {spec.retry} {spec.expire} 60"
    change = soadiff.change(zone, _served(old, ttl=900))
    assert change is not None and change.action == "update" and change.before == _served(old, 900)[
        ("example.com.", "SOA")]
    assert change.after is not None and change.after.ttl == 900
    assert change.after.rdatas == (f"ns1.example.com. {spec.admin_email} 0 {spec.refresh} {spec.retry} {spec.expire} "
                                   f"{spec.negative_ttl}",)  # the serial wraps as RFC 1982 counts


def test_the_soa_change_is_never_the_agents_data_nor_in_its_intent() -> None:
    zone = _zone()
    change = soadiff.change(zone, _served("ns0.example.com. a.example.com. 1 1 1 1 1"))
    assert change is not None
    plan = ZonePlan(zone.name, zone, [], [], records={"dns/a": RRsetPlan(zone.name, [change], [], set())})
    assert plan.intent().writes == {} and plan.intent().deletes == set()
