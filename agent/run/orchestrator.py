"""The one function that runs a revision; the CLI, the scheduler and the webhook only decide when.

    lock -> head unchanged? (stop: no fetch, no parse, no writes)
         -> snapshot -> load -> desired --(invalid: mark live CRs, report "rejected")-->
         -> observe (Kubernetes, DNS) -> plan (whole revision) -> gate --(refused: same)-->
         -> apply (Kubernetes, zones and RRsets) -> outcome (statuses, state, reports)

Pushes first: a reconcile of the revision last applied cleanly (start-up, resync, a new leader)
yields to a push that arrives while it observes (`yield_to`, asked as each zone is read): it stops
before planning (outcome "preempted": nothing written, what it read kept), the push's run applies
the zones the push changed (Kubernetes left as it is), and the whole revision is reconciled right
after, from what the cut run read (agent/run/memory.py `reconcile_pending`).

A zone whose UPDATE found it changed since it was observed (a prerequisite failed) comes back on
the DNS result's `stale` list; those zones alone go once more through observe -> plan -> gate ->
apply. A refusal there is the gate's, like any other; a zone still stale after it makes the run
partial.

Nothing is written before the gate has passed the whole plan: an invalid or refused revision
changes nothing but the marks on live CRs saying why, and the last good revision keeps serving.
Every network call is bounded by the run's deadline.

The run's writing steps are in agent/run/execute.py, how it ends (state, reports, marks) in
agent/run/finish.py; this module decides the path between them.
"""

from __future__ import annotations

import datetime
import logging
import time
import uuid
from collections.abc import Callable, Mapping

from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint
from agent.errors import AgentError
from agent.model import problems
from agent.model.observed import Observed
from agent.model.ownership import RunState
from agent.model.reading import DnsRead, KubeRead
from agent.model.steps import Steps, timed
from agent.outcome import forge
from agent.run import decide, lock, logs, memorize, pushfirst
from agent.run import decideshadow as shadow
from agent.run.decision import Decision, Head, Now, Phase, RunKind, StatusScope, Why
from agent.run.finish import Finishing
from agent.run.finish import serving as serving  # whether the newest good revision serves (re-exported)
from agent.run.memory import ONE_SHOT, Memory
from agent.run.planner import Options, Planned, Targets, plan
from agent.run.revisions import RevisionSource, Snapshot
from agent.run.runhold import bounded
from agent.run.runoutcome import RunOutcome as RunOutcome  # what a run returns (re-exported)
from agent.run.validation import Progress, quiet

log = logging.getLogger(__name__)
SUSPENDED_BY_SETTING, SUSPENDED_BY_MARK = decide.SUSPENDED_BY_SETTING, decide.SUSPENDED_BY_MARK


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def run(source: RevisionSource, targets: Targets, options: Options, *, run_id: str | None = None,
        memory: Memory = ONE_SHOT, progress: Progress = quiet, yield_to: Callable[[], bool] | None = None,
        pushed: bool = False) -> RunOutcome:
    """Runs the newest revision of `source` against `targets`, at most one run per source at a time.
    A long-running agent passes its `memory`, so that a run costs what changed (agent/run/memory.py),
    and `yield_to`, which says when a push waits (pushes first, above); `progress` hears the counts of
    the long steps (files loaded, zones observed and applied). `pushed`: a webhook said the branch
    moved: the run fetches at once instead of asking the remote's head first (one git process less)."""
    run_id = run_id or uuid.uuid4().hex[:12]
    logs.run_id.set(run_id)  # every log line of this run carries it (and the revision, once known)
    logs.revision.set("")
    one = _Run(source, targets, options, run_id, memory, progress, yield_to, pushed)
    try:
        with bounded(source, targets, one.deadline, lock_wait=options.lock_wait):
            result = one.go()
        cut = bool(result.failures) or result.outcome in ("unreachable", "partial")
        result.deadline_hit = one.deadline.expired and cut
        return result
    except lock.Busy as exc:
        return RunOutcome(run_id, None, "busy", message=str(exc))


