"""What each CR's `.status` should say after a sync, computed from what apply did.

Conditions follow seeds/002 (`conditions.py`); the fields are Bindy's, kind by kind.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from agent.desired import rrsets, workloads, zonehash
from agent.desired.hierarchy import Desired
from agent.desired.placement import Zone
from agent.model import kinds
from agent.model.key import ObjectKey
from agent.outcome import dnssecstatus, zoneconditions
from agent.outcome.conditions import Outcome, conditions, is_ready, readiness
from agent.plan import rotation
from agent.plan.changes import Plan
from agent.plan.zoneplan import ZonePlan
from agent.reconcile.dnsresult import DnsResult, ZoneResult
from agent.reconcile.kubeapply import KubeResult

RECORD_KINDS = {k.name for k in kinds.RECORD_KINDS}
INFRA_KINDS = {"ClusterBind9Provider", "Bind9Cluster", "Bind9Instance"}


def _ref(key: ObjectKey, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": kinds.API_VERSION, "kind": key.kind, "name": key.name,
            "namespace": key.namespace, **extra}


def served_by(desired: Desired, instances: frozenset[ObjectKey]) -> set[ObjectKey]:
    """These instances and the zones placed on them: whose statuses follow the instances' pods."""
    if not instances:
        return set()
    return set(instances) | {z.key for z in desired.zones if not instances.isdisjoint(z.instances)}


# The revision a cluster serves is shown where one object carries it: the newest revision on each
# Bind9Cluster and ClusterBind9Provider, and on each DNSZone the revision that last changed it. No
# other CR carries it, so a commit rewrites the statuses of what it changed, not of every CR.
REVISION_KINDS = {"Bind9Cluster", "ClusterBind9Provider", "DNSZone"}


class _RecordZones(Mapping[ObjectKey, Zone]):
    """The zone each record is placed in, asked of the zones (a few thousand) rather than indexed
    for every record (100,000), since a run asks it of the records whose status it writes."""

    def __init__(self, zones: list[Zone]) -> None:
        self.zones = zones

    def __getitem__(self, key: ObjectKey) -> Zone:
        for zone in reversed(self.zones):  # as the dict would say: the last zone holding it
            if key in zone.records:
                return zone
        raise KeyError(key)

    def __iter__(self) -> Iterator[ObjectKey]:
        return (rk for zone in self.zones for rk in zone.records)

    def __len__(self) -> int:
        return sum(len(zone.records) for zone in self.zones)


@dataclasses.dataclass
class _Index:
    """Lookups over one revision, built once for all the statuses of a run."""

    desired: Desired
    outcomes: dict[ObjectKey, Outcome]
    zones_by_instance: dict[ObjectKey, list[Zone]]
    record_zone: Mapping[ObjectKey, Zone]
    zones_by_key: dict[ObjectKey, Zone]
    zone_results: dict[ObjectKey | None, ZoneResult]
    dns: bool  # zones and records were synced in this run
    # Bind9Instance -> its live Deployment (with .status)
    deployments: dict[ObjectKey, dict[str, Any]]
    # Bind9Instance -> its pods as listed (of unready ones)
    pods: Mapping[ObjectKey, list[dict[str, Any]]]
    # instances written pod by pod
    served_by_pods: set[ObjectKey] = dataclasses.field(default_factory=set)
    # zone name -> its plan in this run (what was left to write on each primary)
    zone_plans: Mapping[str, ZonePlan] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, desired: Desired, outcomes: dict[ObjectKey, Outcome], dns: DnsResult | None,
           deployments: dict[ObjectKey, dict[str, Any]] | None = None,
           pods: Mapping[ObjectKey, list[dict[str, Any]]] | None = None,
           only: set[ObjectKey] | None = None, ) -> _Index:
        by_instance: dict[ObjectKey, list[Zone]] = {}
        for zone in desired.zones:
            for inst in zone.instances:
                by_instance.setdefault(inst, []).append(zone)
        placed = sum(len(z.records) for z in desired.zones)
        record_zone: Mapping[ObjectKey, Zone] = (
            _RecordZones(desired.zones) if only is not None
            and len(only) * len(desired.zones) < placed
            else {rk: z for z in desired.zones for rk in z.records})
        results = {z.key: z for z in dns.zones} if dns else {}
        return cls(desired, outcomes, by_instance, record_zone, {z.key: z for z in desired.zones},
                   results, dns is not None, deployments or {}, pods or {})


