"""Each DNSZone onto Bind9Instances (pure), per the seeds:
  * explicit: `clusterRef` (a Bind9Cluster in the zone's namespace, else a ClusterBind9Provider),
    `clusterProviderRef`, and `bind9InstancesFrom` label selectors - the union, deduplicated;
  * otherwise `zonesFrom` selectors on instances (own, or propagated from their cluster/provider):
    the zone goes to every instance of the selecting cluster; two clusters selecting the same zone
    is a conflict. An explicit reference always wins over zonesFrom.
A placed zone (`Zone`) later takes its records (desired/assignment.py) and RRsets
(desired/zonerrsets.py); desired/zoneset.py does all three for a revision.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections import defaultdict
from typing import TYPE_CHECKING

from agent.desired import hints, rrsets
from agent.desired.findings import Findings
from agent.load.loaded import Loaded
from agent.model import syntax
from agent.model.key import ObjectKey
from agent.model.problems import Origin, Problem, Severity
from agent.model.zone import DNSZone, DNSZoneSpec

if TYPE_CHECKING:
    from agent.model.infra import ZoneSource


@dataclasses.dataclass(frozen=True)
class ClusterView:
    key: ObjectKey
    provider: str | None


@dataclasses.dataclass
class InstanceView:
    key: ObjectKey
    cluster: str
    role: str
    labels: dict[str, str]
    zones_from: list[ZoneSource]


@dataclasses.dataclass
class Zone:
    key: ObjectKey
    name: str  # absolute, lowercase: "example.com."
    origin: Origin
    spec: DNSZoneSpec
    labels: dict[str, str]
    annotations: dict[str, str] = dataclasses.field(default_factory=dict)
    primaries: list[ObjectKey] = dataclasses.field(default_factory=list)
    secondaries: list[ObjectKey] = dataclasses.field(default_factory=list)
    selection_method: str | None = None
    selected_by_instance: str | None = None
    rrsets: dict[tuple[str, str], rrsets.RRset] = dataclasses.field(default_factory=dict)
    records: dict[ObjectKey, tuple[str, str]] = dataclasses.field(default_factory=dict)
    # its records from other namespaces (whether that is allowed is the gate's to say)
    from_other_namespaces: list[ObjectKey] = dataclasses.field(default_factory=list)
    # its RRsets' digest and the RRsets it is of (desired/zonehash.py): kept while they are the same
    digest_kept: tuple[object, str] | None = dataclasses.field(default=None, compare=False,
                                                                repr=False)

    @property
    def instances(self) -> list[ObjectKey]:
        return self.primaries + self.secondaries

    def fresh(self) -> Zone:
        """The same zone and placement, without RRsets (a revision sets its own)."""
        return Zone(self.key, self.name, self.origin, self.spec, self.labels, self.annotations,
                    self.primaries, self.secondaries, self.selection_method,
                    self.selected_by_instance)

    @property
    def default_ttl(self) -> int:
        return self.spec.ttl if self.spec.ttl is not None else rrsets.DEFAULT_TTL



@dataclasses.dataclass
class Fleet:
    """The instances of a revision, indexed once for every zone's selection."""

    clusters: dict[ObjectKey, ClusterView]
    instances: list[InstanceView]
    by_cluster: dict[tuple[str | None, str], list[InstanceView]]
    providers: dict[str, list[ObjectKey]]
    # this run's did-you-mean hints
    budget: hints.Budget = dataclasses.field(default_factory=hints.Budget)

    @classmethod
    def of(cls, clusters: dict[ObjectKey, ClusterView], instances: list[InstanceView]) -> Fleet:
        by_cluster: dict[tuple[str | None, str], list[InstanceView]] = defaultdict(list)
        for inst in instances:
            by_cluster[(inst.key.namespace, inst.cluster)].append(inst)
        providers: dict[str, list[ObjectKey]] = defaultdict(list)
        for c in clusters.values():
            if c.provider:
                providers[c.provider].append(c.key)
        # plain dicts: lookups never add
        return cls(clusters, instances, dict(by_cluster), dict(providers))


def _select_instances(zone: Zone, obj: Loaded, fleet: Fleet, out: Findings) -> None:
    spec, ns = zone.spec, zone.key.namespace
    chosen = _by_reference(zone, obj, fleet, out)
    by_zones_from = [x for x in fleet.instances if x.key.namespace == ns
                     and any(s.selector.matches(zone.labels) for s in x.zones_from)]
    selecting = sorted({x.cluster for x in by_zones_from})
    if spec.cluster_ref or spec.cluster_provider_ref or spec.bind9_instances_from:
        zone.selection_method = "explicit"
        others = [c for c in selecting if c != spec.cluster_ref]
        if others:
            out.add(obj, "metadata.labels", f"also matched by zonesFrom of "
                    f"{', '.join(others)}; the explicit reference wins", Severity.WARNING)
    elif len(selecting) > 1:
        out.add(obj, "metadata.labels", "conflict: selected by the zonesFrom of "
                f"several clusters ({', '.join(selecting)}); add spec.clusterRef or change the "
                f"labels")
    elif selecting:
        zone.selection_method = "labelSelector"
        zone.selected_by_instance = min(str(x.key.name) for x in by_zones_from)
        chosen.update((i.key, i) for i in fleet.by_cluster.get((ns, selecting[0]), []))
    ordered = sorted(chosen.values(), key=lambda x: (x.key.namespace or "", x.key.name))
    zone.primaries = [x.key for x in ordered if x.role == "primary"]
    zone.secondaries = [x.key for x in ordered if x.role == "secondary"]
    if not ordered and not out.failed(zone.key):
        hint = fleet.budget.hint("zone label", lambda: hints.label_for(zone.labels, [
            (f"the zonesFrom of {x.key}", s.selector) for x in fleet.instances
            if x.key.namespace == ns
            for s in x.zones_from]))
        out.add(obj, "metadata.labels" if hint else "spec",
                f"selects no Bind9Instance; the zone will not be served{hint}", Severity.WARNING)
    elif ordered and not zone.primaries:
        out.add(obj, "spec", "selects only secondary instances; a zone needs a primary")


