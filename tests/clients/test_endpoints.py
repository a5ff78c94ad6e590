"""Every pod of an instance is its own server (issues 25, 26), decided without a server: the pods come
from the instance's Endpoints (in a cluster) or the endpoint map's `pods:`; a pod without the zone gets
it created and every RRset written; each pod's RRsets are planned from what it serves; the DNSZone
status says on how many pods the zone is served."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

import pytest

from agent.clients import endpoints as endpoint_map
from agent.clients import rfc2136
from agent.desired import hierarchy, nameservers
from agent.desired.hierarchy import Desired
from agent.errors import ConfigError
from agent.model.observed import ZoneObserved
from agent.observe import instancereach
from agent.outcome import zoneconditions
from agent.plan import zonediff
from agent.reconcile import dnsresult
from tests.conftest import SAMPLE, load_dir
from tests.support.podworld import POD_A, POD_B, PRIMARY, SECONDARY, _desired, _pods_world


# -- where the pods come from -----------------------------------------------------------------------
def test_the_endpoint_map_lists_several_pods_of_one_instance(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "endpoints.yaml"
    path.write_text("instances:\n"
                    f"  {PRIMARY}:\n"
                    "    pods:\n"
                    "      - {dns: 127.0.0.21:5301, api: http://127.0.0.1:8081/}\n"
                    "      - {dns: 127.0.0.22:5302, api: http://127.0.0.1:8082}\n"
                    f"  {SECONDARY}: {{dns: 127.0.0.23:5303, api: http://127.0.0.1:8083}}\n")
    eps = endpoint_map.load_endpoints(path)
    servers = endpoint_map.by_server(eps)
    assert sorted(servers) == [f"{PRIMARY}@127.0.0.21:5301", f"{PRIMARY}@127.0.0.22:5302", SECONDARY]
    second = servers[f"{PRIMARY}@127.0.0.22:5302"]
    assert (second.dns_host, second.dns_port, second.api_url) == ("127.0.0.22", 5302, "http://127.0.0.1:8082")
    # a secondary transfers from, and is notified by, every pod
    assert eps[PRIMARY].transfer_addresses() == ["127.0.0.21:5301", "127.0.0.22:5302"]
    assert endpoint_map.servers_of(eps) == {PRIMARY: (f"{PRIMARY}@127.0.0.21:5301", f"{PRIMARY}@127.0.0.22:5302")}


@pytest.mark.parametrize(("entry", "message"), [
    ("{dns: 127.0.0.1:53, api: http://x, pods: [{dns: 127.0.0.2:53, api: http://y}]}", "either dns and api"),
    ("{pods: []}", "a list of mappings with dns and api"),
    ("{pods: [{dns: 127.0.0.2:53, api: http://y, port: 1}]}", r"pods\[0\]: unknown keys \['port'\]"),
    ("{pods: [{dns: 127.0.0.2:53, api: ftp://y}]}", r"pods\[0\]\.api: expected an http\(s\) URL"),
    ("{pods: [{dns: 127.0.0.2:53, api: http://y}, {dns: 127.0.0.2:53, api: http://z}]}", "the same dns address"),
])
def test_a_bad_pods_list_says_where_and_how_to_fix_it(tmp_path: pathlib.Path, entry: str, message: str) -> None:
    path = tmp_path / "endpoints.yaml"
    path.write_text(f"instances:\n  {PRIMARY}: {entry}\n")
    with pytest.raises(ConfigError, match=message) as caught:
        endpoint_map.load_endpoints(path)
    assert f"instances.{PRIMARY}" in str(caught.value)


class _Api:
    def __init__(self, found: dict[str, dict[str, Any]]) -> None:
        self.found = found

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.found.get(name) if kind == "Endpoints" else None


def _subset(ready: list[str], api_port: int = 8080) -> dict[str, Any]:
    return {"subsets": [{"addresses": [{"ip": ip} for ip in ready], "notReadyAddresses": [{"ip": "10.1.0.99"}],
                         "ports": [{"name": "dns-tcp", "port": 5353, "protocol": "TCP"},
                                   {"name": "http", "port": api_port}]}]}


def test_in_a_cluster_each_ready_pod_is_written_on_its_own_address(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    api = _Api({"dns-primary-0": _subset(["10.1.0.5", "10.1.0.4"], api_port=9090), "dns-secondary-0": _subset([])})
    eps = instancereach.from_cluster(api, desired, token_file=tmp_path / "none",  # type: ignore[arg-type]
                                     agent_addresses=[])
    pods = endpoint_map.by_server({PRIMARY: eps[PRIMARY]})
    assert sorted(pods) == [POD_A, POD_B]  # the pod that is not ready is not written (the next run catches it up)
    assert (pods[POD_A].dns_host, pods[POD_A].dns_port, pods[POD_A].api_url) == ("10.1.0.4", 5353,
                                                                                 "http://10.1.0.4:9090")
    assert pods[POD_A].tsig == eps[PRIMARY].tsig and pods[POD_A].token == eps[PRIMARY].token
    # no ready pod listed: the instance is written through its Service, as before
    assert endpoint_map.by_server({SECONDARY: eps[SECONDARY]}) == {SECONDARY: eps[SECONDARY]}


# -- the plan: every pod, and the one without the zone caught up -------------------------------------


def test_a_pod_without_the_zone_gets_it_created_and_every_rrset_written(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    zone = desired.zones[0]
    name, world = _pods_world(desired, {POD_A: ZoneObserved(dict(zone.rrsets), serial=7), POD_B: ZoneObserved(None)})
    plan = zonediff.plan_zone(name, zone, world)
    assert plan.creates == [(POD_B, "primary")]  # only the new pod: the other serves the zone already
    assert plan.bodies[POD_B]["zoneType"] == "primary"
    assert plan.records[POD_A].changes == []
    # every RRset but the apex NS and IPv4 glue, which the zone API's create writes
    written = set(zone.rrsets) - set(nameservers.created(zone))
    assert sorted(c.key for c in plan.records[POD_B].changes) == sorted(written)
    assert {c.action for c in plan.records[POD_B].changes} == {"create"}
    # the placement is the instance's; the agent still owns every RRset; the intent covers the new pod
    assert plan.placements_after == {PRIMARY: "primary", SECONDARY: "secondary"}
    assert plan.managed_after == set(zone.rrsets) and set(plan.intent().writes) == written
    assert not plan.in_sync and plan.transfers[POD_B].also_notify == tuple(world.servers[SECONDARY].addresses)


def test_every_pod_of_a_new_zone_is_created_and_written(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    zone = desired.zones[0]
    name, world = _pods_world(desired, {POD_A: ZoneObserved(None), POD_B: ZoneObserved(None)}, placed=False)
    plan = zonediff.plan_zone(name, zone, world)
    assert plan.creates == [(SECONDARY, "secondary"), (POD_A, "primary"), (POD_B, "primary")]
    assert set(plan.records) == {POD_A, POD_B}
    assert all(len(p.changes) == len(set(zone.rrsets) - set(nameservers.created(zone))) for p in plan.records.values())
    # the secondary transfers from both pods
    assert plan.bodies[SECONDARY]["zoneConfig"]["primaries"] == ["10.1.0.4:5353", "10.1.0.5:5353"]


def test_a_pod_holding_other_data_is_a_conflict_there_and_the_rrset_stops_being_owned(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    zone = desired.zones[0]
    key = sorted(k for k in zone.rrsets if k[1] == "A")[0]
    other = dict(zone.rrsets)
    other[key] = dataclasses.replace(zone.rrsets[key], rdatas=("198.51.100.1",), objects=())
    name, world = _pods_world(desired, {POD_A: ZoneObserved(dict(zone.rrsets)), POD_B: ZoneObserved(other)})
    owned = world.ownership[name]
    owned.managed.discard(key)  # someone else wrote it on pod B, not the agent
    plan = zonediff.plan_zone(name, zone, world)
    assert [c for c in plan.conflicts if c.startswith(f"{key[0]} {key[1]}:")]
    assert key not in plan.managed_after and plan.records[POD_B].changes == []


def test_a_secondary_pod_found_without_the_zone_gets_it_created(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    zone = desired.zones[0]
    sec_a, sec_b = f"{SECONDARY}@10.1.0.7", f"{SECONDARY}@10.1.0.8"
    seen = {POD_A: ZoneObserved(dict(zone.rrsets)), POD_B: ZoneObserved(dict(zone.rrsets)), sec_b: ZoneObserved(None)}
    name, world = _pods_world(desired, seen, secondary_pods=("10.1.0.7", "10.1.0.8"))
    plan = zonediff.plan_zone(name, zone, world)
    assert plan.creates == [(sec_b, "secondary")] and sec_a not in plan.bodies
    assert plan.bodies[sec_b]["zoneConfig"]["primaries"] == ["10.1.0.4:5353", "10.1.0.5:5353"]


# -- what the status says -----------------------------------------------------------------------------
def _result(desired: Desired, failed_on: str | None) -> dnsresult.ZoneResult:
    zone = desired.zones[0]
    name, world = _pods_world(desired, {POD_A: ZoneObserved(dict(zone.rrsets)), POD_B: ZoneObserved(dict(zone.rrsets))})
    plan = zonediff.plan_zone(name, zone, world)
    result = dnsresult.ZoneResult(zone.key, name, primaries=set(plan.primaries))
    result.servers = {POD_A: ("Configured", "primary zone configured"),
                      POD_B: ("Configured", "primary zone configured"),
                      SECONDARY: ("Configured", "secondary zone configured")}
    result.checks = [rfc2136.Check(s, "www.example.com.", "A", s != failed_on, ()) for s in (POD_A, POD_B)]
    dnsresult.served(plan, result)
    return result


def test_the_zone_status_says_on_how_many_pods_it_is_served(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    result = _result(desired, None)
    assert result.instances[PRIMARY] == ("Configured", "primary zone configured, served by 2/2 pods")
    assert result.instances[SECONDARY] == ("Configured", "secondary zone configured")
    ready = zoneconditions.zone(result)[0]
    assert ready["status"] == "True" and f"{PRIMARY} served by 2/2 pods" in ready["message"]

    behind = _result(desired, POD_B)
    assert behind.instances[PRIMARY][1].endswith("served by 1/2 pods")
    degraded = zoneconditions.zone(behind)[1]
    assert degraded["status"] == "True" and POD_B in degraded["message"]


def _deployment(want: int, ready: int, progressing: bool = True) -> dict[str, Any]:
    conds = [{"type": "Progressing", "status": "True" if progressing else "False", "reason": "ReplicaSetUpdated"}]
    return {"metadata": {"generation": 1}, "spec": {"replicas": want},
            "status": {"observedGeneration": 1, "readyReplicas": ready, "updatedReplicas": want, "conditions": conds}}


def test_a_zone_says_which_of_its_servers_lack_ready_pods() -> None:
    zone = next(z for z in hierarchy.build(load_dir(SAMPLE)).zones if len(z.instances) == 2)
    primary, secondary = zone.instances
    applied = zoneconditions.zone(dnsresult.ZoneResult(zone.key, zone.name, instances={
        f"{i.namespace}/{i.name}": ("Configured", "") for i in zone.instances}, primaries={
        f"{primary.namespace}/{primary.name}"}))
    assert zoneconditions.served_now(zone, {primary: _deployment(1, 1), secondary: _deployment(1, 1)},
                                     applied) == applied
    one = {c["type"]: c for c in zoneconditions.served_now(
        zone, {primary: _deployment(1, 1), secondary: _deployment(2, 1)}, applied)}
    assert one["Ready"]["status"] == "True"
    assert (one["Degraded"]["status"], one["Degraded"]["reason"]) == ("True", "NotServed")
    assert f"{secondary.name} has 1/2 pods ready" in one["Degraded"]["message"]
    assert one["Progressing"]["message"] == f"waiting for {secondary.name} to start"
    none = {c["type"]: c for c in zoneconditions.served_now(
        zone, {primary: _deployment(0, 0), secondary: _deployment(1, 0, progressing=False)}, applied)}
    assert (none["Ready"]["status"], none["Ready"]["reason"]) == ("False", "NotServed")
    assert f"{primary.name} is scaled to 0 pods" in none["Ready"]["message"]


def test_a_zone_waiting_for_its_first_servers_is_not_degraded_until_one_fails() -> None:
    zone = next(z for z in hierarchy.build(load_dir(SAMPLE)).zones if len(z.instances) == 2)
    primary, secondary = zone.instances
    waiting = zoneconditions.zone(dnsresult.ZoneResult(zone.key, zone.name, instances={
        f"{i.namespace}/{i.name}": ("Claimed", f"waiting for {i.name} to start") for i in zone.instances}))
    starting = {c["type"]: c for c in zoneconditions.served_now(
        zone, {primary: _deployment(1, 0), secondary: _deployment(1, 0)}, waiting)}
    assert (starting["Ready"]["status"], starting["Ready"]["reason"]) == ("False", "WaitingForServers")
    assert starting["Degraded"]["status"] == "False" and starting["Progressing"]["status"] == "True"
    crashing = _deployment(1, 0, progressing=False)
    crashing["status"]["conditions"].append({"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                                             "message": "quota exceeded"})
    failed = {c["type"]: c for c in zoneconditions.served_now(zone, {primary: crashing,
                                                                     secondary: _deployment(1, 0)}, waiting)}
    assert (failed["Degraded"]["status"], failed["Degraded"]["reason"]) == ("True", "NotServed")
    assert f"{primary.name}: " in failed["Degraded"]["message"] and "quota exceeded" in failed["Degraded"]["message"]


def test_a_zone_follows_the_pods_of_the_instances_written_pod_by_pod_not_of_those_of_an_endpoint_map() -> None:
    from agent.outcome import status

    desired = hierarchy.build(load_dir(SAMPLE))
    zone = next(z for z in desired.zones if len(z.instances) == 2)
    primary, secondary = zone.instances
    result = dnsresult.ZoneResult(zone.key, zone.name, instances={
        f"{i.namespace}/{i.name}": ("Configured", "") for i in zone.instances}, primaries={
        f"{primary.namespace}/{primary.name}"})
    down = {primary: _deployment(1, 1), secondary: _deployment(1, 0, progressing=False)}

    def ready(served_by_pods: set[Any]) -> str:
        shown = status.statuses(desired, {}, revisions={}, generations={},
                                dns=dnsresult.DnsResult([result], []), only={zone.key},
                                live=status.LiveInstances(deployments=down,
                                                          served_by_pods=served_by_pods))[zone.key]
        return next(c["status"] for c in shown["conditions"] if c["type"] == "Degraded")

    assert ready(set()) == "False"  # reached through an endpoint map: its Deployment says nothing of it
    assert ready({primary, secondary}) == "True"  # its pods are the servers: one of them is down
