"""Transfers between generated servers and instance readiness, rendered without a server (issues 25, 26):
a secondary's `primaries` and a primary's `also-notify` are pod addresses with the DNS container port
(BIND takes no names there), the primary's zone allows transfer to its secondaries' addresses, and a
Bind9Instance is Ready only when its Deployment's pods are."""

from __future__ import annotations

import pathlib
import shutil
from typing import Any

import pytest

from agent.clients.endpoints import Endpoint
from agent.desired import hierarchy, workloads, zonebody
from agent.desired.hierarchy import Desired
from agent.errors import AgentError
from agent.model.key import ObjectKey
from agent.model.observed import DnsObserved, ZoneObserved
from agent.observe import dnsobserve, instancereach
from agent.outcome import conditions, status
from agent.plan import zonediff
from tests.conftest import SAMPLE, load_dir

PRIMARY, SECONDARY = "dns-system/dns-primary-0", "dns-system/dns-secondary-0"


def _sample(tmp_path: pathlib.Path, *, explicit: bool = True) -> Desired:
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    if not explicit:
        cluster = root / "infrastructure" / "cluster.yaml"
        cluster.write_text(cluster.read_text().replace('    allowTransfer: ["10.0.0.0/8"]\n', ""))
    return hierarchy.build(load_dir(root))


def _endpoint(instance: str, pods: tuple[str, ...] | None, acl: tuple[str, ...] | None = ("10.1.0.9",)) -> Endpoint:
    name = instance.split("/")[1]
    return Endpoint(instance, f"{name}.dns-system.svc.cluster.local", 53, f"http://{name}:8080", pods=pods,
                    transfer_acl=acl)


