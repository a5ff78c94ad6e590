"""The run's `verify` step (`confirm_zones`): confirms what a run wrote, for all its zones at once:
the changed RRsets on the primaries that took them, and every secondary at (or past) the SOA serial
its primary reached.

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

from agent.clients import dnsquery, rfc2136
from agent.clients.endpoints import Endpoint
from agent.model.ownership import Key
from agent.model.rrchange import RRChange

# seconds: named NOTIFYs its secondaries itself; a later nudge is for one that missed it
NUDGE_AFTER = 0.5
_SERIAL_HALF = 2**31


@dataclasses.dataclass
class Written:
    """One zone to confirm: what changed, where, and the serial each secondary must reach."""

    zone: str
    changes: list[RRChange]  # empty: only the secondaries' serial is checked
    primaries: list[str]  # instances that took the changes
    secondaries: list[str]  # instances configured as secondaries of the zone
    serial: int | None  # the primary's serial after the writes (None: unknown, RRsets are asked)
    checks: list[rfc2136.Check] = dataclasses.field(default_factory=list)
    # secondaries seen at (or past) `serial`
    answered: set[str] = dataclasses.field(default_factory=set)


def reached(serial: int | None, target: int) -> bool:
    """Whether `serial` is `target` or later in serial-number arithmetic (RFC 1982)."""
    return serial is not None and (serial - target) % 2**32 < _SERIAL_HALF


def _want(change: RRChange) -> tuple[str, ...]:
    return change.after.rdatas if change.after else ()


def _on_primaries(zones: Sequence[Written], endpoints: Mapping[str, Endpoint], wait: float) -> None:
    """Every changed RRset on every primary that took it: one pipelined pass per primary."""
    by_primary: dict[str, list[tuple[Written, RRChange]]] = {}
    for w in zones:
        for primary in w.primaries:
            by_primary.setdefault(primary, []).extend((w, c) for c in w.changes)
    for primary, items in by_primary.items():
        owner: dict[Key, Written] = {c.key: w for w, c in items}
        for check in rfc2136.confirm_served([endpoints[primary]], [c for _, c in items], wait=wait):
            owner[(check.name, check.rtype)].checks.append(check)


def _nudging(w: Written, nudge: Callable[[Written], None]) -> Callable[[list[str]], None]:
    return lambda _behind: nudge(w)


def _confirmed(w: Written, secondary: str, serial: int | None) -> list[rfc2136.Check]:
    return ([rfc2136.Check(secondary, c.key[0], c.key[1], True, _want(c)) for c in w.changes]
            or [rfc2136.Check(secondary, w.zone, "SOA", True, (f"serial {serial}",))])


def _sweep(behind: dict[str, list[Written]], endpoints: Mapping[str, Endpoint],
           until: float) -> int:
    """One SOA query per zone and secondary still behind; those at their serial are confirmed and
    dropped from `behind`. Returns how many were."""
    caught = 0
    for secondary, items in list(behind.items()):
        timeout = min(2.0, max(0.1, until - time.monotonic()))
        now = dnsquery.serials(endpoints[secondary], [w.zone for w in items], timeout=timeout)
        late = []
        for w in items:
            if reached(now.get(w.zone), w.serial or 0):
                w.checks += _confirmed(w, secondary, now.get(w.zone))
                w.answered.add(secondary)
                caught += 1
            else:
                late.append(w)
        if late:
            behind[secondary] = late
        else:
            del behind[secondary]
    return caught


def _on_secondaries(zones: Sequence[Written], endpoints: Mapping[str, Endpoint], patience: float,
                    until: float, nudge: Callable[[Written], None]) -> None:
    """Every secondary at its zone's target serial. Waits while secondaries keep catching up (named
    rate-limits its transfers: hundreds of new zones take a while), until none did for `patience`
    seconds or the monotonic time `until`; those still behind are asked for each changed RRset."""
    behind = _serial_targets(zones, endpoints, patience, until, nudge)
    _wait_for(behind, endpoints, patience, until, nudge)
    for secondary, items in behind.items():  # still behind: what does it answer?
        for w in items:
            w.checks += _answers_of_late(w, secondary, endpoints)


def _serial_targets(zones: Sequence[Written], endpoints: Mapping[str, Endpoint], patience: float,
                    until: float, nudge: Callable[[Written], None]) -> dict[str, list[Written]]:
    """The zones each secondary is to reach a serial of; a zone with no serial to reach is asked
    for each RRset at once."""
    behind: dict[str, list[Written]] = {}
    for w in zones:
        for s in w.secondaries:
            if w.serial is None:  # several primaries, or no serial read: ask for each RRset (rare)
                wait = max(0.0, min(patience, until - time.monotonic()))
                w.checks += rfc2136.confirm_served([endpoints[s]], w.changes,
                                                   nudge=_nudging(w, nudge), wait=wait)
            else:
                behind.setdefault(s, []).append(w)
    return behind


def _wait_for(behind: dict[str, list[Written]], endpoints: Mapping[str, Endpoint],
              patience: float, until: float, nudge: Callable[[Written], None]) -> None:
    """Sweeps while secondaries keep catching up; those behind for a while are nudged once.
    `behind` keeps those still behind when the wait ends."""
    progress, pause, nudged = time.monotonic(), 0.005, False
    while behind:
        if _sweep(behind, endpoints, until):
            progress = time.monotonic()
        now = time.monotonic()
        if not behind or now - progress > patience or now > until:
            break
        if not nudged and now - progress > NUDGE_AFTER:
            nudged = True
            for w in {id(w): w for items in behind.values() for w in items}.values():
                nudge(w)
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _answers_of_late(w: Written, secondary: str,
                     endpoints: Mapping[str, Endpoint]) -> list[rfc2136.Check]:
    """A secondary behind when the wait ended: what it answers for each changed RRset."""
    if w.changes:
        return rfc2136.confirm_served([endpoints[secondary]], w.changes, wait=0)
    return [rfc2136.Check(secondary, w.zone, "SOA", False, ("behind its primary",))]


def confirm_zones(zones: Sequence[Written], endpoints: Mapping[str, Endpoint], *, patience: float,
                  limit: float, nudge: Callable[[Written], None]) -> None:
    """Fills each zone's `checks`: one per changed RRset and server, or for a zone with no changes
    one SOA check per secondary. A server is waited for while it makes progress, `patience` seconds
    at most without; `limit` bounds the whole verification (the run's deadline)."""
    until = time.monotonic() + limit
    _on_primaries([w for w in zones if w.changes], endpoints, min(patience, limit))
    _on_secondaries([w for w in zones if w.secondaries], endpoints, patience, until, nudge)
