"""How `dnsobserve.observe` reads the zones for each `Reading` and `Scope` a run decides on: what
is transferred, whose serials are asked, and which ownership records are read back."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from agent.clients import axfr, dnsquery
from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint, Server
from agent.desired import hierarchy, rrsets
from agent.model.observed import ZoneObserved
from agent.model.ownership import ZoneOwnership
from agent.model.reading import IN_FULL, DnsRead, Reading
from agent.model.scope import ALL, Scope, ScopeRule
from agent.model.servers import instance_id
from agent.observe import dnsobserve
from tests.conftest import SAMPLE, load_dir

SOA = "ns1.example.com. hostmaster.example.com. 7 3600 600 86400 300"
REMEMBERED = Reading(IN_FULL.kube, DnsRead.SERIALS, remembered=True, refresh_ownership=False, zones_first=False,
                     plan_memo=True)
FOCUSED = dataclasses.replace(REMEMBERED, dns=DnsRead.FOCUSED)


class _Store:
    def __init__(self, zones: dict[str, ZoneOwnership]) -> None:
        self.zones = zones
        self.refreshed: list[bool] = []

    def load_zones(self, *, refresh: bool = True, quarantine: bool = True) -> dict[str, ZoneOwnership]:
        self.refreshed.append(refresh)
        return dict(self.zones)


class World:
    """The sample's zones on single-address servers, every zone at serial 7; what observe asked."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.desired = hierarchy.build(load_dir(SAMPLE))
        instances = sorted({instance_id(k) for z in self.desired.zones for k in z.instances})
        self.endpoints = {i: Endpoint(i, "127.0.0.1", 1, "http://127.0.0.1:1") for i in instances}
        self.transferred: list[tuple[str, str]] = []
        self.asked: list[tuple[str, str]] = []  # (server, zone) SOA questions
        self.exchanges: list[str] = []  # the server of each SOA exchange
        self.store = _Store({z.name: ZoneOwnership(z.name, {instance_id(k): "primary" for k in z.primaries}
                                                   | {instance_id(k): "secondary" for k in z.secondaries},
                                                   set(z.rrsets)) for z in self.desired.zones})
        monkeypatch.setattr(axfr, "read_zone", self._read_zone)
        monkeypatch.setattr(dnsquery, "soa", self._serials)
        self.memory = dnsobserve.DnsMemory()
        for z in self.desired.zones:
            for key in z.primaries:
                self.memory.remember(z.name, instance_id(key), ZoneObserved(dict(z.rrsets), serial=7))
            self.memory.sources[z.name] = z.rrsets  # applied from these very RRsets: unchanged

    def _ask(self, endpoint: Endpoint, zones: Sequence[str]) -> Sequence[str]:
        self.exchanges.append(endpoint.instance)
        self.asked += [(endpoint.instance, z) for z in zones]
        return zones

    def _serials(self, endpoint: Endpoint, zones: Sequence[str], **_: Any) -> dict[str, int | None]:
        return {z: 7 for z in self._ask(endpoint, zones)}

    def _read_zone(self, endpoint: Endpoint, name: str, **_: Any) -> dict[Any, rrsets.RRset]:
        self.transferred.append((name, endpoint.instance))
        zone = next(z for z in self.desired.zones if z.name == name)
        return {**zone.rrsets, (name, "SOA"): rrsets.build(name, name, "SOA", 3600, [SOA])}

    def observe(self, reading: Reading, scope: Scope = ALL) -> Any:
        return dnsobserve.observe(self.desired, self.store, self.endpoints, reading,  # type: ignore[arg-type]
                                  pace=dnsobserve.Pace(Deadline(30)), memory=self.memory, scope=scope)

    def primaries(self, zones: set[str] | None = None) -> list[tuple[str, str]]:
        return sorted((z.name, instance_id(k)) for z in self.desired.zones for k in z.primaries
                      if zones is None or z.name in zones)


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> World:
    return World(monkeypatch)


def test_a_reading_in_full_transfers_every_zone_whatever_is_remembered(world: World) -> None:
    observed = world.observe(IN_FULL)
    assert sorted(world.transferred) == world.primaries()
    assert world.store.refreshed == [True] and observed.focus is None
    assert not any(seen.remembered for zone in observed.zones.values() for seen in zone.values())


def test_a_remembered_reading_asks_every_serial_and_transfers_nothing_unmoved(world: World) -> None:
    observed = world.observe(REMEMBERED)
    assert world.transferred == [] and world.store.refreshed == [False]
    assert sorted((z, s) for s, z in world.asked if (z, s) in world.primaries()) == world.primaries()
    assert all(observed.zones[z][s].remembered for z, s in world.primaries())
    # and the secondary, reached through one address, whether it holds its zones: one exchange per server
    assert sorted(world.exchanges) == sorted(world.endpoints)
    assert observed.serials == {s: {z.name: 7 for z in world.desired.zones} for s in world.endpoints}


def test_a_server_primary_of_some_zones_and_secondary_of_others_is_asked_once(world: World) -> None:
    primary, secondary = sorted(world.endpoints)
    moved = world.desired.zones[0].name  # now a secondary zone on the primary's server
    world.store.zones[moved] = ZoneOwnership(moved, {primary: "secondary"}, set())
    world.desired.zones[0] = dataclasses.replace(world.desired.zones[0], primaries=[],
                                                 secondaries=list(world.desired.zones[0].primaries))
    world.observe(REMEMBERED)
    assert sorted(world.exchanges) == [primary, secondary]
    assert sorted(z for s, z in world.asked if s == primary) == sorted(z.name for z in world.desired.zones)


def test_a_focused_reading_asks_only_the_zones_the_revision_touches(world: World) -> None:
    touched = world.desired.zones[1]
    world.memory.sources[touched.name] = {}  # applied from other RRsets: the revision touches it
    observed = world.observe(FOCUSED)
    assert observed.focus == {touched.name}
    assert {z for _, z in world.asked} == {touched.name} and world.transferred == []
    assert sorted(observed.zones) == sorted(z.name for z in world.desired.zones)  # the others as remembered


def test_a_focused_reading_asks_the_zones_of_a_pod_waiting_for_them(world: World) -> None:
    secondary = instance_id(world.desired.zones[0].secondaries[0])
    pod = Server("10.0.0.9", "127.0.0.1", 1, "http://127.0.0.1:1", waiting="dns-secondary-0-abc")
    world.endpoints[secondary] = dataclasses.replace(world.endpoints[secondary], servers=(pod,))
    observed = world.observe(FOCUSED)
    assert observed.focus == {z.name for z in world.desired.zones}  # every zone is on that instance


def test_a_scope_of_some_zones_reads_those_alone(world: World) -> None:
    only = frozenset({world.desired.zones[2].name})
    observed = world.observe(FOCUSED, Scope(only, False, ScopeRule.CHANGED_ZONES))
    assert observed.focus == set(only) and set(observed.zones) == set(only) and set(observed.ownership) == set(only)
    assert {z for _, z in world.asked} == set(only)
    stale = world.observe(IN_FULL, Scope.stale(only))
    assert set(stale.zones) == set(only) and stale.focus is None
    assert sorted(world.transferred) == world.primaries(set(only))