def _conditions_of(key: ObjectKey, index: _Index) -> list[dict[str, str]]:
    outcome = index.outcomes.get(key, Outcome(True))
    in_dns = key.kind == "DNSZone" or key.kind in RECORD_KINDS
    if key.kind == "Bind9Instance" and outcome.ok and key in index.deployments:
        return readiness(index.deployments[key], index.pods.get(key, ()))
    if not in_dns or not outcome.ok:
        return conditions(outcome)
    if not index.dns:
        return conditions(outcome, dns_pending=True)
    return _served_conditions(key, outcome, index)


def _served_conditions(key: ObjectKey, outcome: Outcome, index: _Index) -> list[dict[str, str]]:
    """The conditions of a zone or a record applied well, from what its servers say of it."""
    zone = index.zones_by_key.get(key) if key.kind == "DNSZone" else index.record_zone.get(key)
    # its selector matches no instance (any more): on no server
    if zone is not None and not zone.instances:
        if key.kind == "DNSZone":
            return [*zoneconditions.zone(None), zoneconditions.in_sync(
                zonehash.of(zone), None, ZoneResult(key, zone.name))]
        return zoneconditions.record(None, "", "")
    if key.kind == "DNSZone":
        zr = index.zone_results.get(key)
        conds = zoneconditions.signed_alike(zone, zr, zoneconditions.zone(zr))
        conds = zoneconditions.served_now(zone, {k: d for k, d in index.deployments.items()
                                                 if k in index.served_by_pods}, conds)
        if zone is None:
            return conds
        return [*conds, zoneconditions.in_sync(zonehash.of(zone),
                                               index.zone_plans.get(zone.name), zr)]
    if zone is None:
        return conditions(outcome)
    owner, rtype = zone.records[key]
    return zoneconditions.record(index.zone_results.get(zone.key), owner, rtype)


def _cluster_fields(key: ObjectKey, index: _Index) -> dict[str, Any]:
    names = sorted(i.key.name for i in index.desired.instances.values()
                   if i.key.namespace == key.namespace and i.cluster == key.name)
    ready = [n for n in names
             if is_ready(_conditions_of(ObjectKey("Bind9Instance", key.namespace, n), index))]
    return {"instances": names, "instanceCount": len(names), "readyInstances": len(ready)}


def _provider_fields(key: ObjectKey, index: _Index) -> dict[str, Any]:
    names = sorted(f"{i.key.namespace}/{i.key.name}" for i in index.desired.instances.values()
                   if i.provider == key.name)
    return {"instances": names, "instanceCount": len(names), "readyInstances": len(names)}


