"""A DNSZone's InSync condition: whether every server of the zone serves exactly the RRsets Git
wants, from what the run read and wrote - served, drifted (naming the servers and how many RRsets
differ) or not known - and its zoneHash, in the statuses a sync writes."""

from __future__ import annotations

import pathlib

from agent.clients.rfc2136 import Check
from agent.desired import hierarchy, zonehash
from agent.load import loader
from agent.model.rrchange import RRChange
from agent.model.rrset import RRset
from agent.outcome import status, zoneconditions
from agent.plan.changes import Plan
from agent.plan.zoneplan import RRsetPlan, ZonePlan
from agent.reconcile.dnsresult import DnsResult, ZoneResult
from agent.sources import localdir

SAMPLE = pathlib.Path(__file__).resolve().parents[2] / "sample-repo"

Z = "example.com."
HASH = "sha256:0123456789abcdef"
P0, P1, S0 = "dns/primary-0", "dns/primary-1", "dns/secondary-0"
WWW = RRset(Z, f"www.{Z}", "A", 300, ("192.0.2.1",))
API = RRset(Z, f"api.{Z}", "A", 300, ("192.0.2.2",))
HAND = RRset(Z, f"www.{Z}", "A", 300, ("203.0.113.9",))


def _records(changes: list[RRChange] | None = None,
             conflicts: list[str] | None = None) -> RRsetPlan:
    return RRsetPlan(Z, changes or [], conflicts or [], set())


def _result(applied_on: list[str], **kw: object) -> ZoneResult:
    zr = ZoneResult(None, Z, primaries={P0, P1}, applied_on=applied_on, **kw)  # type: ignore[arg-type]
    for server in (P0, P1, S0):
        zr.servers.setdefault(server, ("Configured", "zone configured"))
    return zr


def _in_sync(plan: ZonePlan | None, zr: ZoneResult | None) -> dict[str, str]:
    return zoneconditions.in_sync(HASH, plan, zr)


def test_a_zone_whose_plan_was_written_everywhere_is_served_by_every_server() -> None:
    plan = ZonePlan(Z, None, [P0, P1], [S0], records={
        P0: _records([RRChange("update", HAND, WWW)]), P1: _records()})
    done = _in_sync(plan, _result([P0, P1], checks=[Check(S0, Z, "SOA", True, ("serial 7",))]))
    assert done["status"] == "True" and done["reason"] == "Served"
    assert done["message"] == f"3/3 servers serve {HASH}"


def test_changes_left_on_a_primary_are_drift_naming_it_and_counting_the_rrsets() -> None:
    """What a detect-mode plan or a run stopped part-way leaves: the primary still serves its own."""
    plan = ZonePlan(Z, None, [P0, P1], [S0], records={
        P0: _records([RRChange("update", HAND, WWW), RRChange("create", None, API)]),
        P1: _records()})
    cond = _in_sync(plan, _result([P1]))  # P0 took none of them
    assert cond["status"] == "False" and cond["reason"] == "Drifted"
    assert cond["message"] == f"2/3 servers serve {HASH}; drifted: {P0} (2 RRsets differ)"
    # part-way: the first change was written before it stopped, one is left
    half = _in_sync(plan, _result([P1], written=[RRChange("update", HAND, WWW)]))
    assert half["message"].endswith(f"drifted: {P0} (1 RRset differs)")


def test_a_foreign_rrset_in_the_way_is_drift_even_when_everything_else_was_written() -> None:
    plan = ZonePlan(Z, None, [P0, P1], [S0], records={
        P0: _records(conflicts=[f"www.{Z} A: not written by the agent"]), P1: _records()})
    cond = _in_sync(plan, _result([P0, P1]))
    assert (cond["status"], cond["reason"]) == ("False", "Drifted")
    assert f"drifted: {P0} (1 RRset differs)" in cond["message"]


