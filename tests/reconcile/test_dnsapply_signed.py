"""A signed zone just written is read again by the next run (issue 26, found on the real node).

After the agent writes a zone, it remembers what the primary serves and its SOA serial, so that an
unchanged zone is not transferred again. For a zone with `dnssecPolicy`, named adds the DNSKEY and
the signatures itself, after the write and maybe before the agent reads the serial: remembered with
that serial, the zone was never transferred again, and the DNSZone status never showed its DS.
"""

from __future__ import annotations

import pathlib
import shutil

import pytest

from agent.clients import dnsquery
from agent.clients import endpoints as endpoint_map
from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint, Server
from agent.clients.statestore import FileStore
from agent.desired import hierarchy
from agent.model.observed import DnsObserved, ZoneObserved
from agent.model.ownership import ZoneOwnership
from agent.observe import dnsobserve
from agent.plan import zonediff
from agent.reconcile import dnsapply
from agent.reconcile.dnsresult import ZoneResult
from tests.conftest import SAMPLE, load_dir

PRIMARY = "dns-system/dns-primary-0"


def _plan(tmp_path: pathlib.Path, signed: bool) -> zonediff.ZonePlan:
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    if signed:
        cluster = root / "infrastructure" / "cluster.yaml"
        cluster.write_text(cluster.read_text().replace(
            "    recursion: false\n", "    recursion: false\n    dnssec:\n      signing: {enabled: true, policy: p}\n"))
        org = root / "zones" / "example-org.yaml"
        org.write_text(org.read_text().replace("  zoneName: example.org\n", "  zoneName: example.org\n  dnssecPolicy: p\n"))
    desired = hierarchy.build(load_dir(root))
    zone = next(z for z in desired.zones if z.name == "example.org.")
    assert bool(zone.spec.dnssec_policy) is signed
    eps = {PRIMARY: Endpoint(PRIMARY, "svc", 53, "http://svc", servers=(Server("10.1.0.4", "10.1.0.4", 5353, "http://a"),))}
    pod = f"{PRIMARY}@10.1.0.4"
    world = DnsObserved({zone.name: ZoneOwnership(zone.name)}, {zone.name: {pod: ZoneObserved(None)}}, set(eps),
                        servers=dnsobserve.reach(eps), pods=endpoint_map.servers_of(eps))
    plan = zonediff.plan_zone(zone.name, zone, world)
    assert plan.records[pod].changes  # created and written in this run
    return plan


@pytest.mark.parametrize("signed", [True, False])
def test_a_signed_zone_just_written_is_not_remembered_as_unmoved(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
                                                                  signed: bool) -> None:
    plan = _plan(tmp_path, signed)
    monkeypatch.setattr(dnsquery, "serials", lambda *a, **k: {plan.name: 7})
    eps = {PRIMARY: Endpoint(PRIMARY, "svc", 53, "http://svc", servers=(Server("10.1.0.4", "10.1.0.4", 5353, "http://a"),))}
    runner = dnsapply.DnsApply(eps, FileStore(tmp_path / "state"), dnsapply.DnsApplyOptions(), Deadline(30))
    result = ZoneResult(plan.key, plan.name)
    runner.confirming.remember(plan, result)
    runner.confirming.learn()  # its serial, asked once every zone is written
    seen = result.after[f"{PRIMARY}@10.1.0.4"]
    # signed: its keys are named's, not known yet; no serial, so the next run transfers it and sees them
    assert seen.serial == (None if signed else 7)