def _bodies(tmp_path: pathlib.Path, eps: dict[str, Endpoint]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The create bodies the plan of the zone holds for a world where neither server has it yet."""
    zone = _sample(tmp_path).zones[0]
    world = DnsObserved({}, {zone.name: {PRIMARY: ZoneObserved(None)}}, set(eps), servers=dnsobserve.reach(eps))
    plan = zonediff.plan_zone(zone.name, zone, world)
    if plan.unbuildable:
        raise AgentError("; ".join(plan.unbuildable.values()))
    return plan.bodies[PRIMARY], plan.bodies[SECONDARY]


def test_a_secondary_transfers_from_the_primary_pods_addresses_not_the_service_name(tmp_path: pathlib.Path) -> None:
    eps = {PRIMARY: _endpoint(PRIMARY, ("10.1.0.4", "fd00::4")), SECONDARY: _endpoint(SECONDARY, ("10.1.0.7",))}
    primary, secondary = _bodies(tmp_path, eps)
    assert secondary["zoneConfig"] == {"primaries": ["10.1.0.4:5353", "[fd00::4]:5353"]}
    assert primary["zoneConfig"]["alsoNotify"] == ["10.1.0.7:5353"]
    # the secondary's pods and the agent (its own AXFR) may transfer the zone; nobody else
    assert primary["zoneConfig"]["allowTransfer"] == ["10.1.0.7", "10.1.0.9"]
    assert "svc.cluster.local" not in str(primary) + str(secondary)


def test_an_explicit_allow_transfer_wins_and_an_endpoint_map_keeps_its_address(tmp_path: pathlib.Path) -> None:
    eps = {PRIMARY: _endpoint(PRIMARY, None, None), SECONDARY: Endpoint(SECONDARY, "127.0.0.11", 5301, "http://x")}
    primary, secondary = _bodies(tmp_path, eps)
    assert secondary["zoneConfig"] == {"primaries": ["dns-primary-0.dns-system.svc.cluster.local:53"]}
    assert primary["zoneConfig"]["alsoNotify"] == ["127.0.0.11:5301"]
    assert "allowTransfer" not in primary["zoneConfig"]  # named.conf's allow-transfer applies


def test_a_secondary_whose_primaries_have_no_ready_pod_is_not_created_and_says_why(tmp_path: pathlib.Path) -> None:
    eps = {PRIMARY: _endpoint(PRIMARY, ()), SECONDARY: _endpoint(SECONDARY, ("10.1.0.7",))}
    with pytest.raises(AgentError, match="no ready pod of its primaries dns-system/dns-primary-0"):
        _bodies(tmp_path, eps)


def test_zone_bodies_carry_addresses_as_bindcar_takes_them(tmp_path: pathlib.Path) -> None:
    zone = _sample(tmp_path).zones[0]
    body = zonebody.primary(zone, also_notify=["10.1.0.7:5353"], update_key="k", allow_transfer=["10.1.0.7"])
    assert (body["zoneConfig"]["alsoNotify"], body["zoneConfig"]["allowTransfer"]) == (["10.1.0.7:5353"], ["10.1.0.7"])
    assert "allowTransfer" not in zonebody.primary(zone, also_notify=[], update_key="k", allow_transfer=[])["zoneConfig"]


class _Api:
    """What from_cluster reads: the instances' Services' Endpoints (no Secrets: unsigned)."""

    def __init__(self, found: dict[str, dict[str, Any]]) -> None:
        self.found, self.asked = found, []

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        self.asked.append((kind, namespace, name))
        return self.found.get(name) if kind == "Endpoints" else None


def _subset(ready: list[str], not_ready: list[str]) -> dict[str, Any]:
    return {"subsets": [{"addresses": [{"ip": ip} for ip in ready],
                         "notReadyAddresses": [{"ip": ip} for ip in not_ready],
                         "ports": [{"name": "dns-udp", "port": 5353, "protocol": "UDP"},
                                   {"name": "dns-tcp", "port": 5353, "protocol": "TCP"},
                                   {"name": "http", "port": 8080}]}]}


def test_in_cluster_endpoints_are_the_ready_pods_of_allowed_namespaces(tmp_path: pathlib.Path) -> None:
    desired = _sample(tmp_path, explicit=False)
    api = _Api({"dns-primary-0": _subset(["10.1.0.5", "10.1.0.4"], ["10.1.0.6"]),
                "dns-secondary-0": _subset(["10.1.0.7"], [])})
    eps = instancereach.from_cluster(api, desired, token_file=tmp_path / "none",  # type: ignore[arg-type]
                                     agent_addresses=["10.1.0.9"])
    assert eps[PRIMARY].transfer_addresses() == ["10.1.0.4:5353", "10.1.0.5:5353"]  # not the one not ready
    assert eps[SECONDARY].transfer_hosts() == ["10.1.0.7"]
    assert eps[PRIMARY].transfer_acl == ("10.1.0.9",)
    # an instance outside the allowed namespaces: its Endpoints are not read, and it has no address
    api.asked.clear()
    shut = instancereach.from_cluster(api, desired, token_file=tmp_path / "none",  # type: ignore[arg-type]
                                      send_token_to=lambda key: False, agent_addresses=[])
    assert ("Endpoints", "dns-system", "dns-primary-0") not in api.asked and shut[PRIMARY].transfer_addresses() == []


def test_the_explicit_acl_is_told_from_the_generated_named_conf(tmp_path: pathlib.Path) -> None:
    """The default allow-transfer line (the agent's key only) is what `explicit_transfer_acl` recognises."""
    default, explicit = _sample(tmp_path / "a", explicit=False), _sample(tmp_path / "b")
    conf = default.object("ConfigMap", "dns-system", "dns-primary-0-config")
    assert conf is not None
    assert 'allow-transfer { key "dns-primary-0-rndc-key"; none; };' in conf.body["data"]["named.conf"]
    assert not instancereach.explicit_transfer_acl(default, "dns-system", "dns-primary-0-config")
    assert instancereach.explicit_transfer_acl(explicit, "dns-system", "dns-primary-0-config")
    assert instancereach.explicit_transfer_acl(default, "dns-system", "a-configmap-the-user-supplies")
    assert workloads.DNS_CONTAINER_PORT == 5353


def _deployment(replicas: int, ready: int, *, generation: int = 1, observed: int = 1,
                conditions: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"metadata": {"generation": generation}, "spec": {"replicas": replicas},
            "status": {"observedGeneration": observed, "replicas": replicas, "updatedReplicas": replicas,
                       "readyReplicas": ready, "conditions": conditions or []}}


BAD_IMAGE = [{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable",
              "message": "Deployment does not have minimum availability."},
             {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
              "message": 'ReplicaSet "dns-primary-0-5d8f" has timed out progressing.'}]


def _ready(conds: list[dict[str, str]]) -> tuple[str, str, str]:
    found = next(c for c in conds if c["type"] == "Ready")
    return found["status"], found["reason"], found["message"]


def test_instance_readiness_comes_from_its_deployment() -> None:
    assert _ready(conditions.readiness(_deployment(2, 2))) == ("True", "AllReady", "All 2 pods are ready")
    assert _ready(conditions.readiness(_deployment(2, 1))) == ("False", "PartiallyReady", "1/2 pods are ready")
    assert _ready(conditions.readiness(_deployment(1, 0, conditions=BAD_IMAGE))) == (
        "False", "NotReady", 'Waiting for pods to become ready: ProgressDeadlineExceeded: '
        'ReplicaSet "dns-primary-0-5d8f" has timed out progressing.')
    # a new template not yet rolled out is not "ready" on the strength of the old pods
    assert _ready(conditions.readiness(_deployment(1, 1, generation=2, observed=1)))[:2] == ("False", "PartiallyReady")
    assert _ready(conditions.readiness({"spec": {"replicas": 1}}))[:2] == ("False", "NotReady")  # no status yet


def test_pods_starting_are_progressing_and_a_failed_rollout_is_degraded() -> None:
    starting = conditions.readiness(_deployment(1, 0, conditions=BAD_IMAGE[:1]))
    assert {c["type"]: (c["status"], c["reason"]) for c in starting} == {
        "Ready": ("False", "NotReady"), "Progressing": ("True", "NotReady"), "Degraded": ("False", "NotReady")}
    assert _ready(starting)[2] == "Waiting for pods to become ready"  # the same in every run while they start
    failed = {c["type"]: c for c in conditions.readiness(_deployment(1, 0, conditions=BAD_IMAGE))}
    assert (failed["Degraded"]["status"], failed["Degraded"]["reason"]) == ("True", "NotReady")
    assert "has timed out progressing" in failed["Degraded"]["message"]


def test_statuses_show_each_instance_and_the_clusters_ready_count(tmp_path: pathlib.Path) -> None:
    desired = _sample(tmp_path)
    primary, secondary = ObjectKey("Bind9Instance", "dns-system", "dns-primary-0"), \
        ObjectKey("Bind9Instance", "dns-system", "dns-secondary-0")
    deployments = {primary: _deployment(1, 1), secondary: _deployment(1, 0, conditions=BAD_IMAGE)}
    shown = status.statuses(desired, {}, revisions={}, generations={},
                            live=status.LiveInstances(deployments=deployments))
    assert _ready(shown[primary]["conditions"])[:2] == ("True", "AllReady")
    assert _ready(shown[secondary]["conditions"])[:2] == ("False", "NotReady")
    assert "ProgressDeadlineExceeded" in _ready(shown[secondary]["conditions"])[2]
    cluster = shown[ObjectKey("Bind9Cluster", "dns-system", "dns")]
    assert (cluster["instanceCount"], cluster["readyInstances"]) == (2, 1)
