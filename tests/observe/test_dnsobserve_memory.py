"""A million records (issue 28): what a long-running agent holds and walks per push.

An observed RRset equal to the desired one is held once (the desired object), never at the cost of
planning a change as no change; a push re-derives the name-server warnings of the zones it changed
only, and a zone whose placement input changed (an instance added, a selector, the cluster) is
placed again on a warm memo exactly as a cold build places it.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

import pytest

from agent.clients import dnsquery
from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint
from agent.clients.statestore import FileStore
from agent.desired import hierarchy, nameservers, rrsets
from agent.model.observed import DnsObserved, ZoneObserved
from agent.model.ownership import ZoneOwnership
from agent.model.reading import IN_FULL
from agent.model.servers import instance_id
from agent.observe import dnsobserve
from agent.plan import build, rrsetdiff
from agent.reconcile import dnsapply, insync
from agent.run import memory
from tests.conftest import SAMPLE, load_dir
from tests.support.warmrepo import Warm

PRIMARY = "dns-system/dns-primary-0"


def _read_back(zone: hierarchy.Zone, changed: dict[tuple[str, str], rrsets.RRset]) -> dict[Any, rrsets.RRset]:
    """What an AXFR of the zone gives: new objects for every RRset (equal to Git's unless `changed`), an SOA."""
    found = {k: rrsets.build(zone.name, r.name, r.rtype, r.ttl, list(r.rdatas))
             for k, r in zone.rrsets.items()}
    found[(zone.name, "SOA")] = rrsets.build(zone.name, zone.name, "SOA", 3600, ["ns1.example.com. h.example.com. 7 1 1 1 1"])
    found.update(changed)
    return found


def _zone() -> hierarchy.Zone:
    desired = hierarchy.build(load_dir(SAMPLE))
    return next(z for z in desired.zones if z.name == "example.com." and len(z.rrsets) > 3)


def test_an_observed_rrset_equal_to_git_is_held_once_and_one_that_differs_is_planned_as_a_change() -> None:
    zone = _zone()
    keys = [k for k in zone.rrsets if k[1] in ("A", "TXT", "CNAME", "MX")]
    ttl_key, value_key = keys[0], keys[1]
    ttl_off = rrsets.build(zone.name, ttl_key[0], ttl_key[1], zone.rrsets[ttl_key].ttl + 1, zone.rrsets[ttl_key].rdatas)
    first = zone.rrsets[value_key]
    value_off = rrsets.build(zone.name, value_key[0], value_key[1], first.ttl,
                             (*first.rdatas[1:], first.rdatas[0] + "x" if first.rtype == "TXT" else "10.9.9.9"))
    read = _read_back(zone, {ttl_key: ttl_off, value_key: value_off})
    seen = dnsobserve.shared(dict(read), zone.rrsets)

    assert list(seen) == list(read)  # as read, in the order read
    for key, rrset in seen.items():
        if key in (ttl_key, value_key) or key not in zone.rrsets:
            assert rrset is read[key]  # differs (or is not Git's): kept as read
        else:
            assert rrset is zone.rrsets[key] and rrset == read[key]  # equal: the desired object itself
    assert seen[ttl_key] != zone.rrsets[ttl_key] and seen[value_key] != zone.rrsets[value_key]
    plan = rrsetdiff.rrset_plan(zone.name, zone.rrsets, seen, managed=set(zone.rrsets))
    assert sorted((c.action, c.key) for c in plan.changes) == sorted([("update", ttl_key), ("update", value_key)])
    assert plan.changes == rrsetdiff.rrset_plan(zone.name, zone.rrsets, read, managed=set(zone.rrsets)).changes


def test_observe_holds_the_desired_rrsets_a_zone_transfer_read_back_unchanged(tmp_path: pathlib.Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    desired = hierarchy.build(load_dir(SAMPLE))
    zone = _zone()
    zone = next(z for z in desired.zones if z.name == zone.name)
    key = next(k for k in zone.rrsets if k[1] == "A")
    off = rrsets.build(zone.name, key[0], "A", zone.rrsets[key].ttl, ["10.9.9.9"])
    monkeypatch.setattr(dnsobserve.axfr, "read_zone",
                        lambda endpoint, name, **kw: _read_back(next(z for z in desired.zones if z.name == name),
                                                                {key: off} if name == zone.name else {}))
    eps = {PRIMARY: Endpoint(PRIMARY, "127.0.0.1", 53, "http://127.0.0.1:1")}
    observed = dnsobserve.observe(desired, FileStore(tmp_path / "state"), eps, IN_FULL,
                                  pace=dnsobserve.Pace(Deadline(30)))
    seen = observed.zones[zone.name][PRIMARY].rrsets
    assert seen is not None and seen[key] is off
    held = [k for k in seen if k != key and k in zone.rrsets]
    assert held and all(seen[k] is zone.rrsets[k] for k in held)


# -- warm builds: what a push recomputes ------------------------------------------------------------------


def _placed(desired: hierarchy.Desired) -> dict[str, tuple[list[str], list[str]]]:
    return {z.name: ([str(k) for k in z.primaries], [str(k) for k in z.secondaries]) for z in desired.zones}


def _warnings(desired: hierarchy.Desired) -> list[str]:
    return sorted(str(p) for p in desired.problems)


@pytest.mark.parametrize("change", ["a new instance", "a changed selector", "a cluster change"])
def test_a_zone_whose_placement_input_changed_is_placed_again_on_a_warm_memo(tmp_path: pathlib.Path,
                                                                            change: str) -> None:
    world = Warm(tmp_path / "repo")
    before, _ = world.build()
    if change == "a new instance":
        world.edit("infrastructure/cluster.yaml", "  primary:\n    replicas: 1\n", "  primary:\n    replicas: 2\n")
    elif change == "a changed selector":
        world.edit("zones/example-org.yaml", "values: [primary, secondary]", "values: [primary]")
    else:
        world.edit("infrastructure/cluster.yaml", "  secondary:\n    replicas: 1\n", "  secondary:\n    replicas: 2\n")
    warm, cold = world.build()
    assert _placed(warm) != _placed(before)  # the change moves zones
    assert _placed(warm) == _placed(cold)
    assert _warnings(warm) == _warnings(cold)


def test_a_push_checks_the_name_servers_of_the_zones_it_changed_only(tmp_path: pathlib.Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A push re-derives the name-server warnings of the zones whose records it changed, not of every
    zone (10,000 zones: a walk of all of them per push); the other zones keep their warnings."""
    world = Warm(tmp_path / "repo")
    for path, zone in (("zones/internal.yaml", "internal.example.net"), ("zones/example-org.yaml", "example.org")):
        world.edit(path, "  nameServers:\n", f"  nameServerIps:\n    stray.{zone}.: 192.0.2.9\n  nameServers:\n")
    world.build()
    checked: list[str] = []
    stray = nameservers.stray
    monkeypatch.setattr(nameservers, "stray", lambda zone: checked.append(zone.name) or stray(zone))
    world.edit("records/example-org/site.yaml", "[198.51.100.80]", "[198.51.100.81]")
    warm, cold = world.build()
    assert checked.count("internal.example.net.") == 1  # by the cold build only: the warm one kept its warning
    assert checked.count("example.org.") == 2  # its records changed: checked again, warm and cold
    strays = [w for w in _warnings(warm) if "is not a name server of the zone" in w]
    assert len(strays) == 2, strays
    assert _warnings(warm) == _warnings(cold)

    checked.clear()  # the DNSZone itself changed: its warning is its new one
    world.edit("zones/example-org.yaml", "stray.example.org.", "other.example.org.")
    warm, cold = world.build()
    assert "example.org." in checked and _warnings(warm) == _warnings(cold)
    assert [w for w in _warnings(warm) if "other.example.org." in w]


# -- DNS apply: a push reports the zones it left unasked from their last result ---------------------------
def _in_sync_plans(tmp_path: pathlib.Path) -> tuple[list[Any], dict[str, Endpoint], DnsObserved]:
    """The sample's zone plans, each found in sync (the plan's decision), on one primary each."""
    desired = hierarchy.build(load_dir(SAMPLE))
    eps = {i: Endpoint(i, "127.0.0.1", 1, "http://127.0.0.1:1")
           for i in sorted({instance_id(k) for z in desired.zones for k in z.instances})}
    owned = {z.name: ZoneOwnership(z.name, {instance_id(k): "primary" for k in z.primaries}
                                   | {instance_id(k): "secondary" for k in z.secondaries}, set(z.rrsets))
             for z in desired.zones}
    seen = {z.name: {instance_id(k): ZoneObserved(dict(z.rrsets), serial=1) for k in z.primaries} for z in desired.zones}
    world = DnsObserved(owned, seen, set(eps), focus=set(), servers=dnsobserve.reach(eps))
    return [dataclasses.replace(zp, in_sync=True) for zp in build.zone_plans(desired, world)], eps, world


def test_a_push_reports_the_zones_it_left_unasked_from_their_last_result(tmp_path: pathlib.Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    plans, eps, world = _in_sync_plans(tmp_path)
    assert len(plans) == 3
    store, options = FileStore(tmp_path / "state"), dnsapply.DnsApplyOptions()
    reported: insync.Reported = {}
    walked: list[str] = []
    monkeypatch.setattr(dnsquery, "serials", lambda endpoint, zones, **kw: {z: 1 for z in zones})  # caught up
    zone = dnsapply.DnsApply.zone
    monkeypatch.setattr(dnsapply.DnsApply, "zone", lambda self, zp, **kw: walked.append(zp.name) or zone(self, zp, **kw))

    def run(zones: list[Any], focus: set[str]) -> list[Any]:
        walked.clear()
        asked = dataclasses.replace(world, focus=focus)  # only these zones were asked
        return dnsapply.apply(zones, eps, store, options=options, deadline=Deadline(30), observed=asked,
                              reported=reported).zones

    cold = dnsapply.apply(plans, eps, store, options=options, deadline=Deadline(30), observed=world).zones
    first = run(plans, set())
    assert sorted(walked) == sorted(zp.name for zp in plans) and first == cold
    again = run(plans, set())
    assert walked == []  # nothing walked: every zone is reported as it was
    assert all(a is f for a, f in zip(again, first, strict=True)) and again == cold

    changed = [plans[0], dataclasses.replace(plans[1]), plans[2]]  # a zone planned anew (something it comes from changed)
    after = run(changed, {plans[2].name})  # and one the push asks about
    assert sorted(walked) == sorted([plans[1].name, plans[2].name])
    assert after[0] is first[0] and after[1] is not first[1] and after[1] == first[1]

    busy = [plans[0], plans[1], dataclasses.replace(plans[2], in_sync=False)]
    monkeypatch.setattr(dnsapply.DnsApply, "zone", lambda self, zp, **kw: walked.append(zp.name) or
                        (zone(self, zp, in_sync=True) if zp is busy[2] else zone(self, zp, **kw)))
    run(busy, set())
    assert plans[2].name not in reported  # not in sync: its result is never taken again
    assert memory.Memory.one_shot().reports() is None  # a one-shot run keeps nothing
