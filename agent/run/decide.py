"""Which run comes next, decided before a file is read: `decide(state, phase, head, options, now)`
returns its kind and why, the revision it applies, what it covers, how it reads the world, whether
it may yield to a push and which statuses it writes (agent/run/decision.py); the orchestrator
executes that and nothing else picks a path. First matching row:

    standby (not the Lease holder)                        follow     standby
    suspended by the setting, by the mark                 skip       suspended-setting,
                                                                     suspended-mark
    the head already handled, nothing owed or waiting     skip       unchanged (reports still to
                                                                     push go)
    head rejected, what serves owed a reconcile, a pod
      waits, pods moved, a resync due                     repair     repair-after-cut, -for-pods,
                                                                     -due
    --dry-run; detect mode                                dry-run    dry-run; detect detect
    a reconcile was cut for a push, a new revision        push-first push-first
    a fresh process or new leader, a new revision         push-first push-first-after-restart
                                                                     (baseline first)
    a reconcile was cut, its revision                     resume     resume
    the revision applied cleanly, again                   reconcile  start-up, new-leader,
                                                                     pods-waiting, pods-moved,
                                                                     resync (may yield to a push)
    otherwise                                             reconcile  retry, refused-again, new-head

`next_phase(phase, event)` is what the agent remembers between runs (agent/run/memorize.py applies
it on the sync worker). Both are pure: no I/O, and no clock but `now`; the trigger labels a run, the
facts it reports (a pod waits, a push cut a reconcile) are in the phase.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from agent.model import names
from agent.model.key import ObjectKey
from agent.model.ownership import RunState
from agent.model.reading import PUSHED_ZONES as PUSHED_ZONES  # push-first: its zones by serial
from agent.model.reading import DnsRead, KubeRead, Reading
from agent.model.scope import ALL, Scope, ScopeRule
from agent.run.decision import (
    KIND_OF,
    Decision,
    Head,
    Now,
    Phase,
    Revision,
    RunKind,
    Standing,
    StatusScope,
    Why,
)
from agent.run.triggers import Trigger

if TYPE_CHECKING:
    from agent.run.planner import Options

CLOCK_SKEW = 2.0  # seconds two replicas' clocks may differ by
SUSPENDED_BY_SETTING = ("suspended by the setting suspend (BINDY_AGENT_SUSPEND, --suspend or the "
                        "config file): nothing is read or written; set it to false to continue")
SUSPENDED_BY_MARK = (f"suspended by `bindy-agent suspend` (the annotation "
                     f"{names.SUSPEND_ANNOTATION}: \"true\" on the "
                     "agent's state ConfigMap, or the file `suspended` in its --state directory): "
                     "nothing is read or written; `bindy-agent resume` to continue")
NOTHING = Scope(frozenset(), False, ScopeRule.ALL)  # a skip covers nothing
NO_READ = Reading(KubeRead.NONE, DnsRead.NONE, remembered=False, refresh_ownership=False,
                  zones_first=False, plan_memo=False)
APPLIES_KUBE = (RunKind.REPAIR, RunKind.RESUME, RunKind.RECONCILE)


def suspension(state: RunState, options: Options) -> Decision | None:
    """A skip when runs are suspended (decided before the head is asked for: nothing is read)."""
    if options.suspend:
        return _skip(Why.SUSPENDED_SETTING, SUSPENDED_BY_SETTING)
    if state.suspended:
        return _skip(Why.SUSPENDED_MARK, SUSPENDED_BY_MARK)
    return None


def decide(state: RunState, phase: Phase, head: Head, options: Options, now: Now) -> Decision:
    """The run to make (the table above). `head`: the remote's head, asked for before the snapshot
    (read False); or, once more, the revision read (read True) or the head again once the revision
    that serves is gone (serving_gone): those never skip nor repair, the first call decided that."""
    if phase.standing is Standing.STANDBY:
        return _follow(state, phase, options, now)
    early = suspension(state, options) or _first_call(state, phase, head, options, now)
    if early is not None:
        return early
    if options.dry_run:
        return _read_only(Why.DRY_RUN, phase, options, now, focus=True)
    if options.mode == "detect":
        return _read_only(Why.DETECT, phase, options, now, focus=False)
    return _writing(state, phase, head.revision, options, now)


def _first_call(state: RunState, phase: Phase, head: Head, options: Options,
                now: Now) -> Decision | None:
    """What only the first call decides (the head asked for, not read yet): an unchanged head
    skips, a head rejected or refused repairs what serves; None: neither."""
    if head.read or head.serving_gone:
        return None
    rev = head.revision
    if rev is not None and unchanged(state, phase, rev, options, now):
        return _skip(Why.UNCHANGED, f"{rev[:12]} was already {state.outcome}; nothing to do",
                     publish=state.notes_pending and options.push_notes)
    why = _repair(state, phase, rev, options, now)
    return _repairing(why, phase, options, now) if why is not None else None


def _writing(state: RunState, phase: Phase, rev: str | None, options: Options,
             now: Now) -> Decision:
    """A run that writes the head: a push's zones first, the reconcile a push cut, the revision
    applied cleanly again, or the whole revision (`widen`)."""
    if phase.owed and rev != state.applied:
        return _push_first(Why.PUSH_FIRST, baseline=False)
    applied_again = rev == state.applied and state.outcome == "applied"
    fresh = phase.keeps and phase.standing in (Standing.COLD, Standing.NEW_LEADER)
    if (phase.yields and fresh and not phase.owed and state.outcome == "applied"
            and not applied_again):
        return _push_first(Why.PUSH_FIRST_AFTER_RESTART, baseline=True)
    if phase.owed:
        return _reconcile(Why.RESUME, phase, options, now, may_yield=False)
    if applied_again:
        return _reconcile(_again(phase), phase, options, now, may_yield=phase.yields)
    return widen(state, phase, rev, options, now)


def widen(state: RunState, phase: Phase, revision: str | None, options: Options,
          now: Now) -> Decision:
    """The whole revision, no yield: the last row; and a push-first whose zones cannot go alone (a
    zone or an object removed, no zone changed, a changed zone on an instance with no endpoint yet)
    or whose baseline could not be read. The run is logged with the kind it ran as."""
    if revision is not None and revision == state.applied:
        why = Why.RETRY  # the revision applied last, partly
    elif (revision is not None and revision == state.seen
          and state.outcome in ("refused", "rejected")):
        why = Why.REFUSED_AGAIN
    else:
        why = Why.NEW_HEAD
    return _reconcile(why, phase, options, now, may_yield=False)


def unchanged(state: RunState, phase: Phase, head: str, options: Options, now: Now) -> bool:
    """The head was handled and nothing asks for a run: no fetch, no parse, no writes."""
    if options.mode == "detect":
        return False  # drift arises in the world, not in Git: look every time
    # just started, a new pod waits for its zones, pods moved (statuses), a resync: now
    if blank(phase) or phase.pods_waiting or phase.pods_moved:
        return False
    if _repair_due(state, phase, head, options, now):
        return False
    fresh = now.wall - state.reconciled_at < options.resync_after
    done = state.outcome in ("applied", "rejected")
    return head == state.seen and done and fresh and not options.dry_run


def blank(phase: Phase) -> bool:
    """A long-running agent that has loaded nothing yet, has just taken the Lease, or whose
    reconcile was cut for a push: its next run reconciles even an unchanged head
    (agent/run/memory.py)."""
    return phase.keeps and (phase.standing in (Standing.COLD, Standing.NEW_LEADER) or phase.owed)


def stuck(state: RunState, head: str | None, options: Options) -> bool:
    """The head was rejected or refused, and an earlier revision serves."""
    writes = not options.dry_run and options.mode != "detect"
    return (writes and state.outcome in ("rejected", "refused") and bool(state.applied)
            and head is not None and head == state.seen)


def _repair_due(state: RunState, phase: Phase, head: str | None, options: Options,
                now: Now) -> bool:
    """While the head is rejected, a long-running agent reconciles the revision that serves every
    `resync_after` (drift is repaired as it would be with a good head); a one-shot run does not."""
    due = now.mono - phase.served_at >= options.resync_after
    return phase.keeps and stuck(state, head, options) and due


def _repair(state: RunState, phase: Phase, head: str | None, options: Options,
            now: Now) -> Why | None:
    if not stuck(state, head, options):
        return None
    if phase.owed:
        return Why.REPAIR_AFTER_CUT
    if _repair_due(state, phase, head, options, now):
        return Why.REPAIR_DUE
    return Why.REPAIR_FOR_PODS if phase.pods_waiting or phase.pods_moved else None


def repair_phase(decision: Decision, phase: Phase, now: Now) -> Phase:
    """The phase a repair starts from: nothing owed any more; a resync of what serves (repair-due,
    not owed) reads the world in full, and is the resync of `served_at`."""
    if decision.kind is not RunKind.REPAIR:
        return phase
    if decision.why is Why.REPAIR_DUE:
        return dataclasses.replace(phase, owed=False, kube_at=0.0, serials_at=None,
                                   served_at=now.mono)
    return dataclasses.replace(phase, owed=False)


def _repairing(why: Why, phase: Phase, options: Options, now: Now) -> Decision:
    d = _reconcile(why, phase, options, now, may_yield=False)
    after = repair_phase(d, phase, now)
    reading = reading_of(after, options, now, focus=True, zones_first=False)
    return dataclasses.replace(d, revision=Revision.SERVING, reading=reading,
                               statuses=_statuses(RunKind.REPAIR, reading, after),
                               keep_rejection=True, names_superseded=False, alerts=False)


def _again(phase: Phase) -> Why:
    if phase.keeps and phase.standing is Standing.NEW_LEADER:
        return Why.NEW_LEADER
    if phase.keeps and phase.standing is Standing.COLD:
        return Why.START_UP
    if phase.pods_waiting:
        return Why.PODS_WAITING
    return Why.PODS_MOVED if phase.pods_moved else Why.RESYNC


def reading_of(phase: Phase, options: Options, now: Now, *, focus: bool,
               zones_first: bool) -> Reading:
    """How the whole revision reads the world: what is fresh is remembered, the rest read. `focus`:
    the zones' serials may be asked of the zones the run touches only (never in detect mode)."""
    kube_fresh = (phase.has_kube and phase.kube_ns == options.agent_namespace
                  and phase.kube_at > 0.0
                  and now.mono - phase.kube_at < options.resync_after)  # 0.0: never
    dns_fresh = (phase.has_dns and phase.dns_at > 0.0
                 and now.mono - phase.dns_at < options.sweep_after)
    serials_fresh = (phase.serials_at is not None
                     and now.mono - phase.serials_at < options.resync_after)
    if dns_fresh:
        dns = DnsRead.FOCUSED if focus and serials_fresh else DnsRead.SERIALS
    else:  # a cut reconcile's zones are asked by serial, the rest transferred
        dns = DnsRead.SERIALS if phase.owed else DnsRead.TRANSFER
    return Reading(KubeRead.RECALL if kube_fresh else KubeRead.LIST, dns,
                   remembered=dns_fresh or phase.owed, refresh_ownership=not dns_fresh,
                   zones_first=zones_first, plan_memo=dns_fresh)


