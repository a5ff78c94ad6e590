"""Executes the approved DNS part of a plan: zones on their servers, RRsets by DNS UPDATE,
verification.

Per zone (zones run concurrently), in this order, each step on every server (pod) of the instances
it concerns: an instance written pod by pod gets each zone and RRset on each of its pods, and is
verified on each:

    store intent -> role-change removals -> primaries (zone API) -> also-notify -> RRsets (UPDATE)
    -> secondaries -> removals -> store the ownership reached

then, once every zone is written, each written primary's serial (one query per primary for all its
zones) and verification of all of them at once (agent/reconcile/dnsconfirm.py, dnsverify.py): each
changed RRset on the primaries, each secondary at the serial its primary reached; a zone with
nothing changed but a secondary behind (it missed an earlier run, by the serials observe read) is
caught up (NOTIFY) or reported, never silently left behind.

The intent (what this zone's writes may change) is stored before the first write and replaced by
the ownership reached after the last, so a kill at any instant leaves a record the next run can
fold back in (agent/plan/zonediff.recover). A primary failure is fatal for that zone (nothing
more is written there); a secondary failure is not. A zone whose data changed between observe and
apply (an UPDATE prerequisite failed) is put on the result's `stale` list with its intent left in
the store; the orchestrator observes, plans, gates and applies those zones once more. The UPDATE
batches a zone's primaries took before it stopped are on its result (`written`, and `changes`): the
zone serves them, whatever the second round decides, and the messages saying it stopped name them.

Everything sent comes from the plan (RRset changes, zone API bodies, transfers); nothing here
decides, refuses or changes the plan: what happened goes into the results
(agent/reconcile/dnsresult.py).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from agent.clients import rfc2136, updatewire
from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint, by_server
from agent.clients.statestore import Store
from agent.errors import AgentError, ZoneApiError
from agent.model.observed import DnsObserved
from agent.model.ownership import ZoneOwnership
from agent.model.rrchange import RRChange
from agent.model.servers import instance_of
from agent.plan.zoneplan import RRsetPlan, ZonePlan
from agent.reconcile import dnsconfirm, dnsverify, insync
from agent.reconcile.dnsresult import DnsResult, ZoneResult, landed, served, union

if TYPE_CHECKING:
    from agent.clients.zoneapi import ZoneApi

log = logging.getLogger(__name__)
ZONE_WORKERS = 4  # zones are independent; more threads only contend on 2 cores


@dataclasses.dataclass(frozen=True)
class DnsApplyOptions:
    batch: int = updatewire.DEFAULT_BATCH
    verify_wait: float = 10
    revision: str | None = None  # recorded on each zone it writes (DNSZone status shows it)


class _Stop(Exception):
    """Nothing more is written to this zone in this run (the reason is already in the result)."""


class DnsApply:
    def __init__(self, endpoints: Mapping[str, Endpoint], store: Store, options: DnsApplyOptions,
                 deadline: Deadline, serials: dnsconfirm.Serials | None = None) -> None:
        """`serials`: what observe read of each server (DnsObserved.serials), not asked again."""
        # every server by its id: an instance's one address, or each of its pods
        # (`Endpoint.each_server`)
        self.endpoints = by_server(endpoints)
        self.store, self.options, self.deadline = store, options, deadline
        self.apis: dict[str, ZoneApi] = {}
        self.updates_sent = 0
        # once all zones are written
        self.confirming = dnsconfirm.Confirming(self.endpoints, deadline, serials or {})
        self._lock = threading.Lock()

    def api(self, instance: str) -> ZoneApi:
        # with its HTTP client: only when zones are written
        from agent.clients.zoneapi import ZoneApi

        endpoint = self.endpoints[instance]
        with self._lock:
            if instance not in self.apis:
                self.apis[instance] = ZoneApi(endpoint.api_url, token=endpoint.token,
                                              instance=instance, deadline=self.deadline)
            return self.apis[instance]

    def close(self) -> None:
        for api in self.apis.values():
            api.close()

    # -- zone placements -------------------------------------------------------------------
    def _create(self, zp: ZonePlan, result: ZoneResult, instance: str, role: str) -> bool:
        try:
            self.deadline.check(f"creating {zp.name} on {instance}")
            if instance in zp.unbuildable:  # e.g. a secondary whose primaries have no ready pod yet
                raise ZoneApiError(zp.unbuildable[instance])
            body = zp.bodies.get(instance)
            if body is None:
                raise ZoneApiError(f"no zone API body was planned for {instance}")
            if self.api(instance).create(body):
                result.created_on.append(instance)
            elif role == "primary" and instance in zp.transfers:
                # it was there already (adopted): tell it
                self._modify(zp, instance)
            result.servers[instance] = ("Configured", f"{role} zone configured")
            return True
        except AgentError as exc:
            result.servers[instance] = ("Failed", str(exc))
            return False

    def _modify(self, zp: ZonePlan, primary: str) -> None:
        sent = zp.transfers[primary]
        allow = list(sent.allow_transfer) if sent.allow_transfer is not None else None
        self.api(primary).modify(zp.name.rstrip("."), also_notify=list(sent.also_notify),
                                 allow_transfer=allow)

    def _reopen(self, zp: ZonePlan, result: ZoneResult) -> None:
        """The primaries that refused the agent's AXFR get the zone's allow-transfer with the
        agent's current addresses; the zone goes on the stale list, to be read and planned again."""
        for server in zp.reopen:
            try:
                self.deadline.check(f"allowing the agent's transfers of {zp.name} on {server}")
                self._modify(zp, server)
            except AgentError as exc:
                result.primary_error = ("AXFR refused, and the allow-transfer could not be "
                                        f"written: {exc}")
                return
            result.servers.pop(server, None)
        result.stale = ("a primary refused the agent's zone transfer: its allow-transfer now lists "
                        "the agent")

    def _delete(self, zp: ZonePlan, result: ZoneResult, instance: str) -> bool:
        try:
            self.deadline.check(f"removing {zp.name} from {instance}")
            self.api(instance).delete(zp.name.rstrip("."))
            result.deleted_from.append(instance)
            return True
        except AgentError as exc:
            result.servers[instance] = ("Failed", f"could not remove the zone: {exc}")
            return False

    def _primaries(self, zp: ZonePlan, result: ZoneResult) -> None:
        role_changed = [s for s in zp.deletes if _keeps_zone(zp, s)]
        for instance in role_changed:
            if not self._delete(zp, result, instance):
                raise _Stop
        for instance, role in zp.creates:
            if role == "primary" and not self._create(zp, result, instance, role):
                result.primary_error = result.servers[instance][1]
                raise _Stop
        for instance in zp.renotify:
            try:
                self.deadline.check(f"updating also-notify of {zp.name} on {instance}")
                self._modify(zp, instance)
            except AgentError as exc:
                result.servers[instance] = ("Failed", str(exc))
                result.primary_error = str(exc)
                raise _Stop from exc

    # -- records -----------------------------------------------------------------------------
    def _send(self, zp: ZonePlan, primary: Endpoint, plan: RRsetPlan, sent: list[RRChange]) -> None:
        """The server's UPDATEs, batch after batch; `sent` gets the changes of each one it took."""
        batches = updatewire.batches(zp.name, plan.changes, primary.tsig, batch=self.options.batch)
        for update, changes in batches:
            self.deadline.check(f"sending the UPDATE for {zp.name} to {primary.instance}")
            with self._lock:
                self.updates_sent += 1
            rfc2136.send(primary, update, timeout=self.deadline.timeout(10))
            sent += changes

    def _records(self, zp: ZonePlan, result: ZoneResult) -> None:
        written: list[RRChange] = []  # by the servers done so far, each change once
        for instance, plan in zp.records.items():
            sent: list[RRChange] = []
            try:
                self._send(zp, self.endpoints[instance], plan, sent)
            except AgentError as exc:
                # the batches before it went out (the intent covers them): the zone serves them
                result.written = union(written, sent)
                result.changes = list(result.written)
                if isinstance(exc, rfc2136.PrerequisiteFailed):
                    log.warning("%s on %s changed since it was observed: %s",
                                zp.name, instance, exc)
                    result.stale = str(exc)
                else:
                    result.primary_error = f"records not applied: {exc}{landed(result.written)}"
                raise _Stop from exc
            written = union(written, sent)
            result.applied_on.append(instance)
        result.changes = zp.rrset_changes
        result.conflicts = zp.conflicts

    # -- one zone ----------------------------------------------------------------------------
    def _secondaries(self, zp: ZonePlan, result: ZoneResult) -> None:
        for instance, role in zp.creates:
            if role == "secondary":
                # its primaries' pods moved: bindcar cannot change a zone's primaries, so the zone
                # goes and comes again (a secondary: it transfers again); not removed, it is tried
                # next run
                if instance in zp.repoint and not self._delete(zp, result, instance):
                    continue
                self._create(zp, result, instance, role)
        failed = [s for i in zp.secondaries for s in zp.servers_of(i)
                  if result.servers.get(s, ("", ""))[0] == "Failed"]
        if failed:
            result.secondary_error = "; ".join(result.servers[s][1] for s in failed)

    def _removals(self, zp: ZonePlan, result: ZoneResult) -> None:
        for server in zp.deletes:
            if not _keeps_zone(zp, server):
                self._delete(zp, result, server)

    def zone(self, zp: ZonePlan, *, in_sync: bool = False) -> ZoneResult:
        """One zone's steps; `in_sync`: the plan found nothing to write or record there."""
        result = _known_states(zp)
        if zp.reopen:
            self._reopen(zp, result)
            return result
        if zp.blocked:
            result.primary_error = "; ".join(e for s, e in zp.errors.items()
                                             if instance_of(s) in zp.primaries)
            return result
        result.revision = zp.revision
        if in_sync:  # nothing to write, nothing to record: most zones of most runs
            _served_as_observed(zp, result)
            return result
        if self._write(zp, result):
            self.confirming.queue(zp, result)
        return result

    def _write(self, zp: ZonePlan, result: ZoneResult) -> bool:
        """The zone's writes in their order, its intent stored before and its ownership after;
        False when they stopped (the result says why)."""
        try:
            if not zp.empty or zp.recovered:
                self.deadline.check(f"writing zone {zp.name}")
                self.store.save_zone(zp.in_flight())
            self._primaries(zp, result)
            self._records(zp, result)
            self._secondaries(zp, result)
            self._removals(zp, result)
            self.store.save_zone(_ownership_reached(zp, result, self.options.revision))
            result.revision = self.options.revision if not zp.empty or zp.recovered else zp.revision
            self.confirming.remember(zp, result)
        except _Stop:
            return False
        except AgentError as exc:  # the deadline, or the store
            result.primary_error = result.primary_error or str(exc)
            return False
        return True

    def catch_up(self, in_sync: list[tuple[ZonePlan, ZoneResult]]) -> None:
        """For zones with nothing to do: a secondary behind its primary is nudged and confirmed
        (dnsconfirm)."""
        self.confirming.catch_up(in_sync)

    def confirm_queued(self) -> None:
        """Confirms every queued zone at once, each written primary's serial asked once
        (dnsconfirm)."""
        def nudge(w: dnsverify.Written) -> None:
            # named notifies by itself; this is for a secondary that is late
            for primary in w.primaries:
                try:
                    self.api(primary).notify(w.zone.rstrip("."))
                except ZoneApiError as exc:
                    log.warning("NOTIFY of %s via %s failed: %s", w.zone, primary, exc)

        self.confirming.confirm(patience=self.options.verify_wait, nudge=nudge)


