"""Every write to a long-running agent's memory (agent/run/memory.py), made on the sync worker: what
a run left in the world, kept for the next run to start from (the objects it left in the cluster,
what each primary now serves and its serial, and which zones' desired RRsets were confirmed; a run
that failed as a whole trusts nothing), and the phase the agent is in between runs, moved by
`decide.next_phase` (a reconcile owed to a cut, a new leadership, pods waiting or moved).

The pod watch's thread writes nothing here: it posts what it saw with its trigger
(agent/run/throttle.py), and the worker hands it over (`pods_seen`) before the run it starts."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping
from typing import Any

from agent.clients.statestore import Store
from agent.desired.hierarchy import Desired
from agent.model.key import ObjectKey, key_of
from agent.model.observed import DnsObserved, KubeObserved, Observed
from agent.model.ownership import RunState
from agent.observe.dnsobserve import DnsMemory
from agent.outcome import conditions
from agent.reconcile.dnsresult import DnsResult
from agent.reconcile.kubeapply import KubeResult
from agent.run import decide
from agent.run.decision import Decision, Now, Phase, Standing
from agent.run.memory import Memory
from agent.run.triggers import Trigger


@dataclasses.dataclass(frozen=True)
class PlannedFrom:
    """What a run planned from: the world as observed, and whether the cluster (`kube_fast`) and
    the zones (`dns_fast`) were remembered rather than read in full (their times then stay)."""

    observed: Observed
    kube_fast: bool
    dns_fast: bool


def after_run(memory: Memory, desired: Desired, kube: KubeResult | None, dns: DnsResult | None,
              planned_from: PlannedFrom, *, agent_namespace: str, failed: bool) -> None:
    """What a run left in the world, kept for the next one (`planned_from`: what it planned from);
    `failed`: a step failed as a whole (the memory of the world is dropped). A one-shot run's memory
    keeps nothing."""
    if not memory.keeps:
        return
    now = memory.served_at = time.monotonic()
    if failed:
        forget_world(memory)
        return
    if kube is not None and planned_from.observed.kube is not None:
        _kube_left(memory, kube, planned_from.observed.kube, agent_namespace=agent_namespace,
                   listed_at=None if planned_from.kube_fast else now)
    if dns is not None:
        _dns_left(memory, desired, dns)
        memory.dns_at = memory.dns_at if planned_from.dns_fast else now
        seen = planned_from.observed.dns
        focused = seen is not None and seen.focus is not None
        memory.serials_at = memory.serials_at if focused else now


def _kube_left(memory: Memory, kube: KubeResult, observed: KubeObserved, *, agent_namespace: str,
               listed_at: float | None) -> None:
    """The cluster as the run left it; `listed_at`: when it was listed (None: it was remembered,
    its time stays)."""
    namespaces = set(observed.namespaces).union(kube.namespaces)
    unapplied = kube.failed
    undeleted = {c.key for c in kube.changes if c.action == "delete"
                 and c.key in unapplied} if unapplied else set()
    memory.kube = KubeObserved(_left(kube, undeleted), kube.inventory, namespaces,
                               kube.inventory_text)
    # read again by the next run: what it failed to delete, and the namespaces of every failure
    # (one deleted by hand fails every write in it)
    memory.kube_recheck = undeleted | {ObjectKey("Namespace", None, k.namespace)
                                       for k in unapplied if k.namespace}
    memory.agent_namespace = agent_namespace
    if listed_at is not None:
        memory.kube_at, memory.kube_listed = listed_at, time.time()


def _dns_left(memory: Memory, desired: Desired, dns: DnsResult) -> None:
    """What each zone's primaries serve as the run left them, and which zones' desired RRsets were
    confirmed; the zones that left Git are forgotten."""
    wanted = {z.name: z.rrsets for z in desired.zones}
    for zone in (set(memory.dns.zones) | set(memory.dns.sources)) - wanted.keys():
        memory.dns.forget(zone)
    # zones that left Git: their last result goes too
    for zone in set(memory.reported) - wanted.keys():
        del memory.reported[zone]
    for zr in dns.zones:
        if not zr.ok:
            memory.dns.forget(zr.name)
            continue
        for primary, seen in zr.after.items():
            if memory.dns.seen(zr.name, primary) is not seen:
                memory.dns.remember(zr.name, primary, seen)
        # not confirmed: asked again next run
        if zr.conflicts or not all(c.ok for c in zr.checks):
            memory.dns.sources.pop(zr.name, None)
        else:
            memory.dns.sources[zr.name] = wanted.get(zr.name)


def _left(kube: KubeResult, undeleted: set[ObjectKey]) -> dict[ObjectKey, dict[str, Any]]:
    """The cluster as the run left it, for the next run to recall. What the run failed to create or
    update, and the same-named objects of others (conflicts), are forgotten: the next run reads them
    again (`kubeobserve.recall`), so one created meanwhile, or removed by its owner, is seen. What
    it failed to delete (`undeleted`) is kept and read again by the next run
    (`Memory.kube_recheck`): the revision no longer has it, and the next run deletes it if it is
    still there and still the agent's (and counts it in the prune gate's base)."""
    if not kube.failed and not kube.conflicts:
        return kube.live
    return {k: v for k, v in kube.live.items()
            if k not in kube.conflicts and (k not in kube.failed or k in undeleted)}


def after_observe(memory: Memory, desired: Desired, observed: Observed, *, agent_namespace: str,
                  kube_fast: bool, dns_fast: bool, listed_at: float) -> None:
    """What a standby read while following (agent/run/follow.py): the cluster as listed, and what
    each primary serves with its serial. Nothing is marked as applied (`sources`): the standby wrote
    nothing. `listed_at`: the wall-clock time before the cluster was listed (compared with the
    leader's writes)."""
    if not memory.keeps:
        return
    now = time.monotonic()
    if observed.kube is not None and not kube_fast:
        memory.kube, memory.agent_namespace, memory.kube_at = observed.kube, agent_namespace, now
        memory.kube_recheck = set()
        memory.kube_listed = listed_at
    if observed.dns is None:
        return
    wanted = {z.name for z in desired.zones}
    for zone in (set(memory.dns.zones) | set(memory.dns.sources)) - wanted:
        memory.dns.forget(zone)
    for zone, servers in observed.dns.zones.items():
        for server, seen in servers.items():
            if seen.error or seen.rrsets is None or seen.serial is None:
                memory.dns.zones.get(zone, {}).pop(server, None)
            elif memory.dns.seen(zone, server) is not seen:
                memory.dns.remember(zone, server, seen)
    memory.dns_at = memory.dns_at if dns_fast else now


def after_cut(memory: Memory, desired: Desired, read: DnsObserved) -> None:
    """A start-up or resync reconcile cut for a push ("pushes first", agent/run/orchestrator.py):
    what it read of each zone it finished is kept with its serial (the reconcile, run again after
    the push, asks those zones' serials instead of transferring them again). The run reconciled a
    revision the last run applied cleanly (the shared state says so), so a fresh process takes each
    zone as applied from it (`sources`): the push's run then plans only the zones the push
    changed."""
    if not memory.keeps:
        return
    for zone, servers in read.zones.items():
        for server, seen in servers.items():
            if not seen.error and seen.rrsets is not None and seen.serial is not None:
                memory.dns.remember(zone, server, seen)
    baseline(memory, desired)


def baseline(memory: Memory, desired: Desired) -> None:
    """The revision the last run applied cleanly, as the zones' sources when nothing better is known
    (a fresh process, a new leader): a push's run then plans only the zones the push changed, and
    the reconcile of the whole revision is left pending (pushes first,
    agent/run/orchestrator.py)."""
    if not memory.keeps:
        return
    if not memory.dns.sources:  # a warm agent knows which zones it confirmed: that stays as it is
        memory.dns.sources.update({z.name: z.rrsets for z in desired.zones})
    memory.base_zones = {z.name: z for z in desired.zones}
    memory.base_objects = frozenset(o.key for o in desired.objects)
    owed(memory, True)


def statuses_computed(memory: Memory, wanted: Mapping[ObjectKey, Mapping[str, Any]],
                      only: set[ObjectKey] | None, *, written: bool,
                      not_written: Iterable[ObjectKey] = (),
                      moved: frozenset[ObjectKey] = frozenset()) -> None:
    """The statuses a run computed (`only`: the CRs it computed, None: every CR): those not settled
    are computed again by the next run whatever it changes (`Memory.unsettled`). Called before the
    writes (`written` False: only adds; the instances whose pods `moved` are done) and after them
    (the settled ones computed, and the CRs gone, leave)."""
    if not memory.keeps:
        return
    bad = {key for key, new in wanted.items() if not conditions.settled(new)}
    if not written:
        memory.unsettled |= bad
        memory.pods_moved -= moved
        return
    kept = set() if only is None else memory.unsettled - only
    memory.unsettled = kept | bad | (set(not_written) & wanted.keys())
    _next(memory, decide.StatusesComputed(frozenset()))


def rejection_marked(memory: Memory, marks: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """A rejected revision's marks (each live CR and its new status), written to the cluster: the
    remembered cluster holds them, and the next run computes those CRs' statuses again."""
    if not memory.keeps:
        return
    for live, new in marks:
        key = key_of(live)  # (a cluster-scoped CR's key has no namespace)
        memory.unsettled.add(key)
        if memory.kube is not None and key in memory.kube.live:
            memory.kube.live[key] = {**memory.kube.live[key], "status": new}


def load_run(store: Store, memory: Memory) -> RunState:
    """The run's record at a run's start: one found unreadable is quarantined
    (agent/clients/statestore.py) and the run goes on as for a missing one, trusting nothing
    remembered of the world."""
    before = store.quarantined
    state = store.load_run()
    if store.quarantined != before and memory.keeps:
        forget_world(memory)
    return state


# -- the phase between runs -------------------------------------------------------------------
def owed(memory: Memory, owed: bool) -> None:
    """A reconcile is owed (a push cut it, a baseline was read), or no longer (the whole revision
    passed the gate, a repair began)."""
    _next(memory, decide.Owed(owed))


def repair_begins(memory: Memory, decision: Decision, now: Now) -> None:
    """A repair: nothing owed any more; the resync of what serves reads the world in full."""
    if memory.keeps:
        _enter(memory, decide.repair_phase(decision, memory.phase(), now))


def run_ended(memory: Memory, trigger: str, outcome: str) -> Trigger | None:
    """A run returned: a new leadership's first run is over; the run a cut reconcile asks for
    next."""
    known = trigger in Trigger._value2member_map_
    return _next(memory, decide.RunEnded(Trigger(trigger) if known else None, outcome))


def take_over(memory: Memory, applied_at: float) -> None:
    """This replica just became the leader: what it observed while following as a standby stays
    (agent/run/follow.py), but is checked before it is trusted. Every zone's SOA serial is asked,
    and only the zones whose serial moved are transferred again; no zone counts as applied by this
    replica. The cluster it listed is trusted only if it listed it after the old leader's last run
    that wrote (`applied_at`, the shared state's epoch seconds, with a margin for clock skew);
    else the cluster is read in full once. Its first run reconciles even an unchanged head, and
    computes every CR's status (what the old leader wrote last is not known here)."""
    _next(memory, decide.LeaseTaken(applied_at))
    memory.dns.sources.clear()
    memory.reported.clear()


def take_over_failed(memory: Memory) -> None:
    """Taking over could not read the zones' ownership records: nothing remembered is trusted."""
    forget_world(memory)
    _next(memory, decide.TakeOverFailed())


def forget_world(memory: Memory) -> None:
    """Trust nothing remembered of the cluster or the servers (after a failure, a new leader)."""
    memory.kube, memory.kube_at, memory.kube_listed = None, 0.0, 0.0
    memory.kube_recheck = set()
    memory.dns, memory.dns_at, memory.serials_at = DnsMemory(), 0.0, None
    memory.plans.clear()
    memory.reported.clear()


def pods_seen(memory: Memory, waiting: bool | None, moved: frozenset[ObjectKey]) -> None:
    """What the pod watch saw since the last run (agent/podready/watch.py, through the trigger
    queue)."""
    _next(memory, decide.PodsSeen(waiting, moved))


def following(memory: Memory, state: RunState) -> None:
    """A standby's follow begins: the cluster is listed again if the leader wrote since it was
    listed."""
    if memory.keeps:
        memory.kube_at = decide.follow_phase(memory.phase(standby=True), state).kube_at


def _next(memory: Memory, event: decide.PhaseEvent) -> Trigger | None:
    """`event` applied to the memory's phase; the run it asks for. A one-shot run's memory keeps
    nothing."""
    if not memory.keeps:
        return None
    phase, trigger = decide.next_phase(memory.phase(), event)
    _enter(memory, phase)
    return trigger


def _enter(memory: Memory, phase: Phase) -> None:
    memory.new_leader = phase.standing is Standing.NEW_LEADER
    memory.reconcile_pending, memory.statuses_all = phase.owed, phase.statuses_owed
    memory.pods_waiting, memory.pods_moved = phase.pods_waiting, phase.pods_moved
    memory.kube_at, memory.kube_listed = phase.kube_at, phase.kube_listed
    memory.dns_at = phase.dns_at
    memory.serials_at, memory.served_at = phase.serials_at, phase.served_at