def _statuses(kind: RunKind, reading: Reading, phase: Phase) -> StatusScope:
    """Every CR's status, unless the cluster was remembered: then those the run changed, the
    unsettled and those of moved pods (a new leader computes all of them once)."""
    if kind not in APPLIES_KUBE:
        return StatusScope.NONE
    return (StatusScope.AFFECTED if reading.kube is KubeRead.RECALL and not phase.statuses_owed
            else StatusScope.ALL)


def _decision(why: Why, *, scope: Scope = ALL, reading: Reading = NO_READ,
              statuses: StatusScope = StatusScope.NONE, may_yield: bool = False,
              writes: bool = True) -> Decision:
    """A run of the head: one that writes names the revisions it superseded and raises alerts; a
    skip's message and notes, a push-first's baseline and a repair's revision are set by theirs."""
    return Decision(KIND_OF[why], why, Revision.HEAD, scope, reading, may_yield=may_yield,
                    statuses=statuses, keep_rejection=False, baseline=False, writes=writes,
                    names_superseded=writes, alerts=writes, publish_pending_notes=False)


def _skip(why: Why, message: str, *, publish: bool = False) -> Decision:
    skip = _decision(why, scope=NOTHING, writes=False)
    return dataclasses.replace(skip, publish_pending_notes=publish, message=message)


