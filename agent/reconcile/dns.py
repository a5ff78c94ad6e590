"""The DNS side of a revision: zones on every selected instance, then records, NOTIFY, verify.

Per the seeds: primaries first (a primary failure is fatal for that zone: PrimaryFailed), then
secondaries (a failure there is not: SecondaryFailed while primaries keep serving), then NOTIFY.
Zones the agent placed that Git no longer selects are deleted from exactly those instances.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping

from agent.desired import rrsets
from agent.desired.hierarchy import Desired
from agent.desired.placement import Zone
from agent.errors import AgentError, ZoneApiError
from agent.gate import safety
from agent.model.key import ObjectKey
from agent.plan import rrsetdiff
from agent.reconcile import rfc2136
from agent.reconcile.endpoints import Endpoint
from agent.reconcile.state import AgentState
from agent.reconcile.zoneapi import ZoneApi

log = logging.getLogger(__name__)


@dataclasses.dataclass
class ZoneResult:
    key: ObjectKey
    name: str
    instances: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)  # id -> (state, message)
    primaries: set[str] = dataclasses.field(default_factory=set)  # instance ids in the primary role
    primary_error: str = ""
    secondary_error: str = ""
    refused: str = ""
    conflicts: list[str] = dataclasses.field(default_factory=list)
    changes: list[rrsetdiff.RRChange] = dataclasses.field(default_factory=list)
    applied_on: list[str] = dataclasses.field(default_factory=list)  # primaries that took the changes
    checks: list[rfc2136.Check] = dataclasses.field(default_factory=list)
    created_on: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.primary_error or self.secondary_error or self.refused)


@dataclasses.dataclass
class DnsResult:
    zones: list[ZoneResult]
    deleted: list[tuple[str, str]]  # (zone, instance)
    updates_sent: int = 0
    errors: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(z.ok for z in self.zones) and not self.errors


def instance_id(key: ObjectKey) -> str:
    return f"{key.namespace}/{key.name}"


class DnsSync:
    def __init__(self, endpoints: Mapping[str, Endpoint], *, force: bool = False, dry_run: bool = False,
                 batch: int = rfc2136.DEFAULT_BATCH, verify_wait: float = 10) -> None:
        self.endpoints, self.force, self.dry_run = endpoints, force, dry_run
        self.batch, self.verify_wait = batch, verify_wait
        self.apis: dict[str, ZoneApi] = {}
        self.updates_sent = 0
        self._lock = threading.Lock()  # zones are reconciled concurrently

    def api(self, endpoint: Endpoint) -> ZoneApi:
        with self._lock:
            if endpoint.instance not in self.apis:
                self.apis[endpoint.instance] = ZoneApi(endpoint.api_url, token=endpoint.token,
                                                       instance=endpoint.instance)
            return self.apis[endpoint.instance]

    def close(self) -> None:
        for api in self.apis.values():
            api.close()

    def _zone_body(self, zone: Zone, role: str, primaries: list[Endpoint], secondaries: list[Endpoint],
                   endpoint: Endpoint) -> dict[str, object]:
        name = zone.name.rstrip(".")
        if role == "secondary":
            return {"zoneName": name, "zoneType": "secondary",
                    "zoneConfig": {"primaries": [p.dns for p in primaries]}}
        soa = zone.spec.soa_record
        servers = [ns.hostname for ns in zone.spec.name_servers or []] or [soa.primary_ns]
        glue = {ns.hostname: ns.ipv4_address for ns in zone.spec.name_servers or [] if ns.ipv4_address}
        glue.update({rrsets.absolute(h): ip for h, ip in (zone.spec.name_server_ips or {}).items()})
        config: dict[str, object] = {
            "ttl": zone.default_ttl,
            "soa": {"primaryNs": soa.primary_ns, "adminEmail": soa.admin_email, "serial": soa.serial,
                    "refresh": soa.refresh, "retry": soa.retry, "expire": soa.expire,
                    "negativeTtl": soa.negative_ttl},
            "nameServers": servers,
            # glue only for name servers inside the zone
            "nameServerIps": {h: ip for h, ip in glue.items() if h == zone.name or h.endswith("." + zone.name)},
        }
        if secondaries:  # transfers are allowed by the server's own allow-transfer (TSIG key + ACL)
            config["alsoNotify"] = [s.dns for s in secondaries]
        body: dict[str, object] = {"zoneName": name, "zoneType": "primary", "zoneConfig": config}
        if endpoint.tsig:
            body["updateKeyName"] = endpoint.tsig.name
        return body

    def _ensure(self, zone: Zone, result: ZoneResult, endpoint: Endpoint, role: str,
                primaries: list[Endpoint], secondaries: list[Endpoint], *, placed: bool) -> bool:
        """Makes sure the instance serves the zone. A placement recorded in the state is trusted
        (no API call); if the zone was removed behind the agent's back, the AXFR notices and the
        zone is created again."""
        api = self.api(endpoint)
        try:
            if not placed:
                created = True
                if not self.dry_run:
                    created = api.create(self._zone_body(zone, role, primaries, secondaries, endpoint))
                elif api.get(zone.name.rstrip(".")) is not None:
                    created = False
                if created:
                    result.created_on.append(endpoint.instance)
            result.instances[endpoint.instance] = ("Configured", f"{role} zone configured")
            return True
        except ZoneApiError as exc:
            result.instances[endpoint.instance] = ("Failed", str(exc))
            return False

    def _records(self, zone: Zone, result: ZoneResult, primary: Endpoint, managed: set[rrsetdiff.Key],
                 annotations: dict[str, str], recreate: Callable[[], bool]) -> set[rrsetdiff.Key]:
        for attempt in (1, 2):
            try:
                observed = rfc2136.observe(primary, zone.name)
            except rfc2136.ZoneMissing:
                if attempt == 2 or not recreate():
                    raise
                observed = rfc2136.observe(primary, zone.name)
            plan = rrsetdiff.plan_zone(zone.name, zone.rrsets, observed, managed)
            result.conflicts = plan.conflicts
            refusal = safety.gate(plan, managed, force=self.force, annotations=annotations)
            if refusal:
                result.refused = refusal
                return managed
            if self.dry_run or not plan.changes:
                result.changes = plan.changes
                return plan.managed_after if not self.dry_run else managed
            try:
                for update in rfc2136.build_updates(zone.name, plan.changes, primary.tsig, batch=self.batch):
                    with self._lock:
                        self.updates_sent += 1
                    rfc2136.send(primary, update)
            except rfc2136.PrerequisiteFailed:
                if attempt == 2:
                    raise
                log.warning("%s on %s changed while planning; observing again", zone.name, primary.instance)
                continue
            result.changes = plan.changes
            result.applied_on.append(primary.instance)
            return plan.managed_after
        raise AssertionError("unreachable")

    def zone(self, zone: Zone, state: AgentState, annotations: dict[str, str]) -> ZoneResult:
        result = ZoneResult(zone.key, zone.name, primaries={instance_id(k) for k in zone.primaries})
        missing = [instance_id(k) for k in zone.instances if instance_id(k) not in self.endpoints]
        for inst in missing:
            result.instances[inst] = ("Failed", f"no endpoint for instance {inst} in the endpoint map")
        primaries = [self.endpoints[instance_id(k)] for k in zone.primaries if instance_id(k) in self.endpoints]
        secondaries = [self.endpoints[instance_id(k)] for k in zone.secondaries if instance_id(k) in self.endpoints]
        placed = state.zones.get(zone.name, {})
        ok_primaries = [p for p in primaries if self._ensure(zone, result, p, "primary", primaries, secondaries,
                                                                 placed=p.instance in placed)]
        previous = {i for i, role in placed.items() if role == "secondary"}
        if previous != {s.instance for s in secondaries} and not self.dry_run:
            for primary in ok_primaries:  # the secondaries changed: tell the primaries whom to NOTIFY
                if primary.instance in placed and primary.instance not in result.created_on:
                    try:
                        self.api(primary).modify(zone.name.rstrip("."), also_notify=[s.dns for s in secondaries])
                    except ZoneApiError as exc:
                        result.instances[primary.instance] = ("Failed", str(exc))
        def failed_among(keys: list[ObjectKey]) -> list[str]:
            ids = [instance_id(k) for k in keys]
            return [i for i in ids if result.instances.get(i, ("", ""))[0] == "Failed"]

        failed = failed_among(zone.primaries)
        if failed or not ok_primaries:
            result.primary_error = "; ".join(result.instances[i][1] for i in failed) or "no reachable primary"
            return result
        managed = set(state.records.get(zone.name, set()))
        try:
            for primary in ok_primaries:
                def recreate(p: Endpoint = primary) -> bool:
                    log.warning("%s: zone %s is gone; creating it again", p.instance, zone.name)
                    return self._ensure(zone, result, p, "primary", primaries, secondaries, placed=False)

                managed = self._records(zone, result, primary, managed, annotations, recreate)
                if result.refused:
                    return result
        except AgentError as exc:
            result.primary_error = f"records not applied: {exc}"
            return result
        if not self.dry_run:
            state.records[zone.name] = managed
        for secondary in secondaries:
            self._ensure(zone, result, secondary, "secondary", primaries, secondaries,
                         placed=secondary.instance in placed)
        sec_failed = failed_among(zone.secondaries)
        if sec_failed:
            result.secondary_error = "; ".join(result.instances[i][1] for i in sec_failed)
        if self.dry_run:
            return result
        # named NOTIFYs its secondaries itself after an UPDATE (also-notify); the zone API's NOTIFY
        # is sent when a secondary is still behind at the first verification pass.
        def nudge(behind: list[str]) -> None:
            for primary in ok_primaries:
                try:
                    self.api(primary).notify(zone.name.rstrip("."))
                except ZoneApiError as exc:
                    log.warning("NOTIFY of %s via %s failed: %s", zone.name, primary.instance, exc)

        if result.changes:
            serving = ok_primaries + [s for s in secondaries if result.instances[s.instance][0] == "Configured"]
            result.checks = rfc2136.verify(serving, result.changes, wait=self.verify_wait, nudge=nudge)
        state.zones[zone.name] = {instance_id(k): ("primary" if k in zone.primaries else "secondary")
                                  for k in zone.instances}
        return result

    def prune(self, desired: Desired, state: AgentState) -> list[tuple[str, str]]:
        """Deletes zones the agent placed that are no longer wanted on that instance."""
        wanted = {(z.name, instance_id(k)) for z in desired.zones for k in z.instances}
        deleted = []
        for zone_name, placed in sorted(state.zones.items()):
            for inst in sorted(placed):
                if (zone_name, inst) in wanted or inst not in self.endpoints:
                    continue
                if not self.dry_run:
                    self.api(self.endpoints[inst]).delete(zone_name.rstrip("."))
                    del placed[inst]
                deleted.append((zone_name, inst))
            if not placed and not self.dry_run:
                del state.zones[zone_name]
                state.records.pop(zone_name, None)
        return deleted


ZONE_WORKERS = 4  # zones are independent; more threads only contend on 2 cores


def sync(desired: Desired, endpoints: Mapping[str, Endpoint], state: AgentState, *, force: bool = False,
         dry_run: bool = False, batch: int = rfc2136.DEFAULT_BATCH, verify_wait: float = 10) -> DnsResult:
    """Zones, records, NOTIFY and verification for every placed zone; `state` is updated in place."""
    runner = DnsSync(endpoints, force=force, dry_run=dry_run, batch=batch, verify_wait=verify_wait)
    try:
        zones = [z for z in desired.zones if z.instances]
        with concurrent.futures.ThreadPoolExecutor(max_workers=ZONE_WORKERS) as pool:
            results = list(pool.map(lambda z: runner.zone(z, state, z.annotations), zones))
        errors: list[str] = []
        try:
            deleted = runner.prune(desired, state)
        except AgentError as exc:
            deleted, errors = [], [f"zone deletion failed: {exc}"]
        return DnsResult(results, deleted, runner.updates_sent, errors)
    finally:
        runner.close()
