"""Where things go (pure): each DNSZone onto Bind9Instances, each record into one DNSZone.

Zone -> instances, per the seeds:
  * explicit: `clusterRef` (a Bind9Cluster in the zone's namespace, else a ClusterBind9Provider),
    `clusterProviderRef`, and `bind9InstancesFrom` label selectors - the union, deduplicated;
  * otherwise `zonesFrom` selectors on instances (own, or propagated from their cluster/provider):
    the zone goes to every instance of the selecting cluster; two clusters selecting the same zone
    is a conflict. An explicit reference always wins over zonesFrom.
Record -> zone: DNSZone `recordsFrom` selectors, the seeds' `spec.zone`, and for a fully qualified
`name`, adoption by the zone with the longest matching suffix. Two zones is an error, none a warning.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import operator
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from agent.desired import rrsets
from agent.desired.memo import Memo
from agent.load.loader import Loaded, Manifest
from agent.model import kinds, syntax
from agent.model.base import LabelSelector
from agent.model.infra import ZoneSource
from agent.model.key import ObjectKey
from agent.model.problems import Origin, Problem, Severity
from agent.model.zone import DNSZone, DNSZoneSpec

RECORD_KIND_NAMES = {k.name for k in kinds.RECORD_KINDS}


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

    @property
    def instances(self) -> list[ObjectKey]:
        return self.primaries + self.secondaries

    def fresh(self) -> Zone:
        """The same zone and placement, without RRsets (a revision sets its own)."""
        return Zone(self.key, self.name, self.origin, self.spec, self.labels, self.annotations, self.primaries,
                    self.secondaries, self.selection_method, self.selected_by_instance)

    @property
    def default_ttl(self) -> int:
        return self.spec.ttl if self.spec.ttl is not None else rrsets.DEFAULT_TTL


class _Out:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(self, where: Loaded, path: str, message: str, severity: Severity = Severity.ERROR) -> None:
        self.problems.append(Problem(where.origin_at(path), str(where.key), path, message, severity))

    def failed(self, key: ObjectKey) -> bool:
        return any(p.obj == str(key) and p.severity is Severity.ERROR for p in self.problems)


@dataclasses.dataclass
class _Fleet:
    """The instances of a revision, indexed once for every zone's selection."""

    clusters: dict[ObjectKey, ClusterView]
    instances: list[InstanceView]
    by_cluster: dict[tuple[str | None, str], list[InstanceView]]
    providers: dict[str, list[ObjectKey]]

    @classmethod
    def of(cls, clusters: dict[ObjectKey, ClusterView], instances: list[InstanceView]) -> _Fleet:
        by_cluster: dict[tuple[str | None, str], list[InstanceView]] = defaultdict(list)
        for inst in instances:
            by_cluster[(inst.key.namespace, inst.cluster)].append(inst)
        providers: dict[str, list[ObjectKey]] = defaultdict(list)
        for c in clusters.values():
            if c.provider:
                providers[c.provider].append(c.key)
        return cls(clusters, instances, dict(by_cluster), dict(providers))  # plain dicts: lookups never add


def _select_instances(zone: Zone, obj: Loaded, fleet: _Fleet, out: _Out) -> None:
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
                f"several clusters ({', '.join(selecting)}); add spec.clusterRef or change the labels")
    elif selecting:
        zone.selection_method = "labelSelector"
        zone.selected_by_instance = min(str(x.key.name) for x in by_zones_from)
        chosen.update((i.key, i) for i in fleet.by_cluster.get((ns, selecting[0]), []))
    ordered = sorted(chosen.values(), key=lambda x: (x.key.namespace or "", x.key.name))
    zone.primaries = [x.key for x in ordered if x.role == "primary"]
    zone.secondaries = [x.key for x in ordered if x.role == "secondary"]
    if not ordered and not out.failed(zone.key):
        out.add(obj, "spec", "selects no Bind9Instance; the zone will not be served",
                Severity.WARNING)
    elif ordered and not zone.primaries:
        out.add(obj, "spec", "selects only secondary instances; a zone needs a primary")