def _read_only(why: Why, phase: Phase, options: Options, now: Now, *, focus: bool) -> Decision:
    return _decision(why, reading=reading_of(phase, options, now, focus=focus, zones_first=False),
                     writes=False)


def _push_first(why: Why, *, baseline: bool) -> Decision:
    first = _decision(why, scope=Scope.changed_zones(), reading=PUSHED_ZONES)
    return dataclasses.replace(first, baseline=baseline)


def _reconcile(why: Why, phase: Phase, options: Options, now: Now, *, may_yield: bool) -> Decision:
    reading = reading_of(phase, options, now, focus=True, zones_first=may_yield)
    return _decision(why, reading=reading, statuses=_statuses(KIND_OF[why], reading, phase),
                     may_yield=may_yield)


def follow_phase(phase: Phase, state: RunState) -> Phase:
    """A standby lists the cluster again when the leader wrote since it was listed (or writes
    now)."""
    if phase.kube_listed <= state.wrote_at + CLOCK_SKEW:
        return dataclasses.replace(phase, kube_at=0.0)
    return phase


def _follow(state: RunState, phase: Phase, options: Options, now: Now) -> Decision:
    reading = reading_of(follow_phase(phase, state), options, now, focus=False, zones_first=False)
    return _decision(Why.STANDBY, reading=reading, writes=False)