def _keeps_zone(zp: ZonePlan, server: str) -> bool:
    """The server's instance is one of the zone's primaries or secondaries after the plan."""
    instance = instance_of(server)
    return instance in zp.primaries or instance in zp.secondaries


def _known_states(zp: ZonePlan) -> ZoneResult:
    """The zone's result before any write: the servers the plan found failed or waiting, and those
    that keep the zone as it was placed."""
    result = ZoneResult(zp.key, zp.name, primaries=set(zp.primaries))
    for server, error in zp.errors.items():
        result.servers[server] = ("Failed", error)
    for instance, why in zp.waiting.items():  # Bindy's state for "selected, not configured yet"
        result.servers[instance] = ("Claimed", why)
    for instance, role in zp.placements_before.items():
        if instance in zp.primaries + zp.secondaries:
            for server in zp.servers_of(instance):
                result.servers.setdefault(server, ("Configured", f"{role} zone configured"))
    return result


def _served_as_observed(zp: ZonePlan, result: ZoneResult) -> None:
    """A zone in sync: what its primaries served when observed is what they serve."""
    result.conflicts = zp.conflicts
    result.after = {p: seen for p, seen in zp.observed.items()
                    if not seen.error and p in zp.records}
    result.applied_on = list(zp.records)


def _ownership_reached(zp: ZonePlan, result: ZoneResult, revision: str | None) -> ZoneOwnership:
    """What the agent owns after this zone's steps: the plan's outcome, less what did not happen."""
    owned = zp.ownership_after(revision)
    for server, _ in zp.creates:
        if server not in result.created_on and result.servers.get(server, ("", ""))[0] == "Failed":
            if server in zp.repoint:
                # still transferring from the old addresses: created again next run
                owned.transfer_from = zp.transfer_from_before
                if server not in result.deleted_from:  # not removed: still there, placed as it was
                    continue
            # not created everywhere: the next run creates it
            owned.placements.pop(instance_of(server), None)
    for server in zp.deletes:
        instance = instance_of(server)
        kept = instance in zp.placements_before and instance not in owned.placements
        if server not in result.deleted_from and kept:
            # still there: delete it next time
            owned.placements[instance] = zp.placements_before[instance]
    return owned


