"""Executes the approved DNS part of a plan: zones on their servers, RRsets by DNS UPDATE, verification.

Per zone (zones run concurrently), in this order:

    store intent -> role-change removals -> primaries (zone API) -> also-notify -> RRsets (UPDATE)
    -> secondaries -> removals -> store settled ownership

then, once every zone is written, verification of all of them at once (agent/reconcile/dnsverify.py):
each changed RRset on the primaries, each secondary at the serial its primary reached; a zone
with nothing changed but a secondary behind (it missed an earlier run) is caught up (NOTIFY) or
reported, never silently left behind.

The intent (what this zone's writes may change) is stored before the first write and replaced by
the settled ownership after the last, so a kill at any instant leaves a record the next run can
fold back in (agent/plan/zonediff.recover). A primary failure is fatal for that zone (nothing
more is written there); a secondary failure is not. A zone whose data changed between observe and
apply (an UPDATE prerequisite failed) is observed, planned and gated again once.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agent.desired import zonebody
from agent.errors import AgentError, ZoneApiError
from agent.gate import safety
from agent.model.key import ObjectKey
from agent.model.ownership import Key, ZoneOwnership
from agent.plan import rrsetdiff, zonediff
from agent.plan.observed import ZoneObserved
from agent.plan.zonediff import ZonePlan
from agent.reconcile import axfr, dnsobserve, dnsverify, rfc2136
from agent.reconcile.deadline import Deadline
from agent.reconcile.endpoints import Endpoint, allow_transfer, transfer_addresses
from agent.reconcile.statestore import Store

if TYPE_CHECKING:
    from agent.reconcile.zoneapi import ZoneApi

log = logging.getLogger(__name__)
ZONE_WORKERS = 4  # zones are independent; more threads only contend on 2 cores


@dataclasses.dataclass
class ZoneResult:
    key: ObjectKey | None
    name: str
    instances: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)  # id -> (state, message)
    primaries: set[str] = dataclasses.field(default_factory=set)  # instance ids in the primary role
    primary_error: str = ""
    secondary_error: str = ""
    refused: str = ""  # the re-plan after a concurrent change was refused by the gate
    conflicts: list[str] = dataclasses.field(default_factory=list)
    changes: list[rrsetdiff.RRChange] = dataclasses.field(default_factory=list)
    applied_on: list[str] = dataclasses.field(default_factory=list)  # primaries that took the changes
    checks: list[rfc2136.Check] = dataclasses.field(default_factory=list)
    created_on: list[str] = dataclasses.field(default_factory=list)
    deleted_from: list[str] = dataclasses.field(default_factory=list)
    after: dict[str, ZoneObserved] = dataclasses.field(default_factory=dict)  # primary -> what it now serves
    revision: str | None = None  # the revision whose writes this zone serves (None: not known)

    @property
    def ok(self) -> bool:
        return not (self.primary_error or self.secondary_error or self.refused)


@dataclasses.dataclass
class DnsResult:
    zones: list[ZoneResult]  # the zones Git places
    deleted: list[tuple[str, str]]  # (zone, instance) the zone was removed from
    updates_sent: int = 0
    errors: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(z.ok for z in self.zones) and not self.errors


@dataclasses.dataclass(frozen=True)
class DnsApplyOptions:
    batch: int = rfc2136.DEFAULT_BATCH
    verify_wait: float = 10
    policy: safety.Policy = safety.Policy()
    revision: str | None = None  # recorded on each zone it writes (DNSZone status shows it)
    transfer: axfr.TransferLimits = axfr.TransferLimits()  # bounds of the AXFR a re-plan makes


class _Stop(Exception):
    """Nothing more is written to this zone in this run (the reason is already in the result)."""


class NoTransferSource(AgentError):
    """A secondary zone cannot be created: none of its primaries has a ready pod address."""


class _Refused(AgentError):
    """A re-plan after a concurrent change was refused by the gate."""


class DnsApply:
    def __init__(self, endpoints: Mapping[str, Endpoint], store: Store, options: DnsApplyOptions,
                 deadline: Deadline) -> None:
        self.endpoints, self.store, self.options, self.deadline = endpoints, store, options, deadline
        self.apis: dict[str, ZoneApi] = {}
        self.updates_sent = 0
        self.written: list[tuple[ZoneResult, dnsverify.Written]] = []  # zones to verify when all are written
        self._lock = threading.Lock()

    def api(self, instance: str) -> ZoneApi:
        from agent.reconcile.zoneapi import ZoneApi  # with its HTTP client: only when zones are written

        endpoint = self.endpoints[instance]
        with self._lock:
            if instance not in self.apis:
                self.apis[instance] = ZoneApi(endpoint.api_url, token=endpoint.token, instance=instance,
                                              deadline=self.deadline)
            return self.apis[instance]

    def close(self) -> None:
        for api in self.apis.values():
            api.close()

    # -- zone placements -------------------------------------------------------------------
    def _body(self, zp: ZonePlan, instance: str, role: str) -> dict[str, object]:
        assert zp.zone is not None
        if role == "secondary":
            primaries = transfer_addresses([self.endpoints[p] for p in zp.primaries if p in self.endpoints])
            if not primaries:
                raise NoTransferSource(f"no ready pod of its primaries {', '.join(zp.primaries)} to transfer from")
            return zonebody.secondary(zp.name, primaries=primaries)
        tsig = self.endpoints[instance].tsig
        return zonebody.primary(zp.zone, update_key=tsig.name if tsig else None, **self._transfers(zp, instance))

    def _transfers(self, zp: ZonePlan, primary: str) -> dict[str, Any]:
        """The secondaries' addresses for the primary's also-notify and allow-transfer."""
        secondaries = [self.endpoints[s] for s in zp.secondaries if s in self.endpoints]
        return {"also_notify": transfer_addresses(secondaries),
                "allow_transfer": allow_transfer(self.endpoints[primary], secondaries)}

    def _create(self, zp: ZonePlan, result: ZoneResult, instance: str, role: str) -> bool:
        try:
            self.deadline.check(f"creating {zp.name} on {instance}")
            if self.api(instance).create(self._body(zp, instance, role)):
                result.created_on.append(instance)
            elif role == "primary" and zp.secondaries:  # it was there already (adopted): tell it its secondaries
                self.api(instance).modify(zp.name.rstrip("."), **self._transfers(zp, instance))
            result.instances[instance] = ("Configured", f"{role} zone configured")
            return True
        except AgentError as exc:
            result.instances[instance] = ("Failed", str(exc))
            return False

    def _delete(self, zp: ZonePlan, result: ZoneResult, instance: str) -> bool:
        try:
            self.deadline.check(f"removing {zp.name} from {instance}")
            self.api(instance).delete(zp.name.rstrip("."))
            result.deleted_from.append(instance)
            return True
        except AgentError as exc:
            result.instances[instance] = ("Failed", f"could not remove the zone: {exc}")
            return False

    def _primaries(self, zp: ZonePlan, result: ZoneResult) -> None:
        role_changed = [i for i in zp.deletes if i in zp.primaries or i in zp.secondaries]
        for instance in role_changed:
            if not self._delete(zp, result, instance):
                raise _Stop
        for instance, role in zp.creates:
            if role == "primary" and not self._create(zp, result, instance, role):
                result.primary_error = result.instances[instance][1]
                raise _Stop
        for instance in zp.renotify:
            try:
                self.deadline.check(f"updating also-notify of {zp.name} on {instance}")
                self.api(instance).modify(zp.name.rstrip("."), **self._transfers(zp, instance))
            except AgentError as exc:
                result.instances[instance] = ("Failed", str(exc))
                result.primary_error = str(exc)
                raise _Stop from exc

    # -- records -----------------------------------------------------------------------------
    def _send(self, zp: ZonePlan, primary: Endpoint, plan: rrsetdiff.RRsetPlan) -> None:
        for update in rfc2136.build_updates(zp.name, plan.changes, primary.tsig, batch=self.options.batch):
            self.deadline.check(f"sending the UPDATE for {zp.name} to {primary.instance}")
            with self._lock:
                self.updates_sent += 1
            rfc2136.send(primary, update, timeout=self.deadline.timeout(10))

    def _replan(self, zp: ZonePlan, primary: Endpoint, managed: set[Key]) -> rrsetdiff.RRsetPlan:
        """The zone changed meanwhile: observe it again, plan again, gate again, keep the intent true."""
        log.warning("%s on %s changed while planning; observing again", zp.name, primary.instance)
        observed = rfc2136.observe(primary, zp.name, timeout=self.deadline.timeout(10),
                                   lifetime=dnsobserve.transfer_time(self.deadline), limits=self.options.transfer)
        plan = (rrsetdiff.plan_zone(zp.name, zp.zone.rrsets, observed, managed) if zp.zone is not None
                else zonediff.leftovers(zp.name, observed, managed))  # it left Git but stays: the agent's RRsets go
        refusal = safety.records_refusal(zp.name, plan, managed, zp.annotations, self.options.policy)
        if refusal:
            raise _Refused(refusal)
        earlier = zp.intent()  # the UPDATEs sent before the prerequisite failed are in this one only
        zp.records[primary.instance] = plan
        flight = zp.in_flight()
        assert flight.pending is not None
        flight.pending.writes = {**earlier.writes, **flight.pending.writes}
        flight.pending.deletes |= earlier.deletes
        self.store.save_zone(flight)
        return plan

    def _records(self, zp: ZonePlan, result: ZoneResult) -> None:
        managed = set(zp.managed_before)
        for instance in list(zp.records):
            primary, plan = self.endpoints[instance], zp.records[instance]
            try:
                try:
                    self._send(zp, primary, plan)
                except rfc2136.PrerequisiteFailed:
                    zp.observed.pop(instance, None)  # re-observed: what the first look saw is stale
                    plan = self._replan(zp, primary, managed)
                    self._send(zp, primary, plan)
            except _Refused as refused:
                result.refused = str(refused)
                raise _Stop from refused
            except AgentError as exc:
                result.primary_error = f"records not applied: {exc}"
                raise _Stop from exc
            managed = plan.managed_after
            result.applied_on.append(instance)
        if zp.records:  # after a re-plan the outcome differs from the plan's
            zp.managed_after = managed
        result.changes = zp.rrset_changes
        result.conflicts = zp.conflicts

    # -- one zone ----------------------------------------------------------------------------
    def _secondaries(self, zp: ZonePlan, result: ZoneResult) -> None:
        for instance, role in zp.creates:
            if role == "secondary":
                self._create(zp, result, instance, role)
        failed = [i for i in zp.secondaries if result.instances.get(i, ("", ""))[0] == "Failed"]
        if failed:
            result.secondary_error = "; ".join(result.instances[i][1] for i in failed)

    def _removals(self, zp: ZonePlan, result: ZoneResult) -> None:
        for instance in zp.deletes:
            if instance not in zp.primaries and instance not in zp.secondaries:
                self._delete(zp, result, instance)

    def zone(self, zp: ZonePlan, *, settled: bool = False) -> ZoneResult:
        """One zone's steps; `settled`: the caller found nothing to write or record there."""
        result = ZoneResult(zp.key, zp.name, primaries=set(zp.primaries))
        for instance, error in zp.errors.items():
            result.instances[instance] = ("Failed", error)
        for instance, role in zp.placements_before.items():
            if instance in zp.primaries + zp.secondaries:
                result.instances.setdefault(instance, ("Configured", f"{role} zone configured"))
        if zp.blocked:
            result.primary_error = "; ".join(zp.errors[p] for p in zp.primaries)
            return result
        result.revision = zp.revision
        if settled:  # nothing to write, nothing to record: most zones of most runs
            result.conflicts = zp.conflicts
            result.after = {p: seen for p, seen in zp.observed.items() if not seen.error and p in zp.records}
            result.applied_on = list(zp.records)
            return result
        try:
            if not zp.empty or zp.recovered:
                self.deadline.check(f"writing zone {zp.name}")
                self.store.save_zone(zp.in_flight())
            self._primaries(zp, result)
            self._records(zp, result)
            self._secondaries(zp, result)
            self._removals(zp, result)
            self.store.save_zone(_settled(zp, result, self.options.revision))
            result.revision = self.options.revision if not zp.empty or zp.recovered else zp.revision
            self._remember(zp, result)
        except _Stop:
            return result
        except AgentError as exc:  # the deadline, or the store
            result.primary_error = result.primary_error or str(exc)
            return result
        self._to_verify(zp, result)
        return result

    def _remember(self, zp: ZonePlan, result: ZoneResult) -> None:
        """What each primary serves now and its serial, so that the next run need not transfer it."""
        for primary, plan in zp.records.items():
            seen = zp.observed.get(primary)
            if seen is None or seen.error:
                continue
            if not plan.changes:
                result.after[primary] = seen
                continue
            rrsets = dict(seen.rrsets or {})
            for change in plan.changes:
                if change.after is None:
                    rrsets.pop(change.key, None)
                else:
                    rrsets[change.key] = change.after
            serial = rfc2136.serials(self.endpoints[primary], [zp.name], timeout=self.deadline.timeout(2))
            result.after[primary] = ZoneObserved(rrsets, serial=serial.get(zp.name))

    def _to_verify(self, zp: ZonePlan, result: ZoneResult) -> None:
        """Queues the zone for verification: its changed RRsets on the primaries that took them, and
        its configured secondaries at the serial the primary reached (with nothing changed, at the
        primary's serial: one that was down or stopped may be behind from an earlier run)."""
        secondaries = [s for s in zp.secondaries
                       if s in self.endpoints and result.instances.get(s, ("", ""))[0] == "Configured"]
        if not result.changes and not (secondaries and result.applied_on):
            return
        serials = [result.after[p].serial if p in result.after else None for p in result.applied_on]
        serial = serials[0] if len(serials) == 1 else None
        with self._lock:
            self.written.append((result, dnsverify.Written(zp.name, result.changes, list(result.applied_on),
                                                           secondaries, serial)))

    def catch_up(self, settled: list[tuple[ZonePlan, ZoneResult]]) -> None:
        """For zones with nothing to do: one serial sweep per secondary finds any that is behind its
        primary (down or stopped in an earlier run); only those are nudged and verified."""
        by_secondary: dict[str, list[tuple[ZonePlan, ZoneResult, int]]] = {}
        for zp, result in settled:
            seen = zp.observed.get(next(iter(zp.records), ""))
            if seen is None or seen.serial is None:
                continue
            for s in zp.secondaries:
                if s in self.endpoints and result.instances.get(s, ("", ""))[0] == "Configured":
                    by_secondary.setdefault(s, []).append((zp, result, seen.serial))
        behind: dict[str, tuple[ZonePlan, ZoneResult]] = {}
        for secondary, items in by_secondary.items():
            if self.deadline.expired:
                return
            now = rfc2136.serials(self.endpoints[secondary], [zp.name for zp, _, _ in items],
                                  timeout=self.deadline.timeout(2))
            behind.update({zp.name: (zp, r) for zp, r, serial in items if now.get(zp.name) != serial})
        for zp, result in behind.values():
            self._to_verify(zp, result)

    def verify(self) -> None:
        """Confirms every queued zone at once (agent/reconcile/dnsverify.py): the waits for secondaries
        to transfer overlap instead of adding up zone after zone."""
        unknown: dict[str, list[dnsverify.Written]] = {}  # no changes: the target is the primary's serial now
        for _, w in self.written:
            if not w.changes and w.serial is None and w.primaries:
                unknown.setdefault(w.primaries[0], []).append(w)
        for primary, items in unknown.items():
            now = rfc2136.serials(self.endpoints[primary], [w.zone for w in items], timeout=self.deadline.timeout(2))
            for w in items:
                w.serial = now.get(w.zone)
        queued = [w for _, w in self.written if w.changes or w.serial is not None]

        def nudge(w: dnsverify.Written) -> None:  # named notifies by itself; this is for a secondary that is late
            for primary in w.primaries:
                try:
                    self.api(primary).notify(w.zone.rstrip("."))
                except ZoneApiError as exc:
                    log.warning("NOTIFY of %s via %s failed: %s", w.zone, primary, exc)

        dnsverify.verify(queued, self.endpoints, patience=self.options.verify_wait,
                         limit=max(0.0, self.deadline.remaining()), nudge=nudge)
        for result, w in self.written:
            result.checks = w.checks