# -- between runs -------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class RunEnded:
    """A run returned (`trigger` what asked for it): a new leadership's first run is over, and a cut
    reconcile asks for its push's run, then for itself again."""

    trigger: Trigger | None
    outcome: str


@dataclasses.dataclass(frozen=True)
class Owed:
    """A reconcile was cut for a push, or a baseline read (True); the whole revision passed the
    gate, or a repair began (False)."""

    owed: bool


@dataclasses.dataclass(frozen=True)
class LeaseTaken:
    applied_at: float  # the shared state's wrote_at: the old leader's last write (epoch seconds)


@dataclasses.dataclass(frozen=True)
class TakeOverFailed:
    """The zones' ownership records could not be read on taking over: nothing remembered is
    trusted."""


@dataclasses.dataclass(frozen=True)
class PodsSeen:
    """What the pod watch saw (agent/podready/watch.py): whether a pod waits, instances whose pods
    moved."""

    waiting: bool | None = None  # None: not looked at
    moved: frozenset[ObjectKey] = frozenset()


@dataclasses.dataclass(frozen=True)
class StatusesComputed:
    moved: frozenset[ObjectKey]  # the instances whose statuses the run computed as moved


PhaseEvent = RunEnded | Owed | LeaseTaken | TakeOverFailed | PodsSeen | StatusesComputed


def next_phase(phase: Phase, event: PhaseEvent) -> tuple[Phase, Trigger | None]:
    """The phase after `event`, and the run it asks for at once (if any)."""
    if isinstance(event, RunEnded):
        return _after_run(phase, event)
    return _noted(phase, event), None


def _after_run(phase: Phase, event: RunEnded) -> tuple[Phase, Trigger | None]:
    """A new leadership's first run is over; a cut reconcile asks for its push's run, then (once
    that push's run applied, partly or not, or was rejected) for itself again."""
    after = phase
    if phase.standing is Standing.NEW_LEADER:
        after = dataclasses.replace(phase, standing=Standing.WARM)
    if not phase.owed:
        return after, None
    if event.outcome == "preempted":
        return after, Trigger.PUSH  # the push's run, then the reconcile it cut
    # (a rejected push: the cut reconcile of what serves)
    ended = event.outcome in ("applied", "partial", "rejected")
    resume = ended and event.trigger is not Trigger.RESUME
    return after, Trigger.RESUME if resume else None


def _noted(phase: Phase,
           event: Owed | LeaseTaken | TakeOverFailed | PodsSeen | StatusesComputed) -> Phase:
    """The phase after an event that asks for no run."""
    replace = dataclasses.replace
    if isinstance(event, Owed):
        return replace(phase, owed=event.owed)
    # checked before trusted: every serial asked, the cluster maybe listed
    if isinstance(event, LeaseTaken):
        kube_at = 0.0 if phase.kube_listed <= event.applied_at + CLOCK_SKEW else phase.kube_at
        return replace(phase, standing=Standing.NEW_LEADER, statuses_owed=True, kube_at=kube_at,
                       serials_at=None)
    if isinstance(event, TakeOverFailed):
        return replace(phase, standing=Standing.NEW_LEADER, has_kube=False, kube_at=0.0,
                       kube_listed=0.0, has_dns=False, dns_at=0.0, serials_at=None)
    if isinstance(event, PodsSeen):
        waiting = phase.pods_waiting if event.waiting is None else event.waiting
        return replace(phase, pods_waiting=waiting, pods_moved=phase.pods_moved | event.moved)
    return replace(phase, statuses_owed=False, pods_moved=phase.pods_moved - event.moved)
