"""The sample repository's instances as pods, for unit tests that plan zones without a server: the
desired state of a copy of sample-repo/, the primary's two pods and the secondary, and the DNS world
observed on them (every pod of an instance is its own server)."""

from __future__ import annotations

import pathlib
import shutil
from typing import Any

from agent.clients import endpoints as endpoint_map
from agent.clients.endpoints import Endpoint, Server
from agent.desired import hierarchy
from agent.desired.hierarchy import Desired
from agent.model.observed import DnsObserved, ZoneObserved
from agent.model.ownership import ZoneOwnership
from agent.observe import dnsobserve
from agent.plan import build, changes
from tests.conftest import SAMPLE, load_dir

PRIMARY, SECONDARY = "dns-system/dns-primary-0", "dns-system/dns-secondary-0"
POD_A, POD_B = f"{PRIMARY}@10.1.0.4", f"{PRIMARY}@10.1.0.5"


def _desired(tmp_path: pathlib.Path) -> Desired:
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    return hierarchy.build(load_dir(root))


def _pods_world(desired: Desired, seen: dict[str, ZoneObserved], *, placed: bool = True,
                secondary_pods: tuple[str, ...] = ()) -> tuple[str, DnsObserved]:
    zone = desired.zones[0]
    primary = Endpoint(PRIMARY, "svc", 53, "http://svc", servers=(Server("10.1.0.4", "10.1.0.4", 5353, "http://a"),
                                                                  Server("10.1.0.5", "10.1.0.5", 5353, "http://b")))
    secondary = Endpoint(SECONDARY, "svc2", 53, "http://svc2",
                         servers=tuple(Server(ip, ip, 5353, f"http://{ip}") for ip in secondary_pods))
    eps = {PRIMARY: primary, SECONDARY: secondary}
    servers = dnsobserve.reach(eps)
    told = sorted(servers[SECONDARY].addresses)  # what the primaries were told to NOTIFY when it was placed
    owned = {zone.name: ZoneOwnership(zone.name, {PRIMARY: "primary", SECONDARY: "secondary"},
                                      set(zone.rrsets), notify=told)} if placed else {}
    return zone.name, DnsObserved(owned, {zone.name: seen}, set(eps), servers=servers,
                                  pods=endpoint_map.servers_of(eps))


def _world(desired: Any, *, starting: dict[str, str], fresh: frozenset[str] = frozenset(),
           seen: dict[str, ZoneObserved] | None = None, placed: bool = False) -> tuple[str, DnsObserved]:
    zone = desired.zones[0]
    eps = {}
    if PRIMARY not in starting:
        eps[PRIMARY] = Endpoint(PRIMARY, "svc", 53, "http://svc", servers=(
            Server("10.1.0.4", "10.1.0.4", 5353, "http://a"),
            Server("10.1.0.5", "10.1.0.5", 5353, "http://b", waiting="dns-primary-0-new")))
    if SECONDARY not in starting:
        eps[SECONDARY] = Endpoint(SECONDARY, "svc2", 53, "http://svc2",
                                  servers=(Server("10.1.0.9", "10.1.0.9", 5353, "http://c"),))
    owned = {zone.name: ZoneOwnership(zone.name, {PRIMARY: "primary", SECONDARY: "secondary"},
                                      set(zone.rrsets))} if placed else {}
    return zone.name, DnsObserved(owned, {zone.name: seen or {}}, set(eps), servers=dnsobserve.reach(eps),
                                  pods=endpoint_map.servers_of(eps), starting=starting, fresh=fresh)


def _zone_changes(desired: Any, world: DnsObserved, name: str) -> list[changes.Change]:
    """The plan's lines of zone `name` (the other zones of the revision are not observed here)."""
    from agent.model.observed import Observed

    plan = build.build(desired, Observed(None, world), revision="r").changes
    return [c for c in plan if getattr(c.target, "zone", None) == name]