def _settled_already(zp: ZonePlan) -> bool:
    if zp.settled_once:
        return True
    zp.settled_once = (zp.empty and not zp.recovered and not zp.errors and zp.managed_after == zp.managed_before
                       and zp.placements_after == zp.placements_before)
    return zp.settled_once


def _settled(zp: ZonePlan, result: ZoneResult, revision: str | None) -> ZoneOwnership:
    """What the agent owns after this zone's steps: the plan's outcome, less what did not happen."""
    owned = zp.settled(revision)
    for instance, _ in zp.creates:
        if instance not in result.created_on and result.instances.get(instance, ("", ""))[0] == "Failed":
            owned.placements.pop(instance, None)  # never created: the next run creates it
    for instance in zp.deletes:
        if instance not in result.deleted_from and instance in zp.placements_before:
            owned.placements[instance] = zp.placements_before[instance]  # still there: delete it next time
    return owned


def apply(zones: list[ZonePlan], endpoints: Mapping[str, Endpoint], store: Store, *, options: DnsApplyOptions,
          deadline: Deadline, progress: Callable[[int, int], None] | None = None,
          focus: set[str] | None = None) -> DnsResult:
    """Executes every zone's plan; ownership is stored as it goes. `progress` hears (zones done, zones).
    `focus`: only these zones were observed (dnsobserve.observe); only they are checked for a
    secondary left behind, the others wait for the next run without a focus."""
    runner = DnsApply(endpoints, store, options, deadline)
    settled = [_settled_already(zp) for zp in zones]
    work = [(i, zp) for i, zp in enumerate(zones) if not settled[i]]
    done: dict[int, ZoneResult] = {}
    try:
        # the zones with writes first: they are what a push waits for; the settled ones (most zones
        # of most runs) only report what they serve
        with concurrent.futures.ThreadPoolExecutor(max_workers=ZONE_WORKERS) as pool:
            for (i, _), result in zip(work, pool.map(lambda item: runner.zone(item[1]), work), strict=True):
                done[i] = result
                if progress is not None:
                    progress(len(done), len(zones))
        rest = [i for i, already in enumerate(settled) if already]
        checked = [i for i in rest if focus is None or zones[i].name in focus]
        for i in checked:
            done[i] = runner.zone(zones[i], settled=True)
        runner.catch_up([(zones[i], done[i]) for i in checked])
        runner.verify()  # what a push waits for is confirmed before the other zones are reported on
        for i in rest:
            if i not in done:
                done[i] = runner.zone(zones[i], settled=True)
        if progress is not None and rest:
            progress(len(zones), len(zones))
    finally:
        runner.close()
    results = [done[i] for i in range(len(zones))]
    deleted = [(r.name, i) for r, z in zip(results, zones, strict=True) for i in r.deleted_from
               if i not in z.primaries and i not in z.secondaries]
    placed = [r for r, z in zip(results, zones, strict=True) if z.zone is not None]
    errors = [f"zone {r.name}: {r.primary_error}" for r, z in zip(results, zones, strict=True)
              if z.zone is None and r.primary_error]
    return DnsResult(placed, sorted(deleted), runner.updates_sent, errors)
