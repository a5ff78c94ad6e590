"""Reads the DNS side of the world before planning: what the agent owns, and each zone's RRsets.

Every zone Git places is transferred (TSIG-signed AXFR) from each of its primaries; a primary
that does not serve the zone is recorded as such, one that cannot be asked as an error (nothing is
then planned for that zone). Zones run concurrently; every transfer is bounded by the deadline.
A long-running agent transfers only the zones whose SOA serial moved since it last saw them
(`DnsMemory`), and between resyncs asks only the serials of the zones a revision touches.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import logging
from collections.abc import Callable, Mapping

from agent.desired.hierarchy import Desired
from agent.errors import DnsUpdateError
from agent.model import names
from agent.plan.observed import DnsObserved, ZoneObserved
from agent.plan.zonediff import instance_id
from agent.reconcile import axfr, rfc2136
from agent.reconcile.deadline import Deadline
from agent.reconcile.endpoints import Endpoint
from agent.reconcile.statestore import Store

log = logging.getLogger(__name__)
WORKERS = 8  # transfers in flight; named answers them concurrently


class DnsMemory:
    """What each primary served when the agent last read or wrote a zone, with that SOA serial: a
    zone whose serial has not moved since is not transferred again."""

    def __init__(self) -> None:
        self.zones: dict[str, dict[str, ZoneObserved]] = {}  # zone -> primary -> rrsets and serial
        self.sources: dict[str, object] = {}  # zone -> the desired RRsets it was last applied from

    def changed(self, desired: Desired) -> set[str]:
        """The zones whose desired RRsets are not the very object the agent last applied (a long-running
        agent's unchanged zone keeps it, agent/desired/memo.py): the zones a revision touches."""
        sources = self.sources
        return {z.name for z in desired.zones if sources.get(z.name) is not z.rrsets}

    def remember(self, zone: str, primary: str, seen: ZoneObserved) -> None:
        """Kept as `remembered`, the very object handed out while the serial stays (memos compare identity)."""
        self.zones.setdefault(zone, {})[primary] = dataclasses.replace(seen, remembered=True)

    def forget(self, zone: str) -> None:
        self.zones.pop(zone, None)
        self.sources.pop(zone, None)

    def seen(self, zone: str, primary: str) -> ZoneObserved | None:
        return self.zones.get(zone, {}).get(primary)


def transfer_time(deadline: Deadline) -> float:
    """The most one transfer may take: what the run has left (without a deadline, the default one's length)."""
    return max(0.001, min(deadline.remaining(), names.DEFAULT_DEADLINE))


def _transfer(endpoint: Endpoint, zone: str, deadline: Deadline, limits: axfr.TransferLimits) -> ZoneObserved:
    try:
        if deadline.expired:
            return ZoneObserved(None, error="the run's deadline passed before this zone was read")
        found = rfc2136.observe(endpoint, zone, timeout=deadline.timeout(10), lifetime=transfer_time(deadline),
                                limits=limits)
        return ZoneObserved(found, serial=rfc2136.serial_of(found[(zone, "SOA")].rdatas)
                            if (zone, "SOA") in found else None)
    except rfc2136.ZoneMissing:
        return ZoneObserved(None)
    except DnsUpdateError as exc:
        log.warning("%s", exc)
        return ZoneObserved(None, error=str(exc))


def _unmoved(jobs: list[tuple[str, str]], endpoints: Mapping[str, Endpoint], memory: DnsMemory,
             deadline: Deadline, focus: set[str] | None) -> dict[tuple[str, str], ZoneObserved]:
    """The zones whose serial on their primary is the one the agent last saw: what it saw then. With
    a `focus`, the zones outside it are taken as remembered without asking (see `observe`)."""
    out: dict[tuple[str, str], ZoneObserved] = {}
    by_primary: dict[str, list[str]] = {}
    for zone, inst in jobs:
        seen = memory.seen(zone, inst)
        if seen is None:
            continue
        if focus is not None and zone not in focus and seen.serial is not None:
            out[(zone, inst)] = seen
        else:
            by_primary.setdefault(inst, []).append(zone)
    for inst, zones in by_primary.items():
        if deadline.expired:
            break
        now = rfc2136.serials(endpoints[inst], zones, timeout=deadline.timeout(2))
        for zone in zones:
            seen = memory.seen(zone, inst)
            if seen is not None and now.get(zone) is not None and now[zone] == seen.serial:
                out[(zone, inst)] = seen
    return out


def observe(desired: Desired, store: Store, endpoints: Mapping[str, Endpoint], *, deadline: Deadline,
            memory: DnsMemory | None = None, refresh: bool = True, focus: set[str] | None = None,
            progress: Callable[[int, int], None] | None = None,
            limits: axfr.TransferLimits = axfr.DEFAULT_LIMITS) -> DnsObserved:
    """With `memory`, only zones whose serial moved (or that it has not seen) are transferred; with a
    `focus` too (the zones the revision touches), the serials of the other zones are not even asked:
    they are what the agent left there (hand-made drift in them is found by the next run without a
    focus, every resync). `refresh` reads the ownership records back from the store; `progress`
    hears (zones observed, zones to observe) as each zone's transfers finish."""
    ownership = store.load_zones(refresh=refresh)
    wanted = [(z.name, instance_id(k)) for z in desired.zones for k in z.primaries]
    jobs = [(zone, inst) for zone, inst in wanted if inst in endpoints]
    # a zone that left Git is read in full from the primaries it is on, never from memory: whether it
    # still holds RRsets the agent did not write decides if it may be deleted (plan/zonediff.py)
    placed = {z.name for z in desired.zones}
    gone = [(zone, inst) for zone, owned in sorted(ownership.items()) if zone not in placed
            for inst, role in sorted({**(owned.pending.place if owned.pending else {}), **owned.placements}.items())
            if role == "primary" and inst in endpoints]
    known = _unmoved(jobs, endpoints, memory, deadline, focus) if memory is not None else {}
    left, finished = collections.Counter(zone for zone, _ in jobs), 0  # transfers left per zone
    zones: dict[str, dict[str, ZoneObserved]] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {job: pool.submit(_transfer, endpoints[job[1]], job[0], deadline, limits)
                   for job in [*jobs, *gone] if job not in known}
        for zone, inst in gone:
            zones.setdefault(zone, {})[inst] = futures[(zone, inst)].result()
        for job in jobs:
            zone, inst = job
            zones.setdefault(zone, {})[inst] = known[job] if job in known else futures[job].result()
            left[zone] -= 1
            finished += not left[zone]
            if progress is not None and not left[zone]:
                progress(finished, len(left))
    return DnsObserved(ownership, zones, set(endpoints), focus if memory is not None else None)