def _instance_fields(key: ObjectKey, index: _Index, service_ip: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    instance = index.desired.instances.get(key)
    if instance is not None:
        out["clusterRef"] = {"apiVersion": kinds.API_VERSION, "kind": "Bind9Cluster",
                             "name": instance.cluster, "namespace": key.namespace}
    zones = index.zones_by_instance.get(key, [])
    out["zones"] = [_ref(z.key, zoneName=z.name.rstrip(".")) for z in zones]
    out["zonesCount"] = len(zones)
    selected = [z for z in zones if z.selection_method == "labelSelector"]
    if selected:
        out["selectedZones"] = [{"name": z.key.name, "namespace": z.key.namespace,
                                 "zoneName": z.name.rstrip(".")}
                                for z in selected]
    if service_ip:
        out["serviceAddress"] = service_ip
    return out


def _zone_fields(key: ObjectKey, index: _Index) -> dict[str, Any]:
    placed = index.zones_by_key.get(key)
    if placed is None:
        return {}
    zr = index.zone_results.get(key)
    states = zr.instances if zr else {}

    def state(i: ObjectKey) -> tuple[str, str]:
        return states.get(f"{i.namespace}/{i.name}", ("Claimed", ""))

    out: dict[str, Any] = {
        "bind9Instances": [_ref(i, status=state(i)[0], message=state(i)[1] or None)
                           for i in placed.instances],
        "bind9InstancesCount": len(placed.instances),
        "records": [_ref(rk, recordName=owner) for rk, (owner, _)
                    in sorted(placed.records.items(), key=lambda kv: str(kv[0]))],
        "recordsCount": len(placed.records),
        "zoneHash": zonehash.of(placed)}
    if placed.selection_method:
        out["selectionMethod"] = placed.selection_method
    if placed.selected_by_instance:
        out["selectedByInstance"] = placed.selected_by_instance
    if zr is not None and zr.after:  # what the primaries serve, as observe read it or apply left it
        dnssec = dnssecstatus.status(placed, (seen.rrsets or {} for seen in zr.after.values()))
        if dnssec is not None:
            out["dnssec"] = dnssec
    return out


def _record_fields(key: ObjectKey, index: _Index) -> dict[str, Any]:
    home = index.record_zone.get(key)
    if home is None:
        return {}
    owner, rtype = home.records[key]
    out: dict[str, Any] = {"zone": home.name.rstrip("."),
                           "zoneRef": _ref(home.key, zoneName=home.name.rstrip(".")),
                           "publishedName": owner}
    rrset = home.rrsets.get((owner, rtype))
    if rrset is not None:
        out["addresses"] = rrsets.addresses(rrset)
    return out


def _fields(key: ObjectKey, index: _Index, service_ips: dict[ObjectKey, str]) -> dict[str, Any]:
    if key.kind == "Bind9Cluster":
        return _cluster_fields(key, index)
    if key.kind == "ClusterBind9Provider":
        return _provider_fields(key, index)
    if key.kind == "Bind9Instance":
        return _instance_fields(key, index, service_ips.get(key))
    if key.kind == "DNSZone":
        return _zone_fields(key, index)
    return _record_fields(key, index)


@dataclasses.dataclass(frozen=True)
class LiveInstances:
    """What the cluster shows of the instances, by Bind9Instance: its Service's cluster IP, its live
    Deployment (whose readiness its status shows), the pods of one that is not ready (which say why
    they do not start), and which instances are written pod by pod."""

    service_ips: dict[ObjectKey, str] = dataclasses.field(default_factory=dict)
    deployments: dict[ObjectKey, dict[str, Any]] = dataclasses.field(default_factory=dict)
    pods: Mapping[ObjectKey, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)
    served_by_pods: set[ObjectKey] = dataclasses.field(default_factory=set)


NO_INSTANCES = LiveInstances()


def statuses(desired: Desired, outcomes: dict[ObjectKey, Outcome], *,
             revisions: dict[ObjectKey, str], generations: dict[ObjectKey, int],
             dns: DnsResult | None = None, only: set[ObjectKey] | None = None,
             live: LiveInstances = NO_INSTANCES,
             plan: Plan | None = None) -> dict[ObjectKey, dict[str, Any]]:
    """The status of every CR in `desired` (or of those in `only`), keyed by the CR; `revisions` is
    the lastAppliedRevision of the CRs that carry one; `live`: what the cluster shows of the
    instances; `plan`: the run's (what each zone had left to write on each primary)."""
    index = _Index.of(desired, outcomes, dns, live.deployments, live.pods, only)
    index.served_by_pods = live.served_by_pods or set()
    index.zone_plans = {zp.name: zp for zp in plan.zones or []} if plan is not None else {}
    out: dict[ObjectKey, dict[str, Any]] = {}
    for obj in desired.objects:
        key = obj.key
        if key.kind not in kinds.KINDS or (only is not None and key not in only):
            continue
        status: dict[str, Any] = {"conditions": _conditions_of(key, index)}
        if key in generations:
            status["observedGeneration"] = generations[key]
        if key in revisions:
            status["lastAppliedRevision"] = revisions[key]
        status.update(_fields(key, index, live.service_ips))
        out[key] = status
    return out


def _outcomes(desired: Desired, result: KubeResult) -> dict[ObjectKey, Outcome]:
    """Each Git CR fails when it, or anything generated from it, failed."""
    outcomes: dict[ObjectKey, Outcome] = {}
    if not result.failed:
        return outcomes
    for obj in desired.objects:
        if obj.key in result.failed:
            for cr in {obj.key, obj.source} - {None}:
                assert cr is not None
                outcomes[cr] = Outcome(False, f"{obj.key}: {result.failed[obj.key]}", "ApplyFailed")
                if obj.owner is not None:
                    outcomes[obj.owner] = outcomes[cr]
    return outcomes


def _revisions(desired: Desired, live: dict[ObjectKey, dict[str, Any]], revision: str | None,
               changed: set[ObjectKey] | None, dns: DnsResult | None, *,
               only: set[ObjectKey] | None = None, ) -> dict[ObjectKey, str]:
    """Clusters and providers carry the revision applied; a zone carries the one that last changed
    it: this one if it changed now, else the one whose writes it serves (recorded with its
    ownership, so a run that wrote it but was killed before the statuses still counts), else what it
    shows."""
    out: dict[ObjectKey, str] = {}
    if not revision:
        return out
    written = {z.key: z.revision for z in dns.zones if z.key is not None
               and z.revision} if dns else {}
    # `only`: the CRs whose status is made (a key that is not a CR of the revision is never asked)
    for key in (o.key for o in desired.objects) if only is None else only:
        if key.kind not in REVISION_KINDS:
            continue
        shown = ((live.get(key) or {}).get("status") or {}).get("lastAppliedRevision")
        if key.kind != "DNSZone" or changed is None or key in changed:
            out[key] = revision
        else:
            out[key] = written.get(key) or shown or revision
    return out


def wanted(desired: Desired, result: KubeResult, *, revision: str | None,
           dns: DnsResult | None = None, only: set[ObjectKey] | None = None,
           pods: Mapping[ObjectKey, list[dict[str, Any]]] | None = None,
           endpoints: Mapping[str, Any] | None = None,
           plan: Plan | None = None) -> dict[ObjectKey, dict[str, Any]]:
    """Every CR's status after a sync (or that of the CRs in `only`), from what the Kubernetes and
    DNS steps did (`plan`: the run's: the zones this revision changed, `changed_zones`, and what
    each primary had left to write; None: every zone changed); `pods`: the pods of the Deployments
    that are not ready, by Deployment (`unready` says which to read); `endpoints`: how the run
    reached each instance - a zone follows the pods of the instances reached through their pods (in
    the cluster), not of those reached through an endpoint map."""
    live, changed = result.live, changed_zones(plan) if plan is not None else None
    # read for the CRs whose status is made (`only`: a few), not for every live object (100,000)
    crs = live.keys() if only is None else [k for k in only if k in live]
    generations = {k: live[k]["metadata"].get("generation", 0) for k in crs
                   if k.kind in kinds.KINDS}
    service_ips, deployments = {}, {}  # an instance's Service and Deployment have its name
    for ikey in desired.instances:
        service = live.get(ObjectKey("Service", ikey.namespace, ikey.name))
        if service is not None and service.get("spec", {}).get("clusterIP"):
            service_ips[ikey] = service["spec"]["clusterIP"]
        deployment = live.get(ObjectKey("Deployment", ikey.namespace, ikey.name))
        if deployment is not None:
            deployments[ikey] = deployment
    by_instance = {ObjectKey("Bind9Instance", k.namespace, k.name): v
                   for k, v in (pods or {}).items()}
    served_by_pods = {ObjectKey("Bind9Instance", *i.split("/", 1))
                      for i, e in (endpoints or {}).items() if e.pods is not None}
    instances = LiveInstances(service_ips, deployments, by_instance, served_by_pods)
    out = statuses(desired, _outcomes(desired, result),
                   revisions=_revisions(desired, live, revision, changed, dns, only=only),
                   generations=generations, dns=dns, only=only, live=instances, plan=plan)
    # rndcKeyRotation, from the key Secret's annotations as Bindy shows it
    for key, status in out.items():
        instance = desired.instances.get(key) if key.kind == "Bind9Instance" else None
        if instance is not None:
            secret = live.get(ObjectKey("Secret", key.namespace, workloads.rndc_key_name(key.name)))
            shown = rotation.status(instance.spec.rndc_key, secret)
            if shown is not None:
                status["rndcKeyRotation"] = shown
    return out


def _zone_touched(zr: ZoneResult) -> bool:
    return bool(zr.changes or zr.created_on or zr.deleted_from or zr.conflicts or not zr.ok
                or any(not c.ok for c in zr.checks))


def changed_zones(plan: Plan) -> set[ObjectKey]:
    """The DNSZones this revision changes: their RRsets or placements, or the CR itself."""
    out = {zp.key for zp in plan.zones or [] if zp.key is not None and not zp.empty}
    out |= {c.key for c in plan.kube or [] if c.key.kind == "DNSZone"
            and c.action in ("create", "update")}
    return out


def affected(desired: Desired, plan: Plan, kube: KubeResult | None,
             dns: DnsResult | None) -> set[ObjectKey]:
    """The CRs whose status this run may have changed: what it changed or failed, the zones it
    touched and their records that changed, and the infrastructure CRs (few)."""
    out = {o.key for o in desired.infrastructure if o.key.kind in INFRA_KINDS}
    out |= {c.key for c in plan.kube or [] if c.action in ("create", "update")}
    out |= set(kube.failed) if kube else set()
    out |= changed_zones(plan)
    zones = {z.key: z for z in desired.zones}
    for zr in dns.zones if dns else []:
        zone = zones.get(zr.key) if zr.key else None
        if zone is None or not _zone_touched(zr):
            continue
        out.add(zone.key)
        if not zr.ok or any(not c.ok for c in zr.checks) or zr.created_on or zr.deleted_from:
            out |= set(zone.records)  # a zone-wide failure or a new placement shows on every record
            continue
        keys = {c.key for c in zr.changes} | {tuple(c.split(":", 1)[0].split(" ", 1))
                                              for c in zr.conflicts}
        out |= {rk for rk, rrset in zone.records.items() if rrset in keys}
    return out
