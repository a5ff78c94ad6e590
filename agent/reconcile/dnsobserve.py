"""Reads the DNS side of the world before planning: what the agent owns, and each zone's RRsets.

Every zone Git places is transferred (TSIG-signed AXFR) from each of its primaries; a primary
that does not serve the zone is recorded as such, one that cannot be asked as an error (nothing is
then planned for that zone). Zones run concurrently; every transfer is bounded by the deadline.
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
from collections.abc import Callable, Mapping

from agent.desired.hierarchy import Desired
from agent.errors import DnsUpdateError
from agent.plan.observed import DnsObserved, ZoneObserved
from agent.plan.zonediff import instance_id
from agent.reconcile import rfc2136
from agent.reconcile.deadline import Deadline
from agent.reconcile.endpoints import Endpoint
from agent.reconcile.statestore import Store

log = logging.getLogger(__name__)
WORKERS = 8  # transfers in flight; named answers them concurrently


def _transfer(endpoint: Endpoint, zone: str, deadline: Deadline) -> ZoneObserved:
    try:
        if deadline.expired:
            return ZoneObserved(None, error="the run's deadline passed before this zone was read")
        return ZoneObserved(rfc2136.observe(endpoint, zone, timeout=deadline.timeout(10)))
    except rfc2136.ZoneMissing:
        return ZoneObserved(None)
    except DnsUpdateError as exc:
        log.warning("%s", exc)
        return ZoneObserved(None, error=str(exc))


def observe(desired: Desired, store: Store, endpoints: Mapping[str, Endpoint], *,
            deadline: Deadline, progress: Callable[[int, int], None] | None = None) -> DnsObserved:
    """`progress` hears (zones observed, zones to observe) as each zone's transfers finish."""
    ownership = store.load_zones()
    wanted = [(z.name, instance_id(k)) for z in desired.zones for k in z.primaries]
    jobs = [(zone, inst) for zone, inst in wanted if inst in endpoints]
    left, finished = collections.Counter(zone for zone, _ in jobs), 0  # transfers left per zone
    zones: dict[str, dict[str, ZoneObserved]] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {job: pool.submit(_transfer, endpoints[job[1]], job[0], deadline) for job in jobs}
        for (zone, inst), future in futures.items():
            zones.setdefault(zone, {})[inst] = future.result()
            left[zone] -= 1
            finished += not left[zone]
            if progress is not None and not left[zone]:
                progress(finished, len(left))
    return DnsObserved(ownership, zones, set(endpoints))