def _by_reference(zone: Zone, obj: Loaded, fleet: _Fleet, out: _Out) -> dict[ObjectKey, InstanceView]:
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
            out.add(obj, "spec.clusterRef", f"no Bind9Cluster {spec.cluster_ref!r} in "
                    f"namespace {ns} and no ClusterBind9Provider {spec.cluster_ref!r}")
    if spec.cluster_provider_ref:
        if spec.cluster_provider_ref in fleet.providers:
            from_provider(spec.cluster_provider_ref)
        else:
            out.add(obj, "spec.clusterProviderRef",
                    f"no ClusterBind9Provider {spec.cluster_provider_ref!r}")
    for i, source in enumerate(spec.bind9_instances_from or []):
        matched = [x for x in fleet.instances if x.key.namespace == ns and source.selector.matches(x.labels)]
        if not matched:
            out.add(obj, f"spec.bind9InstancesFrom[{i}]",
                    "selects no Bind9Instance in this namespace", Severity.WARNING)
        chosen.update((x.key, x) for x in matched)
    return chosen


def _check_zone(zone: Zone, obj: Loaded, out: _Out) -> None:
    spec = zone.spec
    names = [("spec.zoneName", spec.zone_name), ("spec.soaRecord.primaryNs", spec.soa_record.primary_ns),
             ("spec.soaRecord.adminEmail", spec.soa_record.admin_email)]
    names += [(f"spec.nameServers[{i}].hostname", ns_.hostname) for i, ns_ in enumerate(spec.name_servers or [])]
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


class _ZoneSelectors:
    """The zones that may claim a record: recordsFrom selectors indexed by the label they need first,
    spec.zone and fully qualified names by zone name. Built once per set of zones."""

    def __init__(self, zones: list[Zone]) -> None:
        self.by_label: dict[tuple[str | None, str, str], list[tuple[int, Zone, LabelSelector]]] = defaultdict(list)
        self.generic: dict[str | None, list[tuple[int, Zone, LabelSelector]]] = defaultdict(list)
        self.by_name: dict[str, list[Zone]] = defaultdict(list)
        self.origins = {z.key: z.origin for z in zones}
        for order, zone in enumerate(zones):
            self.by_name[zone.name].append(zone)
            for source in zone.spec.records_from or []:
                entry = (order, zone, source.selector)
                if source.selector.match_labels:
                    k, v = next(iter(source.selector.match_labels.items()))
                    self.by_label[(zone.key.namespace, k, v)].append(entry)
                else:
                    self.generic[zone.key.namespace].append(entry)

    def selecting(self, record: Loaded) -> list[Zone]:
        labels, ns = record.model.metadata.get("labels") or {}, record.key.namespace
        candidates = list(self.generic.get(ns, []))
        for k, v in labels.items():
            candidates += self.by_label.get((ns, k, v), [])
        matched = {order: zone for order, zone, sel in candidates if sel.matches(labels)}
        return [matched[o] for o in sorted(matched)]

    def named(self, record: Loaded, already: list[Zone], out: _Out) -> list[Zone]:
        """spec.zone, else adoption of a fully qualified name by the zone with the longest suffix."""
        spec = record.model.spec  # type: ignore[attr-defined]
        if spec.zone:
            matches = self.by_name.get(rrsets.absolute(spec.zone), [])
            same_ns = [z for z in matches if z.key.namespace == record.key.namespace] or matches
            if not same_ns:
                out.add(record, "spec.zone", f"no DNSZone with zoneName {spec.zone!r}")
            return [z for z in same_ns[:1] if z not in already]
        if spec.name.endswith(".") and not already:
            labels = spec.name.lower().rstrip(".").split(".")
            for i in range(len(labels)):
                candidates = self.by_name.get(".".join(labels[i:]) + ".")
                if candidates:
                    return [candidates[0]]
        return []


def _assign_file(records: list[Loaded], zones: _ZoneSelectors) -> tuple[dict[ObjectKey, list[Loaded]], list[Problem]]:
    """Which zone takes each record of one file (by zone key), and the problems found."""
    out = _Out()
    by_zone: dict[ObjectKey, list[Loaded]] = defaultdict(list)
    for r in records:
        zs = zones.selecting(r)
        zs += zones.named(r, zs, out)
        if len(zs) > 1:
            names = ", ".join(f"{z.key} ({zones.origins[z.key]})" for z in zs)
            out.add(r, "metadata.labels", f"selected by more than one zone: {names}")
        elif not zs and not out.failed(r.key):
            out.add(r, "", "belongs to no DNSZone (no recordsFrom selector matches, "
                    "no spec.zone, name not fully qualified); it will not be published", Severity.WARNING)
        elif zs:
            by_zone[zs[0].key].append(r)
    return dict(by_zone), out.problems


