"""The zones a DNS apply found in sync, kept with their plans so that a later run reports them again
without walking them (pure bookkeeping on results; no I/O).

A zone in sync is reported from its plan alone (`DnsApply.zone` with `in_sync`: no write, no query),
unless the run asked its secondaries (`DnsApply.catch_up`, then its result holds the checks). A
long-running agent's push leaves most zones unasked (outside the run's focus), and the plan memo
gives such a zone the very plan of the last run while nothing it comes from changed: its result is
then the last one, taken as it is (nothing changes a result after its run). 10,000 zones: a push
walks the zones it changes, not all of them (agent/run/memory.py keeps the map, `Memory.reported`).
"""

from __future__ import annotations

from agent.plan.zoneplan import ZonePlan
from agent.reconcile.dnsresult import ZoneResult

# zone -> the plan of a zone found in sync, and its result
Reported = dict[str, tuple[ZonePlan, ZoneResult]]


def reuse(zones: list[ZonePlan], unasked: list[int], reported: Reported | None,
          done: dict[int, ZoneResult]) -> set[int]:
    """The zones left unasked whose plan is the very plan of their last result: that result, in
    `done`."""
    if not reported:
        return set()
    out: set[int] = set()
    for i in unasked:
        last = reported.get(zones[i].name)
        if last is not None and last[0] is zones[i]:
            done[i] = last[1]
            out.add(i)
    return out


def keep(zones: list[ZonePlan], results: list[ZoneResult], walked: list[int],
         reported: Reported | None) -> None:
    """The zones this run walked, kept for the next run when they were in sync and their secondaries
    not asked; any other result of a zone is dropped (never taken again)."""
    if reported is None:
        return
    for i in walked:
        if zones[i].in_sync and not results[i].checks:
            reported[zones[i].name] = (zones[i], results[i])
        else:
            reported.pop(zones[i].name, None)