def test_a_secondary_behind_its_primary_or_not_answering_is_drift() -> None:
    plan = ZonePlan(Z, None, [P0, P1], [S0], records={P0: _records(), P1: _records()})
    behind = _in_sync(plan, _result([P0, P1], checks=[
        Check(S0, Z, "SOA", False, ("behind its primary",))]))
    assert behind["message"].endswith(f"drifted: {S0} (behind its primary's serial)")
    missing = _in_sync(plan, _result([P0, P1], checks=[
        Check(S0, f"www.{Z}", "A", False, ()), Check(S0, f"api.{Z}", "A", False, ())]))
    assert missing["message"] == f"2/3 servers serve {HASH}; drifted: {S0} (2 RRsets differ)"


def test_a_server_that_failed_or_waits_for_its_pods_is_not_known() -> None:
    plan = ZonePlan(Z, None, [P0, P1], [S0], records={P0: _records(), P1: _records()})
    zr = _result([P0, P1])
    zr.servers[S0] = ("Failed", "connection refused")
    cond = _in_sync(plan, zr)
    assert (cond["status"], cond["reason"]) == ("Unknown", "NotKnown")
    assert cond["message"] == f"2/3 servers serve {HASH}; not known: {S0}"
    zr.servers[S0] = ("Claimed", "waiting for pods")
    assert _in_sync(plan, zr)["status"] == "Unknown"
    # drift elsewhere wins, and the unknown server is still named
    plan = ZonePlan(Z, None, [P0, P1], [S0], records={
        P0: _records([RRChange("create", None, API)]), P1: _records()})
    both = _in_sync(plan, _result([P1], servers={S0: ("Failed", "refused")}))
    assert both["status"] == "False" and both["message"].endswith(f"; not known: {S0}")


def test_a_zone_not_read_or_on_no_server_is_not_in_sync() -> None:
    assert _in_sync(None, None)["status"] == "Unknown"
    assert HASH in _in_sync(None, None)["message"]
    nowhere = _in_sync(None, ZoneResult(None, Z))
    assert (nowhere["status"], nowhere["reason"]) == ("False", "NoInstances")


def test_without_the_plan_a_result_still_says_its_conflicts() -> None:
    zr = _result([P0], conflicts=[f"www.{Z} A: foreign"])
    cond = _in_sync(None, zr)
    assert cond["status"] == "False" and f"{P0} (1 RRset differs)" in cond["message"]


def test_every_dnszone_status_carries_its_hash_and_the_condition_carries_it_too() -> None:
    """What `kubectl get dnszones` shows: the Hash and InSync columns, and the hash in the
    condition's message (the one a CRD that prunes `zoneHash` keeps)."""
    manifest = loader.load_files(localdir.files(SAMPLE), default_namespace="dns-system")
    desired = hierarchy.build(manifest)
    zones = [z for z in desired.zones if z.instances]
    results, plans = [], []
    for zone in zones:
        servers = [f"{i.namespace}/{i.name}" for i in zone.instances]
        primaries = [f"{i.namespace}/{i.name}" for i in zone.primaries]
        zr = ZoneResult(zone.key, zone.name, primaries=set(primaries), applied_on=primaries)
        zr.servers = {s: ("Configured", "zone configured") for s in servers}
        results.append(zr)
        plans.append(ZonePlan(zone.name, zone, primaries, servers[len(primaries):],
                              records={p: _records() for p in primaries}))
    drifted = zones[0]
    first = plans[0].primaries[0]
    plans[0] = ZonePlan(drifted.name, drifted, plans[0].primaries, plans[0].secondaries,
                        records={**plans[0].records, first: _records([RRChange(
                            "update", HAND, WWW)])})
    results[0].applied_on.remove(first)
    shown = status.statuses(desired, {}, revisions={}, generations={},
                            dns=DnsResult(results, []), plan=Plan([], zones=plans))
    assert zones
    for zone in zones:
        st = shown[zone.key]
        digest = zonehash.of(zone)
        assert st["zoneHash"] == digest == zonehash.digest(zone.rrsets)
        cond = next(c for c in st["conditions"] if c["type"] == "InSync")
        assert digest in cond["message"]
        if zone is drifted:
            assert cond["status"] == "False" and f"drifted: {first} (1 RRset differs)" in cond[
                "message"]
        else:
            assert cond["status"] == "True", cond
    assert len({shown[z.key]["zoneHash"] for z in zones}) == len(zones)
