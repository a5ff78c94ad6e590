"""Every replica of the agent may transfer the zones (issue 28, warm standby): a zone's per-zone
allow-transfer lists the secondaries' pods and every agent pod, the list last given is part of the
zone's stored ownership, and when an agent pod moves (a standby replaced, a rolling update) the
primaries are given the new list - so a standby can follow every zone and a new leader can read them."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

from agent.clients import endpoints as endpoint_map
from agent.clients.endpoints import Endpoint, Server
from agent.model.observed import DnsObserved, ZoneObserved
from agent.model.ownership import ZoneOwnership
from agent.observe import dnsobserve
from agent.observe import instancereach as instance_endpoints
from agent.plan import zonediff
from tests.support.podworld import PRIMARY, SECONDARY, _desired


def _world(desired: Any, acl: list[str] | None, agents: tuple[str, ...]) -> tuple[Any, DnsObserved]:
    zone = desired.zones[0]
    primary = Endpoint(PRIMARY, "svc", 53, "http://svc", transfer_acl=agents,
                       servers=(Server("10.1.0.4", "10.1.0.4", 5353, "http://a"),))
    secondary = Endpoint(SECONDARY, "svc2", 53, "http://svc2", transfer_acl=agents,
                         servers=(Server("10.1.0.8", "10.1.0.8", 5353, "http://b"),))
    eps = {PRIMARY: primary, SECONDARY: secondary}
    owned = ZoneOwnership(zone.name, {PRIMARY: "primary", SECONDARY: "secondary"}, set(zone.rrsets),
                          notify=["10.1.0.8:5353"], allow_transfer=acl)
    seen = {f"{PRIMARY}@10.1.0.4": ZoneObserved(dict(zone.rrsets), serial=7),
            f"{SECONDARY}@10.1.0.8": ZoneObserved(None, serial=7)}
    return zone, DnsObserved({zone.name: owned}, {zone.name: seen}, set(eps), servers=dnsobserve.reach(eps),
                             pods=endpoint_map.servers_of(eps))


def test_a_new_agent_pod_is_given_to_the_primaries_and_remembered(tmp_path: pathlib.Path) -> None:
    zone, world = _world(_desired(tmp_path), ["10.1.0.8", "10.244.0.3"], ("10.244.0.3", "10.244.0.9"))
    plan = zonediff.plan_zone(zone.name, zone, world)
    primary_pod = f"{PRIMARY}@10.1.0.4"
    assert plan.renotify == [primary_pod] and not plan.in_sync
    assert plan.transfers[primary_pod].allow_transfer == ("10.1.0.8", "10.244.0.3", "10.244.0.9")
    assert plan.ownership_after("rev").allow_transfer == ["10.1.0.8", "10.244.0.3", "10.244.0.9"]
    assert plan.in_flight().allow_transfer == ["10.1.0.8", "10.244.0.3"]  # until written, the old list


def test_nothing_is_sent_while_the_agent_pods_stay(tmp_path: pathlib.Path) -> None:
    zone, world = _world(_desired(tmp_path), ["10.1.0.8", "10.244.0.3", "10.244.0.9"], ("10.244.0.3", "10.244.0.9"))
    plan = zonediff.plan_zone(zone.name, zone, world)
    assert plan.renotify == [] and plan.transfers == {}


def test_an_older_record_is_given_the_list_once(tmp_path: pathlib.Path) -> None:
    zone, world = _world(_desired(tmp_path), None, ("10.244.0.3",))
    plan = zonediff.plan_zone(zone.name, zone, world)
    assert plan.renotify and plan.ownership_after("rev").allow_transfer == ["10.1.0.8", "10.244.0.3"]
    assert ZoneOwnership.from_json(plan.ownership_after("rev").to_json()).allow_transfer == ["10.1.0.8", "10.244.0.3"]


@dataclasses.dataclass
class _Pods:
    pods: list[dict[str, Any]]
    asked: list[tuple[str, str | None]] = dataclasses.field(default_factory=list)

    def list(self, kind: str, *, label_selector: str | None = None, namespace: str | None = None) -> list[Any]:
        self.asked.append((kind, label_selector))
        return self.pods


def test_the_agent_addresses_are_every_agent_pod_with_an_address() -> None:
    api = _Pods([{"status": {"podIP": "10.244.0.9"}}, {"status": {"podIP": "10.244.0.3"}}, {"status": {}}])
    assert instance_endpoints.agent_addresses(api, "bindy-agent") == ["10.244.0.3", "10.244.0.9"]  # type: ignore[arg-type]
    assert api.asked == [("Pod", "app.kubernetes.io/name=bindy-agent")]
