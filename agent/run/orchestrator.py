"""The one function that runs a revision; the CLI, the scheduler and the webhook only decide when.

    lock -> decide (agent/run/decide.py: skip, repair, push-first, resume, reconcile, dry-run,
                    detect)
         -> snapshot -> load -> desired --(invalid: mark live CRs, report "rejected")-->
         -> observe (Kubernetes, DNS) -> plan -> gate --(refused: same)-->
         -> apply (Kubernetes, zones and RRsets) -> outcome (statuses, state, reports)

The run is decided before a file is read, and executed as decided: what kind of run it is and why,
the revision it applies (the head, or the one that serves while the head is rejected), what it
covers, whether it may yield to a push, which statuses it writes. Nothing else picks its path.

Pushes first: a reconcile of the revision last applied cleanly (start-up, resync, a new leader)
yields to a push that arrives while it observes (`yield_to`, asked as each zone is read): it stops
before planning (outcome "preempted": nothing written, what it read kept), the push's run applies
the zones the push changed (Kubernetes left as it is), and the whole revision is reconciled right
after, from what the cut run read (the phase is "owed", agent/run/decide.py). A restarted agent
whose first run is a push reads the revision applied last as the zones' baseline first.

A zone whose UPDATE found it changed since it was observed (a prerequisite failed) comes back on
the DNS result's `stale` list; those zones alone go once more through observe -> plan -> gate ->
apply. A refusal there is the gate's, like any other; a zone still stale after it makes the run
partial.

Nothing is written before the gate has passed the whole plan: an invalid or refused revision
changes nothing but the marks on live CRs saying why, and the last good revision keeps serving.
Every network call is bounded by the run's deadline.

The run's writing steps are in agent/run/execute.py, how it ends (state, reports, marks) in
agent/run/finish.py; this module executes the decision between them.
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
from agent.model.steps import Steps, timed
from agent.run import decide, lock, logs, memorize, planner
from agent.run.decision import Decision, Head, Now, RunKind
from agent.run.finish import Finishing
from agent.run.finish import serving as serving  # the newest good revision serves? (re-exported)
from agent.run.memory import ONE_SHOT, Memory
from agent.run.planner import Options, Planned, Targets, validate
from agent.run.revisions import RevisionSource, Snapshot
from agent.run.runhold import bounded
from agent.run.runoutcome import RunOutcome as RunOutcome  # what a run returns (re-exported)
from agent.run.validation import Progress, quiet

log = logging.getLogger(__name__)
baseline_log = logging.getLogger("agent.run.pushfirst")  # the lines operators already filter on
SUSPENDED_BY_SETTING, SUSPENDED_BY_MARK = decide.SUSPENDED_BY_SETTING, decide.SUSPENDED_BY_MARK


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def run(source: RevisionSource, targets: Targets, options: Options, *, run_id: str | None = None,
        memory: Memory = ONE_SHOT, progress: Progress = quiet,
        yield_to: Callable[[], bool] | None = None, pushed: bool = False) -> RunOutcome:
    """Runs the newest revision of `source` against `targets`, at most one run per source at a time.
    A long-running agent passes its `memory`, so that a run costs what changed
    (agent/run/memory.py), and `yield_to`, which says when a push waits (pushes first, above);
    `progress` hears the counts of the long steps (files loaded, zones observed and applied).
    `pushed`: a webhook said the branch moved: the run fetches at once instead of asking the
    remote's head first (one git process less)."""
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
                 memory: Memory, progress: Progress = quiet,
                 yield_to: Callable[[], bool] | None = None, pushed: bool = False) -> None:
        self.source, self.targets, self.options, self.run_id = source, targets, options, run_id
        self.memory, self.progress, self.yield_to, self.pushed = memory, progress, yield_to, pushed
        # the world is remembered, not read in full (see Memory)
        self.kube_fast = self.dns_fast = False
        self.repairing = False  # a repair that could read the revision that serves: `_snapshot`
        self.endpoints: Mapping[str, Endpoint] | None = None
        self.started, self.started_at = time.monotonic(), _now()
        self.deadline = Deadline(options.deadline)
        self.state = RunState()
        self.observed = Observed()
        self.steps: Steps = {}  # the wall time of each step (RunOutcome.steps)
        self.decision: Decision  # set before any step reads it (`_decide`)

    def _decide(self, head: Head) -> Decision:
        now = Now(time.time(), time.monotonic())
        phase = self.memory.phase(yields=self.yield_to is not None)
        self.decision = decide.decide(self.state, phase, head, self.options, now)
        return self.decision

    # -- the steps ----------------------------------------------------------------------------
    def go(self) -> RunOutcome:
        result = self._go()
        result.steps = {**self.steps, **result.steps}
        result.decision = vars(self).get("decision")  # None: the run ended before it was decided
        return result

    def _go(self) -> RunOutcome:
        try:
            with timed(self.steps, "fetch"):
                self.state = memorize.load_run(self.targets.store, self.memory)
            skip = decide.suspension(self.state, self.options)
            if skip is not None:
                self.decision = skip
                return RunOutcome(self.run_id, None, "suspended", message=skip.message)
            with timed(self.steps, "fetch"):
                head = self.source.head(fetch=self.pushed)
            logs.revision.set(head or "")
            if self._decide(Head(head)).kind is RunKind.SKIP:
                return self._nothing_to_do(head or "")
            with timed(self.steps, "fetch"):
                snap = self._snapshot(head)
        except AgentError as exc:
            return RunOutcome(self.run_id, None, "unreachable", message=str(exc),
                              retryable=exc.retryable)
        logs.revision.set(snap.revision)
        # the revision read decides what it is (a directory has no head to ask)
        if not self.repairing:
            self._decide(Head(snap.revision, read=True))
        skipped = self.source.superseded(self.state.seen,
                                         snap.revision) if self.decision.names_superseded else []
        planned = self._plan(snap)
        if planned.cut:
            return self._cut(snap, planned)
        return self._gated(snap, planned, skipped)

    def _gated(self, snap: Snapshot, planned: Planned, skipped: list[str]) -> RunOutcome:
        self.observed, self.endpoints = planned.observed, planned.endpoints
        self.validated = planned.validated
        self.kube_fast, self.dns_fast = planned.kube_fast, planned.dns_fast
        found, desired = planned.validated.problems, planned.validated.desired
        result = RunOutcome(self.run_id, snap.revision, "rejected", found, superseded=skipped,
                            parsed=True)
        if desired is None or not planned.validated.ok:
            return self._reject(snap, result,
                                f"{len(problems.errors(found))} validation errors; nothing applied")
        if planned.plan is None:
            result.outcome = "unreachable"
            result.message = f"could not observe the world: {planned.error}"
            return result
        result.plan = planned.plan
        if self.decision.kind is RunKind.DRY_RUN:
            result.outcome = "planned"
            return result
        if self.decision.kind is RunKind.DETECT:
            return self._detect(result)
        if result.plan.refused:  # the gate's (agent/gate/verdict.py)
            return self._reject(snap, result,
                                f"the safety gate refused the plan ({len(result.plan.refused)} "
                                "reasons); nothing applied", reason="PlanRefused")
        self._writes_begin(snap.revision)  # the gate passed: the first write to the world is next
        # the whole revision passed the gate: the reconcile a push cut is this one
        if self.decision.scope.kubernetes:
            memorize.owed(self.memory, False)
        self._apply(desired, result)
        return self._finish(snap, result)

    def _snapshot(self, head: str | None) -> Snapshot:
        """The head; but a repair reads the revision that still serves (`state.applied`), the state
        keeping the head's rejection. When that revision is gone, the head is decided on again."""
        if self.decision.kind is RunKind.REPAIR:
            memorize.repair_begins(self.memory, self.decision, Now(time.time(), time.monotonic()))
            base = self.source.at(self.state.applied or "")
            if base is not None:
                self.repairing = True
                return base
            self._decide(Head(head, serving_gone=True))
        return self.source.snapshot()

    def _plan(self, snap: Snapshot) -> Planned:
        """Pushes first: a reconcile of what was applied cleanly may yield to a push; a push waiting
        behind one (or that came before a restarted agent's first run) has its zones planned alone,
        unless they cannot go alone: then the run is the whole revision's (decide.widen). The one
        planner plans what the decision covers, read as it says."""
        if self.decision.baseline and not self._baseline():
            self._widen(snap)
        decision = self.decision
        # a push's zones are read as the decision says (planner.PUSH_FIRST); when the planner finds
        # they cannot go alone (Planned.first False), the whole revision is read as its widened run
        # reads it
        whole = self._widened(snap) if decision.kind is RunKind.PUSH_FIRST else decision
        planning = planner.Planning(self.targets, self.options, memory=self.memory,
                                    deadline=self.deadline, progress=self.progress)
        planned = planner.plan(snap, decision.scope, whole.reading, planning,
                               stop=self.yield_to if decision.may_yield else None)
        for name, seconds in planned.steps.items():
            self.steps[name] = self.steps.get(name, 0.0) + seconds
        if decision.kind is RunKind.PUSH_FIRST and not planned.first:
            self.decision = whole
        return planned

    def _widened(self, snap: Snapshot) -> Decision:
        """The run of the whole revision a push-first is when its zones cannot go alone."""
        now = Now(time.time(), time.monotonic())
        return decide.widen(self.state, self.memory.phase(yields=self.yield_to is not None),
                            snap.revision, self.options, now)

    def _widen(self, snap: Snapshot) -> None:
        self.decision = self._widened(snap)

    def _baseline(self) -> bool:
        """The revision applied last, read from the clone (fetched by its id if need be) and
        validated, as what each zone serves (`memorize.baseline`); False when it is gone or no
        longer valid."""
        applied = self.state.applied
        try:
            base = self.source.at(applied) if applied else None
            if base is None:
                return False
            validated = validate(base.files, self.options, limits=base.limits,
                                 kube_api=self.targets.kube_api, memory=self.memory)
        except AgentError as exc:  # the push is then planned whole, as without a baseline
            baseline_log.warning("the applied revision %s could not be read as the baseline (%s): "
                                 "the push waits for the reconcile", (applied or "")[:12], exc)
            return False
        for name, seconds in validated.steps.items():
            self.steps[name] = self.steps.get(name, 0.0) + seconds
        if not validated.ok or validated.desired is None:
            return False
        memorize.baseline(self.memory, validated.desired)
        return True

    def _cut(self, snap: Snapshot, planned: Planned) -> RunOutcome:
        """The reconcile yielded to a push before planning: nothing written, what it read kept."""
        assert planned.validated.desired is not None and planned.observed.dns is not None
        memorize.after_cut(self.memory, planned.validated.desired, planned.observed.dns)
        read = len(planned.observed.dns.zones)
        return RunOutcome(self.run_id, snap.revision, "preempted", parsed=True,
                          message=f"a push arrived: its zones go first; the reconcile of "
                                  f"{snap.revision[:12]} follows it ({read} zones read so far are "
                                  f"kept)")
