"""What a DNS apply asks once every zone is written (agent/reconcile/dnsconfirm.py): each written
primary's serial once for all its zones, the secondaries of zones in sync by the serials observe
read, and which servers answered an SOA after the writes."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from agent.clients import dnsquery
from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint
from agent.desired import hierarchy
from agent.model.observed import DnsObserved, ZoneObserved
from agent.model.ownership import ZoneOwnership
from agent.model.servers import instance_id
from agent.observe import dnsobserve
from agent.plan import build
from agent.reconcile import dnsconfirm
from agent.reconcile.dnsresult import ZoneResult
from tests.conftest import SAMPLE, load_dir


class Asked:
    """dnsquery.serials, answering `serial` for every zone; the calls, by server."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, serial: int) -> None:
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.serial = serial
        monkeypatch.setattr(dnsquery, "serials", self)

    def __call__(self, endpoint: Endpoint, zones: Sequence[str], **_: Any) -> dict[str, int | None]:
        self.calls.append((endpoint.instance, tuple(zones)))
        return {z: self.serial for z in zones}


def _plans(seen_rrsets: bool) -> tuple[list[Any], dict[str, Endpoint]]:
    """The sample's zones, each on its primary and secondary; observed with every RRset (in sync) or none."""
    desired = hierarchy.build(load_dir(SAMPLE))
    eps = {i: Endpoint(i, "127.0.0.1", 1, "http://127.0.0.1:1")
           for i in sorted({instance_id(k) for z in desired.zones for k in z.instances})}
    owned = {z.name: ZoneOwnership(z.name, {instance_id(k): "primary" for k in z.primaries}
                                   | {instance_id(k): "secondary" for k in z.secondaries}, set(z.rrsets))
             for z in desired.zones}
    seen = {z.name: {instance_id(k): ZoneObserved(dict(z.rrsets) if seen_rrsets else {}, serial=1)
                     for k in z.primaries} for z in desired.zones}
    world = DnsObserved(owned, seen, set(eps), servers=dnsobserve.reach(eps))
    return build.zone_plans(desired, world), eps


def _result(zp: Any, *, written: bool) -> ZoneResult:
    result = ZoneResult(zp.key, zp.name, primaries=set(zp.primaries))
    for instance in zp.secondaries:
        result.servers[instance] = ("Configured", "secondary zone configured")
    result.applied_on = list(zp.records)  # in sync: as DnsApply.zone reports it
    if written:
        result.changes = zp.rrset_changes
    return result


def test_the_written_primaries_serials_are_asked_once_for_all_their_zones(monkeypatch: pytest.MonkeyPatch) -> None:
    plans, eps = _plans(seen_rrsets=False)
    assert len(plans) == 3 and all(zp.rrset_changes for zp in plans)
    asked = Asked(monkeypatch, 9)
    confirming = dnsconfirm.Confirming(eps, Deadline(30), {})
    results = [_result(zp, written=True) for zp in plans]
    for zp, result in zip(plans, results, strict=True):
        confirming.remember(zp, result)
        confirming.queue(zp, result)
    assert asked.calls == []  # nothing asked while zones are being written
    confirming.learn()
    primary = plans[0].primaries[0]
    assert asked.calls == [(primary, tuple(zp.name for zp in plans))]
    assert [r.after[primary].serial for r in results] == [9, 9, 9]
    assert [w.serial for _, w in confirming.queued] == [9, 9, 9]  # what the secondaries must reach
    assert confirming.answered == {primary: {zp.name for zp in plans}}
    # what each primary serves now: the created zone's RRsets as written
    assert all(set(zp.zone.rrsets) <= set(r.after[primary].rrsets or {}) for zp, r in zip(plans, results, strict=True))


def test_a_secondary_of_zones_in_sync_is_judged_by_the_serials_observe_read(monkeypatch: pytest.MonkeyPatch) -> None:
    plans, eps = _plans(seen_rrsets=True)
    secondary = plans[0].secondaries[0]
    asked = Asked(monkeypatch, 1)
    in_sync = [(zp, _result(zp, written=False)) for zp in plans]
    observed = {secondary: {zp.name: 1 for zp in plans} | {plans[1].name: 0}}  # one zone behind its primary
    confirming = dnsconfirm.Confirming(eps, Deadline(30), observed)
    confirming.catch_up(in_sync)
    assert asked.calls == [] and [w.zone for _, w in confirming.queued] == [plans[1].name]

    unseen = dnsconfirm.Confirming(eps, Deadline(30), {})  # observe did not ask it: asked once
    unseen.catch_up(in_sync)
    assert asked.calls == [(secondary, tuple(zp.name for zp in plans))] and unseen.queued == []


def test_a_zone_with_nothing_written_is_confirmed_at_its_primarys_serial_now(monkeypatch: pytest.MonkeyPatch) -> None:
    plans, eps = _plans(seen_rrsets=True)
    zp = dataclasses.replace(plans[0])
    result = _result(zp, written=False)
    result.after = {p: ZoneObserved({}, serial=None) for p in zp.records}  # its serial not known
    asked = Asked(monkeypatch, 5)
    confirming = dnsconfirm.Confirming(eps, Deadline(30), {})
    confirming.queue(zp, result)
    confirming.learn()
    assert asked.calls == [(zp.primaries[0], (zp.name,))] and confirming.queued[0][1].serial == 5