def _by_reference(zone: Zone, obj: Loaded, fleet: Fleet,
                  out: Findings) -> dict[ObjectKey, InstanceView]:
    """The instances a zone names: clusterRef, clusterProviderRef, bind9InstancesFrom (a missing
    target is reported)."""
    spec, ns = zone.spec, zone.key.namespace
    chosen: dict[ObjectKey, InstanceView] = {}

    def from_provider(name: str) -> None:
        for ckey in fleet.providers[name]:
            chosen.update((i.key, i) for i in fleet.by_cluster.get((ckey.namespace, ckey.name), []))

    if spec.cluster_ref:
        if ObjectKey("Bind9Cluster", ns, spec.cluster_ref) in fleet.clusters:
            chosen.update((i.key, i) for i in fleet.by_cluster.get((ns, spec.cluster_ref), []))
        elif spec.cluster_ref in fleet.providers:
            from_provider(spec.cluster_ref)
        else:
            ref = spec.cluster_ref
            hint = fleet.budget.hint("cluster", lambda: hints.did_you_mean(ref, [
                k.name for k in fleet.clusters if k.namespace == ns] + list(fleet.providers)))
            out.add(obj, "spec.clusterRef",
                    f"no Bind9Cluster {spec.cluster_ref!r} in namespace {ns} and no "
                    f"ClusterBind9Provider {spec.cluster_ref!r}{hint}")
    if spec.cluster_provider_ref:
        if spec.cluster_provider_ref in fleet.providers:
            from_provider(spec.cluster_provider_ref)
        else:
            provider = spec.cluster_provider_ref
            hint = fleet.budget.hint("provider",
                                     lambda: hints.did_you_mean(provider, fleet.providers))
            out.add(obj, "spec.clusterProviderRef",
                    f"no ClusterBind9Provider {spec.cluster_provider_ref!r}{hint}")
    for i, source in enumerate(spec.bind9_instances_from or []):
        matched = [x for x in fleet.instances if x.key.namespace == ns
                   and source.selector.matches(x.labels)]
        if not matched:
            selector = source.selector
            hint = fleet.budget.hint("instance selector", lambda: hints.selector_for(selector, [  # noqa: B023
                (str(x.key), x.labels) for x in fleet.instances if x.key.namespace == ns]))
            out.add(obj, f"spec.bind9InstancesFrom[{i}]",
                    f"selects no Bind9Instance in this namespace{hint}", Severity.WARNING)
        chosen.update((x.key, x) for x in matched)
    return chosen


def _check_zone(zone: Zone, obj: Loaded, out: Findings) -> None:
    spec = zone.spec
    names = [("spec.zoneName", spec.zone_name),
             ("spec.soaRecord.primaryNs", spec.soa_record.primary_ns),
             ("spec.soaRecord.adminEmail", spec.soa_record.admin_email)]
    names += [(f"spec.nameServers[{i}].hostname", ns_.hostname)
              for i, ns_ in enumerate(spec.name_servers or [])]
    for path, name in names:
        if error := syntax.dns_name_error(name):
            out.add(obj, path, f"{syntax.brief(name)} {error}")
    for host, ip in (zone.spec.name_server_ips or {}).items():
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            out.add(obj, f"spec.nameServerIps.{host}", f"{ip!r} is not an IP address")
        try:
            rrsets.check_hostname(host, f"spec.nameServerIps.{host}", require_fqdn=True)
        except rrsets.RecordError as exc:
            out.add(obj, exc.path, str(exc))
    for i, ns_ in enumerate(zone.spec.name_servers or []):
        for field, value, cls in (("ipv4Address", ns_.ipv4_address, ipaddress.IPv4Address),
                                  ("ipv6Address", ns_.ipv6_address, ipaddress.IPv6Address)):
            if value is not None:
                try:
                    cls(value)
                except ValueError:
                    out.add(obj, f"spec.nameServers[{i}].{field}",
                            f"{value!r} is not a valid address")



def placed(obj: Loaded, name: str, fleet: Fleet) -> tuple[Zone, list[Problem]]:
    """A DNSZone checked and placed on its instances (no RRsets yet), and the problems found."""
    assert isinstance(obj.model, DNSZone)
    out = Findings()
    zone = Zone(obj.key, name, obj.origin, obj.model.spec,
                dict(obj.model.metadata.get("labels") or {}),
                dict(obj.model.metadata.get("annotations") or {}))
    _check_zone(zone, obj, out)
    _select_instances(zone, obj, fleet, out)
    return zone, out.problems

