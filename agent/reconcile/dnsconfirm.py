"""What a DNS apply confirms once every zone is written (agent/reconcile/dnsapply.py), asking each
server as few times as it can:

- each written primary's SOA serial after the writes, asked once per primary for all its zones:
  what the zone now serves is remembered with it (the next run's unmoved check,
  agent/observe/soaserials.py), and it is the serial the zone's secondaries must reach;
- the secondaries of zones in sync that are behind their primary (they missed an earlier run): from
  the serials observe read, asked only of a secondary observe did not ask;
- then all of them at once (agent/reconcile/dnsverify.py). The servers that answered a zone's SOA
  after the writes are kept (`answered`): a pod waiting for its zones is not asked for those again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping

from agent.clients import dnsquery
from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint
from agent.desired import nameservers
from agent.model.observed import ZoneObserved
from agent.plan.zoneplan import ZonePlan
from agent.reconcile import dnsverify
from agent.reconcile.dnsresult import ZoneResult

# server -> zone -> SOA serial (DnsObserved.serials)
Serials = Mapping[str, Mapping[str, int | None]]


class Confirming:
    def __init__(self, endpoints: Mapping[str, Endpoint], deadline: Deadline,
                 observed: Serials) -> None:
        self.endpoints, self.deadline, self.observed = endpoints, deadline, observed
        # confirmed once all zones are written
        self.queued: list[tuple[ZoneResult, dnsverify.Written]] = []
        # (result, primary, zone, signed without known keys): its serial is asked once all zones
        # are written
        self.written: list[tuple[ZoneResult, str, str, bool]] = []
        # server -> the zones it answered an SOA for after the writes
        self.answered: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def remember(self, zp: ZonePlan, result: ZoneResult) -> None:
        """What each primary serves now (`result.after`), so that the next run need not transfer it;
        its serial is asked with the other zones' (`learn`)."""
        for primary, plan in zp.records.items():
            seen = zp.observed.get(primary)
            if seen is None or seen.error:
                continue
            if not plan.changes and seen.rrsets is not None:
                result.after[primary] = seen
                continue
            base = seen.rrsets
            if base is None:
                # a server the zone was just created on holds what the create wrote: its apex NS
                # and glue
                base = nameservers.created(zp.zone) if zp.zone else {}
            rrsets = dict(base)
            for change in plan.changes:
                if change.after is None:
                    rrsets.pop(change.key, None)
                else:
                    rrsets[change.key] = change.after
            # a signed zone whose keys are not known yet: named adds its DNSKEY and signatures after
            # the write, maybe before that serial was read; without a serial it is transferred
            # next run
            signed = bool(zp.zone and zp.zone.spec.dnssec_policy)
            unsigned = signed and (zp.name, "DNSKEY") not in rrsets
            result.after[primary] = ZoneObserved(rrsets)
            with self._lock:
                self.written.append((result, primary, zp.name, unsigned))

    def queue(self, zp: ZonePlan, result: ZoneResult) -> None:
        """Queues the zone for `confirm`: its changed RRsets on the primaries that took them, and
        its configured secondaries at the serial the primary reached (with nothing changed, at the
        primary's serial: one that was down or stopped may be behind from an earlier run)."""
        secondaries = [s for i in zp.secondaries for s in zp.servers_of(i)
                       if s in self.endpoints
                       and result.servers.get(s, ("", ""))[0] == "Configured"]
        if not result.changes and not (secondaries and result.applied_on):
            return
        changes = [c for c in result.changes if c.key[1] != "SOA"]
        written = dnsverify.Written(zp.name, changes, list(result.applied_on), secondaries, None)
        with self._lock:
            self.queued.append((result, written))

    def catch_up(self, in_sync: list[tuple[ZonePlan, ZoneResult]]) -> None:
        """For zones with nothing to do: a secondary behind its primary (down or stopped in an
        earlier run), by the serials observe read (asked once per secondary it did not ask); only
        those are nudged and confirmed."""
        by_secondary: dict[str, list[tuple[ZonePlan, ZoneResult, int]]] = {}
        for zp, result in in_sync:
            seen = zp.observed.get(next(iter(zp.records), ""))
            if seen is None or seen.serial is None:
                continue
            for s in (s for i in zp.secondaries for s in zp.servers_of(i)):
                if s in self.endpoints and result.servers.get(s, ("", ""))[0] == "Configured":
                    by_secondary.setdefault(s, []).append((zp, result, seen.serial))
        behind: dict[str, tuple[ZonePlan, ZoneResult]] = {}
        for secondary, items in by_secondary.items():
            if self.deadline.expired:
                return
            now = self._serials(secondary, [zp.name for zp, _, _ in items])
            behind.update({zp.name: (zp, r) for zp, r, serial in items
                           if now.get(zp.name) != serial})
        for zp, result in behind.values():
            self.queue(zp, result)

    def _serials(self, server: str, zones: list[str]) -> Mapping[str, int | None]:
        known = self.observed.get(server, {})
        missing = [z for z in zones if z not in known]
        if not missing:
            return known
        asked = dnsquery.serials(self.endpoints[server], missing, timeout=self.deadline.timeout(2))
        return {**known, **asked}

    def learn(self) -> None:
        """Each written primary's serial after the writes, and the serial the secondaries of a zone
        with nothing changed must reach (its primary's now): one query per primary for all its
        zones."""
        asked: dict[str, dict[str, None]] = {}
        pending = {(id(result), primary) for result, primary, _, _ in self.written}
        for _, primary, zone, _ in self.written:
            asked.setdefault(primary, {})[zone] = None
        for result, w in self.queued:
            if not w.changes and w.primaries and _target(result, pending) is None:
                asked.setdefault(w.primaries[0], {})[w.zone] = None
        got = {p: dnsquery.serials(self.endpoints[p], list(zones), timeout=self.deadline.timeout(2))
               for p, zones in asked.items()}
        for server, serials in got.items():
            self._answered(server, (z for z, s in serials.items() if s is not None))
        for result, primary, zone, unsigned in self.written:
            serial = None if unsigned else got[primary].get(zone)
            result.after[primary] = ZoneObserved(result.after[primary].rrsets, serial=serial)
        for result, w in self.queued:
            w.serial = _target(result, set())
            if not w.changes and w.serial is None and w.primaries:
                w.serial = got.get(w.primaries[0], {}).get(w.zone)

    def _answered(self, server: str, zones: Iterable[str]) -> None:
        self.answered.setdefault(server, set()).update(zones)

    def confirm(self, *, patience: float, nudge: Callable[[dnsverify.Written], None]) -> None:
        """Confirms every queued zone at once (agent/reconcile/dnsverify.py): the waits for
        secondaries to transfer overlap instead of adding up zone after zone."""
        self.learn()
        queued = [w for _, w in self.queued if w.changes or w.serial is not None]
        dnsverify.confirm_zones(queued, self.endpoints, patience=patience,
                                limit=max(0.0, self.deadline.remaining()), nudge=nudge)
        for result, w in self.queued:
            result.checks = w.checks
            for server in w.answered:
                self._answered(server, (w.zone,))


def _target(result: ZoneResult, pending: set[tuple[int, str]]) -> int | None:
    """The serial of the one primary that took the zone's changes (None: several, not known, or
    `pending`: not asked yet)."""
    if len(result.applied_on) != 1:
        return None
    primary = result.applied_on[0]
    if (id(result), primary) in pending or primary not in result.after:
        return None
    return result.after[primary].serial