def apply(zones: list[ZonePlan], endpoints: Mapping[str, Endpoint], store: Store, *,
          options: DnsApplyOptions, deadline: Deadline, observed: DnsObserved | None = None,
          progress: Callable[[int, int], None] | None = None,
          reported: insync.Reported | None = None) -> DnsResult:
    """Executes every zone's plan; ownership is stored as it goes. `progress` hears (zones done,
    zones). `observed`: what the plans were made from (dnsobserve.observe); when only some zones
    were asked (its `focus`), only they are checked for a secondary left behind, the others wait for
    the next run that asks every zone. `reported`: a long-running agent's zones found in sync, with
    their plans: one left unasked with the very same plan takes its last result
    (agent/reconcile/insync.py), so a push walks the zones it changes, not all 10,000."""
    serials = observed.serials if observed is not None else None
    runner = DnsApply(endpoints, store, options, deadline, serials)
    focus = observed.focus if observed is not None else None
    in_sync = [zp.in_sync for zp in zones]
    work = [(i, zp) for i, zp in enumerate(zones) if not in_sync[i]]
    done: dict[int, ZoneResult] = {}
    try:
        # the zones with writes first: they are what a push waits for; the ones in sync (most zones
        # of most runs) only report what they serve
        with concurrent.futures.ThreadPoolExecutor(max_workers=ZONE_WORKERS) as pool:
            written = pool.map(lambda item: runner.zone(item[1]), work)
            for (i, _), result in zip(work, written, strict=True):
                done[i] = result
                if progress is not None:
                    progress(len(done), len(zones))
        rest = [i for i, already in enumerate(in_sync) if already]
        checked = [i for i in rest if focus is None or zones[i].name in focus]
        for i in checked:
            done[i] = runner.zone(zones[i], in_sync=True)
        runner.catch_up([(zones[i], done[i]) for i in checked])
        started = time.monotonic()
        # what a push waits for is confirmed before the other zones are reported on
        runner.confirm_queued()
        verified = time.monotonic() - started
        unasked = [i for i in rest if i not in done]
        reused = insync.reuse(zones, unasked, reported, done)
        done.update((i, runner.zone(zones[i], in_sync=True)) for i in unasked if i not in reused)
        if progress is not None and rest:
            progress(len(zones), len(zones))
    finally:
        runner.close()
    results = [done[i] for i in range(len(zones))]
    # a result reused says what it said: nothing new
    walked = [i for i in range(len(zones)) if i not in reused]
    for i in walked:
        served(zones[i], results[i])
    insync.keep(zones, results, walked, reported)
    deleted = [(results[i].name, s) for i in walked for s in results[i].deleted_from
               if not _keeps_zone(zones[i], s)]
    placed = [r for r, z in zip(results, zones, strict=True) if z.zone is not None]
    errors = [f"zone {results[i].name}: {results[i].primary_error}" for i in walked
              if zones[i].zone is None and results[i].primary_error]
    stale = {results[i].name: results[i].stale for i in walked if results[i].stale}
    return DnsResult(placed, sorted(deleted), runner.updates_sent, errors, stale, verified,
                     answered=runner.confirming.answered)

