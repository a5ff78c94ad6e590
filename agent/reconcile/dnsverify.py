"""Confirms what a run wrote, for all its zones at once: the changed RRsets on the primaries that took them,
and every secondary at (or past) the SOA serial its primary reached.

A secondary serves a zone by transferring it whole, so one that serves the serial the primary
reached after the run's UPDATEs serves exactly what was written: one SOA query a zone instead of a
query per RRset, and a zone whose secondary is still transferring does not hold up the others -
every zone's wait overlaps. A secondary still behind after a short while is nudged (NOTIFY through
its primary's zone API); one still behind when the wait ends is asked for each changed RRset, so
the report shows what it does answer.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence

from agent.model.ownership import Key
from agent.plan import rrsetdiff
from agent.reconcile import rfc2136
from agent.reconcile.endpoints import Endpoint

NUDGE_AFTER = 0.5  # seconds: named NOTIFYs its secondaries itself; a later nudge is for one that missed it
_SERIAL_HALF = 2**31


@dataclasses.dataclass
class Written:
    """One zone to confirm: what changed, where, and the serial each secondary must reach."""

    zone: str
    changes: list[rrsetdiff.RRChange]  # empty: only the secondaries' serial is checked
    primaries: list[str]  # instances that took the changes
    secondaries: list[str]  # instances configured as secondaries of the zone
    serial: int | None  # the primary's serial after the writes (None: unknown, RRsets are asked)
    checks: list[rfc2136.Check] = dataclasses.field(default_factory=list)


def reached(serial: int | None, target: int) -> bool:
    """Whether `serial` is `target` or later in serial-number arithmetic (RFC 1982)."""
    return serial is not None and (serial - target) % 2**32 < _SERIAL_HALF


def _want(change: rrsetdiff.RRChange) -> tuple[str, ...]:
    return change.after.rdatas if change.after else ()


def _on_primaries(zones: Sequence[Written], endpoints: Mapping[str, Endpoint], wait: float) -> None:
    """Every changed RRset on every primary that took it: one pipelined pass per primary."""
    by_primary: dict[str, list[tuple[Written, rrsetdiff.RRChange]]] = {}
    for w in zones:
        for primary in w.primaries:
            by_primary.setdefault(primary, []).extend((w, c) for c in w.changes)
    for primary, items in by_primary.items():
        owner: dict[Key, Written] = {c.key: w for w, c in items}
        for check in rfc2136.verify([endpoints[primary]], [c for _, c in items], wait=wait):
            owner[(check.name, check.rtype)].checks.append(check)


def _nudging(w: Written, nudge: Callable[[Written], None]) -> Callable[[list[str]], None]:
    return lambda _behind: nudge(w)


def _on_secondaries(zones: Sequence[Written], endpoints: Mapping[str, Endpoint], wait: float,
                    nudge: Callable[[Written], None]) -> None:
    """Every secondary at its zone's target serial; the RRsets of those still behind at the end."""
    behind: dict[str, list[Written]] = {}
    for w in zones:
        for s in w.secondaries:
            if w.serial is None:  # several primaries, or no serial read: ask for each RRset (rare)
                w.checks += rfc2136.verify([endpoints[s]], w.changes, wait=wait, nudge=_nudging(w, nudge))
            else:
                behind.setdefault(s, []).append(w)
    start, pause, nudged = time.monotonic(), 0.005, False
    while behind:
        for secondary, items in list(behind.items()):
            now = rfc2136.serials(endpoints[secondary], [w.zone for w in items], timeout=min(2.0, max(wait, 0.5)))
            late = []
            for w in items:
                if reached(now.get(w.zone), w.serial or 0):
                    w.checks += ([rfc2136.Check(secondary, c.key[0], c.key[1], True, _want(c)) for c in w.changes]
                                 or [rfc2136.Check(secondary, w.zone, "SOA", True, (f"serial {now.get(w.zone)}",))])
                else:
                    late.append(w)
            behind[secondary] = late
            if not late:
                del behind[secondary]
        waited = time.monotonic() - start
        if not behind or waited > wait:
            break
        if not nudged and waited > NUDGE_AFTER:
            nudged = True
            for w in {id(w): w for items in behind.values() for w in items}.values():
                nudge(w)
        time.sleep(pause)
        pause = min(pause * 2, 0.1)
    for secondary, items in behind.items():  # still behind: what does it answer?
        for w in items:
            w.checks += (rfc2136.verify([endpoints[secondary]], w.changes, wait=0) if w.changes
                         else [rfc2136.Check(secondary, w.zone, "SOA", False, ("behind its primary",))])


def verify(zones: Sequence[Written], endpoints: Mapping[str, Endpoint], *, wait: float,
           nudge: Callable[[Written], None]) -> None:
    """Fills each zone's `checks`: one per changed RRset and server, or for a zone with no changes one
    SOA check per secondary. `wait` bounds the whole verification."""
    start = time.monotonic()
    _on_primaries([w for w in zones if w.changes], endpoints, wait)
    _on_secondaries([w for w in zones if w.secondaries], endpoints, max(0.0, wait - (time.monotonic() - start)),
                    nudge)
