"""Start-up is not failure, and the agent's own work is not drift: an instance with no pod yet (just
created, starting, scaled to 0) is waited for - nothing asked of it, nothing planned on it, the zone
"waiting for <instance> to start", the run not partial - and what the agent then does to a new pod
(the zone created, its records written) or to moved servers is told apart from what someone else
changed (plan/changes.py `drifted`), which alone the drift counters and "drift repaired" count."""

from __future__ import annotations

import pathlib
from typing import Any

from agent.desired import nameservers
from agent.model.observed import ZoneObserved
from agent.observe import instancereach
from agent.outcome import report, zoneconditions
from agent.plan import build, changes, zonediff
from agent.reconcile.dnsresult import ZoneResult
from tests.support.podworld import POD_A, POD_B, PRIMARY, SECONDARY, _desired, _world, _zone_changes


class _Api:
    """Endpoints as the cluster has them: none yet for an instance just created."""

    def __init__(self, found: dict[str, dict[str, Any]]) -> None:
        self.found = found

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.found.get(name) if kind == "Endpoints" else None


def test_an_instance_with_no_pod_yet_is_waited_for_not_written_through_its_service(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    ready = {"subsets": [{"addresses": [{"ip": "10.1.0.4"}], "ports": [{"name": "dns-tcp", "port": 5353}]}]}
    eps = instancereach.from_cluster(_Api({"dns-primary-0": ready}), desired,  # type: ignore[arg-type]
                                     token_file=tmp_path / "none", agent_addresses=[])
    assert eps[PRIMARY].starting == "" and eps[SECONDARY].starting == "waiting for dns-secondary-0 to start"
    unknown = instancereach.from_cluster(_Api({}), desired, token_file=tmp_path / "none",  # type: ignore[arg-type]
                                         agent_addresses=[], read_in=lambda key: False)
    assert unknown[PRIMARY].starting == ""  # its Endpoints may not be read: not known to be starting


def test_a_first_apply_to_servers_that_start_plans_nothing_there_and_says_it_waits(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    waiting = {PRIMARY: "waiting for dns-primary-0 to start", SECONDARY: "waiting for dns-secondary-0 to start"}
    name, world = _world(desired, starting=waiting)
    plan = zonediff.plan_zone(name, desired.zones[0], world)
    assert (plan.creates, plan.errors, plan.records) == ([], {}, {})
    assert plan.waiting == waiting and not plan.in_sync and not plan.blocked
    result = ZoneResult(plan.key, name, instances={i: ("Claimed", why) for i, why in waiting.items()})
    conds = {c["type"]: c for c in zoneconditions.zone(result)}
    assert (conds["Ready"]["status"], conds["Ready"]["reason"]) == ("False", "WaitingForServers")
    assert conds["Progressing"]["message"] == "waiting for dns-primary-0 to start; waiting for dns-secondary-0 to start"
    assert conds["Degraded"]["status"] == "False"
    doc = report.Report("r", "a" * 40, "applied", {}, "t", 1.0, waiting=sorted(waiting.values())).as_dict()
    assert report.summary_lines(doc)[-1] == ("waiting: waiting for dns-secondary-0 to start: its zones are written "
                                             "once its pods run")


def test_a_secondary_waits_for_its_primaries_and_a_primary_is_written_without_its_secondary(
        tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    name, world = _world(desired, starting={PRIMARY: "waiting for dns-primary-0 to start"})
    plan = zonediff.plan_zone(name, desired.zones[0], world)
    assert plan.creates == [] and plan.waiting[SECONDARY] == "waiting for its primaries to start"
    name, world = _world(desired, starting={SECONDARY: "waiting for dns-secondary-0 to start"})
    plan = zonediff.plan_zone(name, desired.zones[0], world)
    assert sorted(s for s, _ in plan.creates) == [POD_A, POD_B] and SECONDARY in plan.waiting


def test_a_new_pods_zone_and_records_are_the_agents_own_work_and_a_zone_gone_by_hand_is_drift(
        tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    zone = desired.zones[0]
    served = ZoneObserved(dict(zone.rrsets), serial=7)
    name, world = _world(desired, starting={}, fresh=frozenset({POD_B}), placed=True,
                         seen={POD_A: served, POD_B: ZoneObserved(None)})
    plan = _zone_changes(desired, world, name)
    new_pod = [c for c in plan if getattr(c.target, "instance", "") == POD_B]
    assert [c.reason for c in new_pod] == [build.NEW_POD]
    records = [c for c in plan if c.target.layer == "records"]
    assert records and {c.reason for c in records} == {build.WITH_ZONE}
    assert len(records) == len(set(zone.rrsets) - set(nameservers.created(zone)))
    assert not any(changes.drifted(c) for c in plan)
    # the same pod Ready (not waiting) and without the zone: someone deleted it there
    name, world = _world(desired, starting={}, placed=True, seen={POD_A: served, POD_B: ZoneObserved(None)})
    plan = _zone_changes(desired, world, name)
    gone = [c for c in plan if getattr(c.target, "instance", "") == POD_B]
    assert [c.reason for c in gone] == [build.ZONE_GONE] and all(changes.drifted(c) for c in gone)
    # an RRset changed on a server that had the zone, for the revision already applied: drift
    edited = dict(zone.rrsets)
    key = next(k for k in edited if k[1] == "A" and k not in nameservers.created(zone))
    edited.pop(key)
    name, world = _world(desired, starting={}, placed=True, seen={POD_A: ZoneObserved(edited, serial=8),
                                                                  POD_B: served})
    plan = _zone_changes(desired, world, name)
    assert [(c.target.name, c.target.rtype) for c in plan if changes.drifted(c)] == [key]  # type: ignore[union-attr]


