"""Reads the DNS side of the world before planning: what the agent owns, and each zone's RRsets.

Every zone Git places is transferred (TSIG-signed AXFR) from each server of each of its primaries
(an instance written pod by pod is one server per pod: each has its own zone list and serial); a
server that does not serve the zone is recorded as such, one that cannot be asked as an error
(nothing is then planned there). Each pod of a secondary is asked for the zone's SOA serial: one
that has no answer (a new or restarted pod, its emptyDir empty) is recorded as not having it.
Zones run concurrently; every transfer is bounded by the deadline. A long-running agent transfers
only the zones whose SOA serial moved since it last saw them (`DnsMemory`), and between resyncs
asks only the serials of the zones a revision touches.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import logging
from collections.abc import Callable, Mapping

from agent.clients import axfr, rfc2136
from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint, by_server, servers_of
from agent.clients.statestore import Store
from agent.desired.hierarchy import Desired
from agent.desired.rrsets import RRset
from agent.errors import TransferRefused, ZoneMissing, ZoneTransferError
from agent.model import names
from agent.model.observed import DnsObserved, Reach, ZoneObserved
from agent.model.ownership import Key, ZoneOwnership
from agent.model.reading import DnsRead, Reading
from agent.model.scope import ALL, Scope
from agent.model.servers import SERVER_SEPARATOR, instance_id
from agent.observe import soaserials

log = logging.getLogger(__name__)
WORKERS = 8  # transfers in flight; named answers them concurrently


class DnsMemory:
    """What each primary served when the agent last read or wrote a zone, with that SOA serial: a
    zone whose serial has not moved since is not transferred again."""

    def __init__(self) -> None:
        self.zones: dict[str, dict[str, ZoneObserved]] = {}  # zone -> primary -> rrsets and serial
        self.sources: dict[str, object] = {}  # zone -> the desired RRsets it was last applied from

    def changed(self, desired: Desired) -> set[str]:
        """The zones whose desired RRsets are not the very object the agent last applied (a
        long-running agent's unchanged zone keeps it, agent/desired/memo.py): the zones a revision
        touches."""
        sources = self.sources
        return {z.name for z in desired.zones if sources.get(z.name) is not z.rrsets}

    def remember(self, zone: str, primary: str, seen: ZoneObserved) -> None:
        """Kept as `remembered`, the very object handed out while the serial stays (memos compare
        identity)."""
        self.zones.setdefault(zone, {})[primary] = dataclasses.replace(seen, remembered=True)

    def forget(self, zone: str) -> None:
        self.zones.pop(zone, None)
        self.sources.pop(zone, None)

    def seen(self, zone: str, primary: str) -> ZoneObserved | None:
        return self.zones.get(zone, {}).get(primary)


# what a one-shot run (or a sweep) remembers: every zone is transferred; never written
NOTHING_SEEN = DnsMemory()


def transfer_time(deadline: Deadline) -> float:
    """The most one transfer may take: what the run has left (without a deadline, the default one's
    length)."""
    return max(0.001, min(deadline.remaining(), names.DEFAULT_DEADLINE))


def shared(found: dict[Key, RRset], wanted: Mapping[Key, RRset]) -> dict[Key, RRset]:
    """The RRsets read, in the order read, where one is equal to the desired RRset of its name and
    type (owner, type, TTL, values) the desired object itself, under the desired key: a zone as Git
    wants it is held once, not twice (1,000,000 records: hundreds of MB less), and nothing else
    changes. One that differs in anything is kept as read, so it is planned as the change it is."""
    if not wanted:
        return found
    # the desired key objects, to hold those and not the ones read
    keys = {key: key for key in wanted}
    out: dict[Key, RRset] = {}
    for key, seen in found.items():
        mine = wanted.get(key)
        if mine is not None and mine == seen:
            out[keys[key]] = mine
        else:
            out[key] = seen
    return out


def _transfer(endpoint: Endpoint, zone: str, deadline: Deadline, limits: axfr.TransferLimits,
              wanted: Mapping[Key, RRset] | None = None) -> ZoneObserved:
    """`wanted`: the zone's desired RRsets, shared with what was read where they are equal
    (`shared`)."""
    try:
        if deadline.expired:
            return ZoneObserved(None, error="the run's deadline passed before this zone was read")
        found = axfr.read_zone(endpoint, zone, timeout=deadline.timeout(10),
                               lifetime=transfer_time(deadline), limits=limits)
        serial = rfc2136.serial_of(found[(zone, "SOA")].rdatas) if (zone, "SOA") in found else None
        return ZoneObserved(shared(found, wanted or {}), serial=serial)
    except ZoneMissing:
        return ZoneObserved(None)
    except TransferRefused as exc:
        log.warning("%s", exc)
        return ZoneObserved(None, error=str(exc), refused=True)
    except ZoneTransferError as exc:
        log.warning("%s", exc)
        return ZoneObserved(None, error=str(exc))


class Cut(Exception):
    """An observe stopped part-way because something more urgent waits (`observe`'s `stop`): what it
    read of each zone it finished, to be remembered (not a failure: nothing was planned or
    written)."""

    def __init__(self, observed: DnsObserved) -> None:
        super().__init__("observe cut short")
        self.observed = observed


@dataclasses.dataclass(frozen=True)
class Pace:
    """How an observe goes in time: the run's `deadline` bounds every query and transfer;
    `progress` hears (zones observed, zones to observe) as each zone's transfers finish; `stop`,
    asked then too, cuts the observe when it says so (`Cut`)."""

    deadline: Deadline
    progress: Callable[[int, int], None] | None = None
    stop: Callable[[], bool] | None = None


def observe(desired: Desired, store: Store, endpoints: Mapping[str, Endpoint], reading: Reading, *,
            pace: Pace, memory: DnsMemory = NOTHING_SEEN, scope: Scope = ALL,
            limits: axfr.TransferLimits = axfr.DEFAULT_LIMITS) -> DnsObserved:
    """The zones of `scope` as `reading` says. `memory` is what the agent last saw (used when the
    reading starts from it, `reading.remembered`): only zones whose serial moved since (or that it
    has not seen) are transferred. A FOCUSED reading asks the serials of the scope's zones, or, with
    every zone in scope, of those the revision touches and those of an instance with a pod waiting
    for its zones: the other zones are what the agent left there (hand-made drift in them is found
    by the next run that asks every serial, every resync). `reading.refresh_ownership` reads the
    ownership records back from the store; `pace.progress` hears (zones observed, zones to
    observe) as each zone's transfers finish. A scope of some zones (push-first, or the second
    round for zones found stale while applying) reads just those. `pace.stop`, asked as each zone
    finishes: when it says so, the transfers not started are dropped and `Cut` carries what was
    read of the zones finished."""
    deadline = pace.deadline
    only = set(scope.zones) if scope.zones is not None else None
    memory = memory if reading.remembered else NOTHING_SEEN
    focus = _focus(desired, endpoints, reading, memory, only)
    ownership = store.load_zones(refresh=reading.refresh_ownership)
    endpoints, starting, fresh = _with_pods(endpoints)
    if only is not None:
        ownership = {zone: owned for zone, owned in ownership.items() if zone in only}
    servers, pods = by_server(endpoints), servers_of(endpoints)
    wanted = [(z.name, instance_id(k)) for z in desired.zones if only is None or z.name in only
              for k in z.primaries]
    jobs = [(zone, server) for zone, inst in wanted if inst in endpoints
            for server in pods.get(inst, (inst,))]
    # a zone that left Git is read in full from the primaries it is on, never from memory: whether
    # it still holds RRsets the agent did not write decides if it may be deleted (plan/zonediff.py)
    placed = {z.name for z in desired.zones}
    gone = [(zone, server) for zone, owned in sorted(ownership.items()) if zone not in placed
            for inst, role in _placements(owned)
            if role == "primary" and inst in endpoints for server in pods.get(inst, (inst,))]
    questions = soaserials.Questions()
    known = soaserials.remembered(questions, jobs, memory, focus)
    soaserials.secondaries(questions, desired, ownership, servers, pods, focus, only)
    answers = soaserials.ask(questions, servers, deadline)  # each server once
    known.update(soaserials.unmoved(questions, answers, memory))
    zones: dict[str, dict[str, ZoneObserved]] = {}
    for zone, server in soaserials.without(questions, answers):
        zones.setdefault(zone, {})[server] = ZoneObserved(None)
    rrsets_of = {z.name: z.rrsets for z in desired.zones}
    with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {job: pool.submit(_transfer, servers[job[1]], job[0], deadline, limits,
                                    rrsets_of.get(job[0]))
                   for job in [*jobs, *gone] if job not in known}
        for zone, inst in gone:
            zones.setdefault(zone, {})[inst] = futures[(zone, inst)].result()
        done = _collect(jobs, known, futures, zones, pace)
        if done is not None:
            raise Cut(_observed(ownership, done, endpoints, focus, pods, starting, fresh, answers))
    return _observed(ownership, zones, endpoints, focus, pods, starting, fresh, answers)


def _collect(jobs: list[tuple[str, str]], known: Mapping[tuple[str, str], ZoneObserved],
             futures: Mapping[tuple[str, str], concurrent.futures.Future[ZoneObserved]],
             zones: dict[str, dict[str, ZoneObserved]],
             pace: Pace) -> dict[str, dict[str, ZoneObserved]] | None:
    """Each job's observation into `zones`, zone after zone; when `pace.stop` says so as a zone
    finishes, the transfers not started are dropped and the zones finished are returned (else
    None)."""
    progress, stop = pace.progress, pace.stop
    left, finished = collections.Counter(zone for zone, _ in jobs), 0  # transfers left per zone
    for job in jobs:
        zone, inst = job
        zones.setdefault(zone, {})[inst] = known[job] if job in known else futures[job].result()
        left[zone] -= 1
        finished += not left[zone]
        if progress is not None and not left[zone]:
            progress(finished, len(left))
        if stop is not None and not left[zone] and stop():
            for future in futures.values():
                future.cancel()  # the transfers in flight finish (bounded); the rest never start
            return {z: s for z, s in zones.items() if not left[z]}
    return None


def _focus(desired: Desired, endpoints: Mapping[str, Endpoint], reading: Reading, memory: DnsMemory,
           only: set[str] | None) -> set[str] | None:
    """The zones whose serials a FOCUSED reading asks (None: every zone's): the scope's, or the
    zones the revision touches and those of a pod waiting for its zones (a new pod has none)."""
    if reading.dns is not DnsRead.FOCUSED:
        return None
    if only is not None:
        return set(only)
    return memory.changed(desired) | zones_of_waiting(desired, endpoints)


def zones_of_waiting(desired: Desired, endpoints: Mapping[str, Endpoint]) -> set[str]:
    """The zones placed on an instance with a pod waiting for its zones: those a run observes and
    writes even when nothing changed in them (a new pod has none)."""
    instances = {i for i, e in endpoints.items() if any(s.waiting for s in e.servers)}
    if not instances:  # the usual case: no walk of the revision's zones
        return set()
    return {z.name for z in desired.zones for key in z.instances if instance_id(key) in instances}


def _placements(owned: ZoneOwnership) -> list[tuple[str, str]]:
    """A zone's instances and their roles, those of a move under way included, by instance."""
    moving = owned.pending.place if owned.pending else {}
    return sorted({**moving, **owned.placements}.items())


def _observed(ownership: dict[str, ZoneOwnership], zones: dict[str, dict[str, ZoneObserved]],
              endpoints: Mapping[str, Endpoint], focus: set[str] | None,
              pods: dict[str, tuple[str, ...]], starting: dict[str, str], fresh: frozenset[str],
              answers: soaserials.Answers) -> DnsObserved:
    serials = {server: {zone: soaserials.serial(a) for zone, a in asked.items()}
               for server, asked in answers.items()}
    return DnsObserved(ownership, zones, set(endpoints), focus, reach(endpoints), pods=pods,
                       starting=starting, fresh=fresh, serials=serials)


# the instances that have pods, why each other one has none yet, the servers waiting for their zones
WithPods = tuple[dict[str, Endpoint], dict[str, str], frozenset[str]]


def _with_pods(endpoints: Mapping[str, Endpoint]) -> WithPods:
    """The instances that have pods; why each other one has none yet (nothing is asked of it); the
    servers that are pods waiting for their zones."""
    starting = {i: e.starting for i, e in endpoints.items() if e.starting}
    live = {i: e for i, e in endpoints.items() if not e.starting}
    fresh = frozenset(f"{i}{SERVER_SEPARATOR}{s.name}" for i, e in live.items() for s in e.servers
                      if s.waiting)
    return live, starting, fresh


def reach(endpoints: Mapping[str, Endpoint]) -> dict[str, Reach]:
    """How each instance is reached by the others (what the zone API bodies carry); no secret."""
    return {instance: Reach(tuple(e.transfer_addresses()), tuple(e.transfer_hosts()),
                            e.transfer_acl, e.tsig.name if e.tsig else None)
            for instance, e in endpoints.items()}