def _assign_records(zones: list[Zone], sources: dict[ObjectKey, Loaded], by_file: Sequence[Sequence[Loaded]],
                    out: _Out, memo: Memo | None) -> dict[ObjectKey, list[list[Loaded]]]:
    """Each zone's records, as one list per file that has some; a file's assignment (and so its
    lists) is reused while it and the zones are the same objects as in the last revision."""
    if memo is None:
        token: object = object()
        selectors = _ZoneSelectors(zones)
    else:  # the zones as written: a file re-read for another reason leaves them the same
        token = memo.token(("zone-set",), tuple((z.key, sources[z.key].origin, sources[z.key].model) for z in zones))
        selectors = memo.get(("zone-selectors",), (token,), lambda: _ZoneSelectors(zones))
    def assign(objects: Sequence[Loaded]) -> tuple[dict[ObjectKey, list[Loaded]], list[Problem]]:
        return _assign_file([o for o in objects if o.key.kind in RECORD_KIND_NAMES], selectors)

    files = [objects for objects in by_file if objects]  # a cached file's list stays the same object
    per_file = ([assign(objects) for objects in files] if memo is None else
                memo.each(("assign",), files, assign, name=lambda objects: objects[0].origin.file, shared=(token,)))
    members: dict[ObjectKey, list[list[Loaded]]] = defaultdict(list)
    for by_zone, problems in per_file:
        out.problems += problems
        for key, found in by_zone.items():
            members[key].append(found)
    return members


def _add_rrsets(zone: Zone, members: list[Loaded], out: _Out) -> None:
    sources: dict[tuple[str, str], list[Loaded]] = defaultdict(list)
    values: dict[tuple[str, str], set[str]] = defaultdict(set)
    objects: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
    own_values: dict[ObjectKey, set[str]] = {}
    ttls: dict[tuple[str, str], set[int]] = defaultdict(set)
    for r in members:
        spec = r.model.spec  # type: ignore[attr-defined]
        try:
            owner = rrsets.owner_name(spec.name, zone.name)
            texts = rrsets.values(r.model)  # type: ignore[arg-type]
        except rrsets.RecordError as exc:
            out.add(r, exc.path, str(exc))
            continue
        rtype = rrsets.rtype_of(r.key.kind)
        key = (owner, rtype)
        sources[key].append(r)
        own_values[r.key] = set(texts)
        values[key].update(texts)
        objects[key].update(texts)
        ttls[key].add(spec.ttl if spec.ttl is not None else zone.default_ttl)
        zone.records[r.key] = key
    types_at: dict[str, set[str]] = defaultdict(set)
    for owner, rtype in values:
        types_at[owner].add(rtype)
    _check_targets(zone, sources, own_values, types_at, out)
    for key, vals in sorted(values.items()):
        owner, rtype = key
        if rtype == "CNAME" and (problem := _cname_problem(zone.name, owner, types_at[owner], vals)):
            for r in sources[key]:
                out.add(r, "spec.name", problem)
            continue
        if len(ttls[key]) > 1:
            first = sources[key][0]
            out.add(first, "spec.ttl", f"records of {owner} {rtype} disagree on TTL "
                    f"({sorted(ttls[key])}); using the lowest", Severity.WARNING)
        rrset = rrsets.build(zone.name, owner, rtype, min(ttls[key]), vals, objects[key].values())
        if too_big := rrsets.oversized(rrset):
            for r in sources[key]:
                out.add(r, "spec", too_big)
            continue
        zone.rrsets[key] = rrset


def _cname_problem(origin: str, owner: str, types: set[str], values: set[str]) -> str | None:
    """Why a CNAME RRset cannot be served (RFC 1034 3.6.2, RFC 2181 10.1), or None."""
    others = sorted(types - {"CNAME"})
    if owner == origin:
        return "a CNAME cannot be at the zone apex (it would hide the SOA and NS)"
    if others:
        return f"a CNAME cannot share its name with other records ({', '.join(others)})"
    if len(values) > 1:
        return f"a name can have only one CNAME target, got {len(values)}: {', '.join(sorted(values))}"
    return None


_TARGET_FIELD = {"MX": "spec.mailServer", "SRV": "spec.target", "NS": "spec.nameserver"}