class _Run(Finishing):
    def __init__(self, source: RevisionSource, targets: Targets, options: Options, run_id: str,
                 memory: Memory, progress: Progress = quiet, yield_to: Callable[[], bool] | None = None,
                 pushed: bool = False) -> None:
        self.source, self.targets, self.options, self.run_id = source, targets, options, run_id
        self.memory, self.progress, self.yield_to, self.pushed = memory, progress, yield_to, pushed
        self.kube_fast = self.dns_fast = False  # the world is remembered, not read in full (see Memory)
        self.repairing = False  # reconciling the revision that serves, not the (rejected) head: `_snapshot`
        self.endpoints: Mapping[str, Endpoint] | None = None
        self.started, self.started_at = time.monotonic(), _now()
        self.deadline = Deadline(options.deadline)
        self.state = RunState()
        self.observed = Observed()
        self.steps: Steps = {}  # the wall time of each step (RunOutcome.steps)
        self.decision: Decision | None = None  # what kind of run this is, and why (agent/run/decide.py)
        self.statuses_owed = False

    def _decide(self, head: Head) -> Decision:
        self.decision = decide.decide(self.state, self._phase(), head, self.options, Now(time.time(), time.monotonic()))
        return self.decision

    def _phase(self) -> Phase:
        return self.memory.phase(yields=self.yield_to is not None)

    # -- the steps ----------------------------------------------------------------------------
    def go(self) -> RunOutcome:
        result = self._go()
        result.steps = {**self.steps, **result.steps}
        result.decision = result.decision or self.decision
        if self.decision is not None and result.outcome not in ("unreachable", "preempted"):
            self._shadow_end(self.decision, result)
        return result

    def _shadow_end(self, d: Decision, result: RunOutcome) -> None:
        kinds = {"planned": (RunKind.DRY_RUN,), "drift": (RunKind.DETECT,), "in-sync": (RunKind.DETECT,),
                 "unchanged": (RunKind.SKIP,), "suspended": (RunKind.SKIP,),
                 "applied": (*decide.APPLIES_KUBE, RunKind.PUSH_FIRST),
                 "partial": (*decide.APPLIES_KUBE, RunKind.PUSH_FIRST)}
        shadow.check(d.kind in kinds.get(result.outcome, tuple(RunKind)), f"outcome {result.outcome}", d)
        shadow.check(self.repairing == (d.kind is RunKind.REPAIR), f"repairing {self.repairing}", d)
        if result.kube is not None and self.targets.kube_api is not None:
            want = StatusScope.AFFECTED if self.kube_fast and not self.statuses_owed else StatusScope.ALL
            shadow.check(d.statuses is want, f"statuses {want}", d)

    def _go(self) -> RunOutcome:
        try:
            with timed(self.steps, "fetch"):
                self.state = memorize.load_run(self.targets.store, self.memory)
            suspended = self._suspended()
            if suspended is not None:
                return suspended
            with timed(self.steps, "fetch"):
                head = self.source.head(fetch=self.pushed)
            logs.revision.set(head or "")
            if self._shadow_unchanged(head, self._decide(Head(head))):
                return self._nothing_to_do(head or "")
            with timed(self.steps, "fetch"):
                snap = self._snapshot(head)
        except AgentError as exc:
            return RunOutcome(self.run_id, None, "unreachable", message=str(exc), retryable=exc.retryable)
        logs.revision.set(snap.revision)
        d = self.decision if self.repairing and self.decision else self._decide(Head(snap.revision, read=True))
        skipped = self.source.superseded(self.state.seen, snap.revision) if self.writes and not self.repairing else []
        shadow.check(bool(self.writes and not self.repairing) == d.names_superseded, "superseded", d)
        planned = self._plan(snap)
        if planned.cut:
            return pushfirst.cut(self.run_id, snap, planned, self.memory)
        self.observed, self.endpoints = planned.observed, planned.endpoints
        self.kube_fast, self.dns_fast = planned.kube_fast, planned.dns_fast
        found, desired = planned.validated.problems, planned.validated.desired
        result = RunOutcome(self.run_id, snap.revision, "rejected", found, superseded=skipped, parsed=True)
        if desired is None or not planned.validated.ok:
            return self._reject(snap, result, f"{len(problems.errors(found))} validation errors; nothing applied")
        if planned.plan is None:
            result.outcome, result.message = "unreachable", f"could not observe the world: {planned.error}"
            return result
        result.plan = planned.plan
        if self.options.dry_run:
            result.outcome = "planned"
            return result
        if self.options.mode == "detect":
            return self._detect(result)
        if result.plan.refusals:
            return self._reject(snap, result, f"the safety gate refused the plan ({len(result.plan.refusals)} "
                                "reasons); nothing applied", reason="PlanRefused")
        forge.pending(self.targets.forge, snap.revision)  # the gate passed: the first write to the world is next
        if not planned.first:  # the whole revision passed the gate: the reconcile a push cut is this one
            self.memory.reconcile_pending = False
        self._apply(desired, result)
        return self._finish(snap, result)

    def _shadow_unchanged(self, head: str | None, d: Decision) -> bool:
        self.statuses_owed = self.memory.statuses_all
        if head is not None and self._unchanged(head):
            shadow.check(d.why is Why.UNCHANGED, "unchanged", d)
            shadow.check(d.publish_pending_notes == (self.state.notes_pending and self.options.push_notes),
                         "pending reports", d)
            return True
        shadow.check(d.kind is not RunKind.SKIP, "not unchanged", d)
        return False

    def _suspended(self) -> RunOutcome | None:
        self.decision = decide.suspension(self.state, self.options)
        if self.options.suspend or self.state.suspended:
            why = SUSPENDED_BY_SETTING if self.options.suspend else SUSPENDED_BY_MARK
            shadow.check(self.decision is not None and self.decision.message == why, "suspended", self.decision)
            return RunOutcome(self.run_id, None, "suspended", message=why)
        shadow.check(self.decision is None, "not suspended", self.decision)
        return None

    def _snapshot(self, head: str | None) -> Snapshot:
        """The head; but while the head is rejected, the revision that still serves (`state.applied`)
        when a push cut its reconcile, a new pod waits for its zones, pods moved, or a resync is due (the
        state keeps the head's rejection: `repairing`)."""
        s, memory, d = self.state, self.memory, self.decision
        due = self._repair_due(head)
        if self._stuck(head) and (memory.reconcile_pending or memory.pods_waiting or memory.pods_moved or due):
            why = Why.REPAIR_AFTER_CUT if memory.reconcile_pending else Why.REPAIR_DUE if due else Why.REPAIR_FOR_PODS
            shadow.check(d is None or d.why is why, f"repair {why}", d)
            if due and not memory.reconcile_pending:  # a resync of what serves: the world is read in full
                memory.kube_at, memory.serials_at, memory.served_at = 0.0, None, time.monotonic()  # once per resync
            memory.reconcile_pending = False
            base = self.source.at(s.applied or "")
            if base is not None:
                self.repairing = True
                return base
            self._decide(Head(head, serving_gone=True))
        else:
            shadow.check(d is None or d.kind is not RunKind.REPAIR, "no repair", d)
        return self.source.snapshot()

    def _stuck(self, head: str | None) -> bool:
        """The head was rejected or refused, and an earlier revision serves."""
        s = self.state
        return (self.writes and s.outcome in ("rejected", "refused") and bool(s.applied) and head is not None
                and head == s.seen)

    def _repair_due(self, head: str | None) -> bool:
        """While the head is rejected, a long-running agent reconciles the revision that serves every
        `resync_after` (drift is repaired as it would be with a good head); a one-shot run does not."""
        return (self.memory.keeps and self._stuck(head)
                and time.monotonic() - self.memory.served_at >= self.options.resync_after)

    def _plan(self, snap: Snapshot) -> Planned:
        """Pushes first: a reconcile of what was applied cleanly may yield to a push; a push waiting
        behind one (or that came before a restarted agent's first run) has its zones planned alone."""
        # yields once: a reconcile already cut for a push (`reconcile_pending`) goes to its end
        again = (self.writes and snap.revision == self.state.applied and self.state.outcome == "applied"
                 and not self.memory.reconcile_pending)
        d = self.decision
        assert d is not None
        reads = (self.writes and not again and self.yield_to is not None and self.memory.blank
                 and not self.memory.reconcile_pending and self.state.outcome == "applied")
        shadow.check(reads == d.baseline, f"baseline {reads}", d)
        if reads:
            pushfirst.baseline(self.source, self.state, self.targets, self.options, self.memory, self.steps)
        # (once the push's zones went, its revision is the applied one: the next run reconciles it whole)
        first = self.writes and self.memory.reconcile_pending and snap.revision != self.state.applied
        shadow.check(first == (d.kind is RunKind.PUSH_FIRST) or (d.baseline and not first), f"first {first}", d)
        shadow.check((again and self.yield_to is not None) == d.may_yield, f"yields {again}", d)
        phase, now = self._phase(), Now(time.time(), time.monotonic())
        planned = plan(snap, self.targets, self.options, memory=self.memory, deadline=self.deadline,
                       progress=self.progress, yield_to=self.yield_to if again else None, first=first)
        for name, seconds in planned.steps.items():
            self.steps[name] = self.steps.get(name, 0.0) + seconds
        if d.kind is RunKind.PUSH_FIRST and not planned.first:  # its zones cannot go alone: the whole revision
            d = self.decision = decide.widen(self.state, phase, snap.revision, self.options, now)
        if not planned.cut and planned.validated.ok and planned.error is None and not planned.first:
            r = d.reading
            shadow.check((planned.kube_fast, planned.dns_fast) == (r.kube is KubeRead.RECALL, r.plan_memo),
                         f"fast {planned.kube_fast} {planned.dns_fast}", d)
            dns = planned.observed.dns
            shadow.check(dns is None or (dns.focus is not None) == (r.dns is DnsRead.FOCUSED),
                         f"focus {dns.focus if dns else None}", d)
        return planned

    def _unchanged(self, head: str) -> bool:
        if self.options.mode == "detect":
            return False  # drift arises in the world, not in Git: look every time
        if self.memory.blank or self.memory.pods_waiting or self.memory.pods_moved or self._repair_due(head):
            return False  # just started, a new pod waits for its zones, pods moved (statuses), a resync: now
        fresh = time.time() - self.state.reconciled_at < self.options.resync_after
        done = self.state.outcome in ("applied", "rejected")
        return head == self.state.seen and done and fresh and not self.options.dry_run
