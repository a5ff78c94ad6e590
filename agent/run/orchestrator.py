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
"""

from __future__ import annotations

import datetime
import logging
import time
import uuid
from collections.abc import Callable, Mapping

from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint
from agent.desired.hierarchy import Desired
from agent.errors import AgentError, KubeError
from agent.model import names, problems
from agent.model.observed import Observed
from agent.model.ownership import RunState
from agent.observe import kubeobserve
from agent.outcome import conditions, forge, notify, report, status
from agent.plan import statusdiff
from agent.reconcile import events, kubeapply
from agent.run import dnsrounds, lock, logs, memorize, podgates, pushfirst, runreport
from agent.run.memory import ONE_SHOT, Memory
from agent.run.planner import Options, Planned, Targets, plan
from agent.run.revisions import RevisionSource, Snapshot
from agent.run.runhold import bounded
from agent.run.runoutcome import RunOutcome as RunOutcome  # what a run returns (re-exported)
from agent.run.steps import Steps, timed
from agent.run.validation import Progress, quiet

log = logging.getLogger(__name__)
SUSPENDED_BY_SETTING = ("suspended by the setting suspend (BINDY_AGENT_SUSPEND, --suspend or the config file): nothing "
                        "is read or written; set it to false to continue")
SUSPENDED_BY_MARK = (f"suspended by `bindy-agent suspend` (the annotation {names.SUSPEND_ANNOTATION}: \"true\" on the "
                     "agent's state ConfigMap, or the file `suspended` in its --state directory): nothing is read or "
                     "written; `bindy-agent resume` to continue")
def serving(state: RunState) -> bool:
    """Whether the world serves the newest good revision: one was applied, and the newest commit a run
    looked at was not rejected (while it is, every change after it is blocked)."""
    return state.applied is not None and state.outcome not in ("rejected", "refused")


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


class _Run:
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

    # -- the steps ----------------------------------------------------------------------------
    def go(self) -> RunOutcome:
        result = self._go()
        result.steps = {**self.steps, **result.steps}
        return result

    def _go(self) -> RunOutcome:
        try:
            with timed(self.steps, "fetch"):
                self.state = memorize.load_run(self.targets.store, self.memory)
            if self.options.suspend or self.state.suspended:
                why = SUSPENDED_BY_SETTING if self.options.suspend else SUSPENDED_BY_MARK
                return RunOutcome(self.run_id, None, "suspended", message=why)
            with timed(self.steps, "fetch"):
                head = self.source.head(fetch=self.pushed)
            logs.revision.set(head or "")
            if head is not None and self._unchanged(head):
                return self._nothing_to_do(head)
            with timed(self.steps, "fetch"):
                snap = self._snapshot(head)
        except AgentError as exc:
            return RunOutcome(self.run_id, None, "unreachable", message=str(exc), retryable=exc.retryable)
        logs.revision.set(snap.revision)
        skipped = self.source.superseded(self.state.seen, snap.revision) if self.writes and not self.repairing else []
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

    def _snapshot(self, head: str | None) -> Snapshot:
        """The head; but while the head is rejected, the revision that still serves (`state.applied`)
        when a push cut its reconcile, a new pod waits for its zones, pods moved, or a resync is due (the
        state keeps the head's rejection: `repairing`)."""
        s, memory = self.state, self.memory
        due = self._repair_due(head)
        if self._stuck(head) and (memory.reconcile_pending or memory.pods_waiting or memory.pods_moved or due):
            if due and not memory.reconcile_pending:  # a resync of what serves: the world is read in full
                memory.kube_at, memory.serials_at, memory.served_at = 0.0, None, time.monotonic()  # once per resync
            memory.reconcile_pending = False
            base = self.source.at(s.applied or "")
            if base is not None:
                self.repairing = True
                return base
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
        if (self.writes and not again and self.yield_to is not None and self.memory.blank
                and not self.memory.reconcile_pending and self.state.outcome == "applied"):
            pushfirst.baseline(self.source, self.state, self.targets, self.options, self.memory, self.steps)
        # (once the push's zones went, its revision is the applied one: the next run reconciles it whole)
        first = self.writes and self.memory.reconcile_pending and snap.revision != self.state.applied
        planned = plan(snap, self.targets, self.options, memory=self.memory, deadline=self.deadline,
                       progress=self.progress, yield_to=self.yield_to if again else None, first=first)
        for name, seconds in planned.steps.items():
            self.steps[name] = self.steps.get(name, 0.0) + seconds
        return planned

    def _nothing_to_do(self, head: str) -> RunOutcome:
        """The head was handled: no fetch, no parse, no writes - but a report an earlier run could not
        push is pushed now (the remote may be back)."""
        result = RunOutcome(self.run_id, head, "unchanged",
                            message=f"{head[:12]} was already {self.state.outcome}; nothing to do",
                            rejected_head=not serving(self.state))
        if self.state.notes_pending and self.options.push_notes:
            result.notes_pushed = self._publish([])
            if result.notes_pushed:
                self.state.notes_pending = False
                self._save(self.state, result)
                result.message += "; pushed the reports an earlier run could not"
        return result

    @property
    def writes(self) -> bool:
        """Whether this run may write (statuses, reports, commit statuses): not a dry run or detection."""
        return not self.options.dry_run and self.options.mode != "detect"

    def _detect(self, result: RunOutcome) -> RunOutcome:
        """Detection only: what a sync would change is the drift; it is reported, nothing written but
        the agent's own status record."""
        plan = result.plan
        assert plan is not None
        s = plan.summary
        drift = s["create"] + s["update"] + s["delete"] + len(plan.conflicts)
        result.outcome = "drift" if drift else "in-sync"
        result.message = (f"drift: {s['create']} to create, {s['update']} to update, {s['delete']} to delete, "
                          f"{len(plan.conflicts)} conflicts (detect mode: nothing written)" if drift
                          else "in sync: the world matches the revision")
        old = self.state
        self._save(RunState(old.applied, old.seen, result.outcome, old.reconciled_at, old.notes_pending,
                            result.message, writing_at=old.writing_at), result)
        return result

    def _unchanged(self, head: str) -> bool:
        if self.options.mode == "detect":
            return False  # drift arises in the world, not in Git: look every time
        if self.memory.blank or self.memory.pods_waiting or self.memory.pods_moved or self._repair_due(head):
            return False  # just started, a new pod waits for its zones, pods moved (statuses), a resync: now
        fresh = time.time() - self.state.reconciled_at < self.options.resync_after
        done = self.state.outcome in ("applied", "rejected")
        return head == self.state.seen and done and fresh and not self.options.dry_run

    def _apply(self, desired: Desired, result: RunOutcome) -> None:
        plan, options, api = result.plan, self.options, self.targets.kube_api
        assert plan is not None
        lasting = False  # a step failed for a reason a later run would meet again
        try:
            if api is not None and plan.kube is not None:  # Bindy's CRDs first: lines of the plan (Plan.crds)
                kube_options = kubeapply.KubeApplyOptions(options.agent_namespace, options.rotate_rndc_keys)
                assert self.observed.kube is not None
                if plan.kube or plan.crds or plan.namespaces:
                    self._writing()
                with timed(self.steps, "apply_kubernetes"):
                    result.kube = kubeapply.apply(api, plan, self.observed.kube, options=kube_options,
                                                  deadline=self.deadline, progress=lambda done, total: self.progress(
                                                      "applied", "objects", done, total))
            if plan.zones is not None and self.endpoints is not None:
                rounds = dnsrounds.Rounds(self.targets.store, self.endpoints, self.options, result.revision,
                                          self.deadline, self.steps, self.progress, self.memory.reports())
                result.dns = rounds.apply(plan.zones, focus=self.observed.dns.focus if self.observed.dns else None)
                if result.dns.stale:
                    result.replan = rounds.again(desired, result.dns)
                result.errors += podgates.after_dns(api, desired, self.endpoints, result.dns, wait=options.verify_wait,
                                                    deadline=self.deadline, steps=self.steps).errors  # new pods: Ready
            if api is not None and result.kube is not None:
                with timed(self.steps, "status"):
                    self._statuses(desired, result)
        except AgentError as exc:  # a whole step failed (CRDs, the store, the deadline): the rest waits
            log.warning("apply stopped: %s", exc)
            result.errors.append(str(exc))
            lasting = not exc.retryable
        result.outcome = "partial" if result.failures or result.conflicts else "applied"
        # foreign data, a refused zone or a lasting error stay what they are until someone acts
        refused = result.replan is not None and bool(result.replan.refusals)
        result.retryable = result.outcome == "partial" and not (lasting or refused or result.conflicts)
        if result.outcome == "partial":
            result.message = self._partial(result)
        memorize.after_run(self.memory, desired, result.kube, result.dns, self.observed,
                           agent_namespace=self.options.agent_namespace, kube_fast=self.kube_fast,
                           dns_fast=self.dns_fast, failed=bool(result.errors))

    def _statuses(self, desired: Desired, result: RunOutcome) -> None:
        api, plan, kube = self.targets.kube_api, result.plan, result.kube
        assert api is not None and plan is not None and kube is not None
        only, moved = None, self.memory.pods_moved.peek()  # every CR's, unless the cluster was remembered:
        if self.kube_fast and not self.memory.statuses_all:  # what this run changed, unsettled, pods moved
            only = status.affected(desired, plan, kube, result.dns) | self.memory.unsettled | status.served_by(
                desired, moved)
        pods = kubeobserve.pods(api, conditions.unready(kube.live, desired.instances))  # why they do not start
        wanted = status.wanted(desired, kube, revision=result.revision, dns=result.dns, only=only,
                               changed=status.changed_zones(plan), pods=pods, endpoints=self.endpoints)
        if self.repairing:  # what serves is reconciled; the head's rejection still shows until a good head
            wanted = statusdiff.keep_rejection(wanted, kube.live)
        todo = statusdiff.to_write(wanted, kube.live, kube.conflicts, events.now())
        if todo:
            self._writing()
        memorize.statuses_computed(self.memory, wanted, only, written=False)
        self.memory.pods_moved.done(moved)
        kubeapply.write_statuses(api, todo, kube, revision=result.revision, deadline=self.deadline)
        memorize.statuses_computed(self.memory, wanted, only, written=True, not_written=kube.failed)

    def _writing(self) -> None:
        """Saved before the run's first Kubernetes write (RunState.writing_at), cleared by its end: a
        standby lists the cluster again after it, even if this process dies before its end is saved.
        Raises if it cannot be saved, and then nothing is written."""
        if not self.state.writing_at:  # else set already: by this run, or by a run whose end was never saved
            self.state.writing_at = time.time()
            try:
                self.targets.store.save_run(self.state)
            except KubeError as exc:  # the state's namespace does not exist yet (this run creates it): a
                if exc.reason != "not_found":  # state never saved is trusted by no replica (RunState.wrote_at)
                    raise
                self.state.writing_at = 0.0  # saved at the next write, once the namespace exists

    def _partial(self, result: RunOutcome) -> str:
        """What a partial run tells the user (the CLI prints it; the deadline also goes into the report)."""
        if self.deadline.expired and result.failures:
            result.errors.append(f"the run's deadline ({self.deadline.seconds:.0f} s) passed before it finished")
        why = "; ".join(x for x in (f"{len(result.failures)} failed" if result.failures else "",
                                    f"{len(result.conflicts)} conflicts" if result.conflicts else "") if x)
        late = " (the run's deadline passed)" if self.deadline.expired and result.failures else ""
        return f"partial: {why}{late}; what was applied stays, the rest is tried again on the next run"

    # -- outcomes -----------------------------------------------------------------------------
    def _reject(self, snap: Snapshot, result: RunOutcome, message: str, *, reason: str = "RevisionRejected",
                ) -> RunOutcome:
        result.outcome, result.message, result.rejected_head = "rejected", message, True
        if self.options.dry_run:
            return result
        api = self.targets.kube_api
        if api is not None:
            serving = f"; still serving {self.state.applied[:12]}" if self.state.applied else ""
            first = (problems.sorted_problems(problems.errors(result.problems))[:1] or result.refusals[:1] or [""])[0]
            why = f"revision {snap.revision[:12]} rejected: {message} (first: {first}){serving}"
            marks = statusdiff.rejection_marks(kubeobserve.served_crs(api, self.options.agent_namespace),
                                               reason=reason, message=why, now=events.now())
            try:
                if marks:
                    self._writing()
            except AgentError as exc:
                result.errors.append(f"the live CRs were not marked: {exc}")
                marks = []
            memorize.rejection_marked(self.memory, marks)
            events.mark_rejected(api, marks, reason=reason, message=why)
        return self._finish(snap, result)

    def _next_state(self, snap: Snapshot, result: RunOutcome) -> RunState:
        old = self.state
        if self.repairing:  # the rejected head stays what the state says; the revision that serves was reconciled
            result.rejected_head = True
            return RunState(old.applied, old.seen, old.outcome, time.time(), old.notes_pending, old.message)
        message = (result.message or f"{result.outcome} {snap.revision[:12]}")[:300]
        new = RunState(old.applied, snap.revision, result.outcome, time.time(), message=message)
        if result.outcome in ("applied", "partial"):
            new.applied = snap.revision
        elif result.refusals:
            new.outcome = "refused"  # looked at again on every run: --force or a new commit may allow it
        same = (new.applied, new.seen, new.outcome, new.message, old.notes_pending) == (
            old.applied, old.seen, old.outcome, old.message, False)
        # a run that wrote Kubernetes objects always records when: a standby trusts its list of the
        # cluster only if made after the leader's last write (agent/run/memory.py `take_over`)
        wrote = bool(old.writing_at) or (result.kube is not None and bool(result.kube.applied or result.kube.deleted))
        if same and not wrote and new.reconciled_at - old.reconciled_at < self.options.resync_after / 2:
            new.reconciled_at = old.reconciled_at  # nothing new to remember: no write
        return new

    def _save(self, state: RunState, result: RunOutcome) -> None:
        try:
            self.targets.store.save_run(state)
        except AgentError as exc:
            result.errors.append(f"the run state was not saved: {exc}")

    def _publish(self, reports: list[report.Report]) -> bool | None:
        try:
            return self.source.publish(reports, push=self.options.push_notes)
        except AgentError as exc:
            log.warning("the reports could not be written: %s", exc)
            return False

    def _finish(self, snap: Snapshot, result: RunOutcome) -> RunOutcome:
        state = self._next_state(snap, result)
        self._save(state, result)
        with timed(self.steps, "report"):
            reports = [runreport.of_run(self.run_id, snap, result, started_at=self.started_at, seconds=time.monotonic()
                                        - self.started, repeat=self.state.applied == snap.revision)]
            for sha in result.superseded:
                reports.append(report.Report(self.run_id, sha, "superseded", self.source.commit(sha), self.started_at,
                                             0.0, superseded_by=snap.revision))
        with timed(self.steps, "push"):
            result.notes_pushed = self._publish(reports)
        if result.notes_pushed is False:  # kept in the local clone: pushed by the next run, whatever it finds
            state.notes_pending = True
            self._save(state, result)
        doc = reports[0].as_dict()
        forge.finished(self.targets.forge, doc)
        if not self.repairing:  # what serves was reconciled again: the head's rejection was alerted, and stays
            notify.after_run(self.targets.alerts, doc, self.state.outcome, previous_revision=self.state.seen)
        return result