def _check_targets(zone: Zone, sources: dict[tuple[str, str], list[Loaded]], own_values: dict[ObjectKey, set[str]],
                   types_at: dict[str, set[str]], out: _Out) -> None:
    """BIND's check-integrity refuses a whole UPDATE whose MX, SRV or NS record points at a name
    inside the zone that has no A/AAAA record; catch it here, where the file and line are known."""
    for (_, rtype), records in sources.items():
        if rtype not in _TARGET_FIELD:
            continue
        for r in records:
            for value in sorted(own_values[r.key]):
                target = value.split()[-1]
                inside = target == zone.name or target.endswith("." + zone.name)
                if inside and target != "." and not types_at.get(target, set()) & {"A", "AAAA"}:
                    out.add(r, _TARGET_FIELD[rtype], f"{target} is inside zone {zone.name} but has no A or AAAA "
                            "record; BIND refuses such an update (check-integrity). Add an ARecord for it")


_ZoneInputs = tuple[Zone, list[list[Loaded]]]  # a placed zone, and its records: a list per file


def _with_rrsets(inputs: _ZoneInputs) -> tuple[Zone, list[Problem]]:
    """The placed zone with its RRsets, and the problems found building them."""
    placed, members = inputs
    zone, scratch = placed.fresh(), _Out()  # the placed zone is shared by revisions: never changed
    _add_rrsets(zone, [r for found in members for r in found], scratch)
    zone.from_other_namespaces = [k for k in zone.records if k.namespace != zone.key.namespace]
    return zone, scratch.problems


def _same_inputs(a: _ZoneInputs, b: _ZoneInputs) -> bool:
    """The same placement (the same object while the DNSZone and the instances are) and the same
    list of each file's records (the same list while that file's assignment is reused)."""
    return a[0] is b[0] and len(a[1]) == len(b[1]) and all(map(operator.is_, a[1], b[1]))


def _zones_rrsets(placed: list[Zone], members: dict[ObjectKey, list[list[Loaded]]], out: _Out,
                  memo: Memo | None) -> list[Zone]:
    """Every placed zone with its RRsets; the very zone of the last revision when nothing it comes
    from changed."""
    inputs = [(zone, members.get(zone.key, [])) for zone in placed]
    built = ([_with_rrsets(i) for i in inputs] if memo is None else
             memo.each(("rrsets",), inputs, _with_rrsets, name=lambda i: i[0].name, same=_same_inputs))
    for _, problems in built:
        out.problems += problems
    return [zone for zone, _ in built]


def _placed(obj: Loaded, name: str, fleet: _Fleet) -> tuple[Zone, list[Problem]]:
    """A DNSZone checked and placed on its instances (no RRsets yet), and the problems found."""
    assert isinstance(obj.model, DNSZone)
    out = _Out()
    zone = Zone(obj.key, name, obj.origin, obj.model.spec, dict(obj.model.metadata.get("labels") or {}),
                dict(obj.model.metadata.get("annotations") or {}))
    _check_zone(zone, obj, out)
    _select_instances(zone, obj, fleet, out)
    return zone, out.problems


def place(manifest: Manifest, clusters: dict[ObjectKey, ClusterView],
          instances: list[InstanceView], memo: Memo | None = None) -> tuple[list[Zone], list[Problem]]:
    out = _Out()
    fleet = _Fleet.of(clusters, instances)
    fleet_token = memo.token(("fleet",), (list(clusters.values()), instances)) if memo is not None else None
    def place_one(obj: Loaded) -> tuple[Zone, list[Problem]]:
        assert isinstance(obj.model, DNSZone)
        return _placed(obj, rrsets.absolute(obj.model.spec.zone_name), fleet)

    found = manifest.of_kind("DNSZone")
    # a zone's placement is reused while its DNSZone is the same object and the instances say the same
    each = ([place_one(obj) for obj in found] if memo is None else
            memo.each(("placed",), found, place_one, name=lambda obj: obj.key, shared=(fleet_token,)))
    placed_zones: list[Zone] = []  # placed, without RRsets
    sources: dict[ObjectKey, Loaded] = {}
    first_seen: dict[str, Zone] = {}
    for obj, (placed, problems) in zip(found, each, strict=True):
        if placed.name in first_seen:
            first = first_seen[placed.name]
            out.add(obj, "spec.zoneName", f"zone {obj.model.spec.zone_name} is already "  # type: ignore[attr-defined]
                    f"declared by {first.key} at {first.origin}")
            continue
        out.problems += problems
        first_seen[placed.name] = placed
        sources[placed.key] = obj
        placed_zones.append(placed)
    members = _assign_records(placed_zones, sources, manifest.by_file or [manifest.objects], out, memo)
    return _zones_rrsets(placed_zones, members, out, memo), out.problems
