"""How a run ends: the state it leaves, the reports on its commits (pushed as git notes), the commit
status and the alerts; a rejected or refused revision marks the live CRs with why; a detection saves
its finding only; an unchanged head pushes the reports an earlier run could not. A part of the
orchestrator's run (agent/run/orchestrator.py `_Run`), apart so that each half reads on its own."""

from __future__ import annotations

import logging
import time

from agent.errors import AgentError
from agent.model import problems
from agent.model.ownership import RunState
from agent.model.steps import timed
from agent.observe import kubeobserve
from agent.outcome import forge, notify, report
from agent.plan import statusdiff
from agent.reconcile import events
from agent.run import memorize, runreport
from agent.run.execute import Executing
from agent.run.revisions import Snapshot
from agent.run.runoutcome import RunOutcome

log = logging.getLogger("agent.run.orchestrator")  # the lines operators already filter on


def serving(state: RunState) -> bool:
    """Whether the world serves the newest good revision: one was applied, and the newest commit a
    run looked at was not rejected (while it is, every change after it is blocked)."""
    return state.applied is not None and state.outcome not in ("rejected", "refused")


class Finishing(Executing):
    """The steps that end a run (after `Executing`'s writes, or instead of them)."""

    def _nothing_to_do(self, head: str) -> RunOutcome:
        """The head was handled: no fetch, no parse, no writes - but a report an earlier run could
        not push is pushed now (the remote may be back)."""
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

    def _detect(self, result: RunOutcome) -> RunOutcome:
        """Detection only: what a sync would change is the drift; it is reported, nothing written
        but the agent's own status record."""
        plan = result.plan
        assert plan is not None
        s = plan.summary
        drift = s["create"] + s["update"] + s["delete"] + len(plan.conflicts)
        result.outcome = "drift" if drift else "in-sync"
        result.message = (f"drift: {s['create']} to create, {s['update']} to update, {s['delete']} "
                          f"to delete, {len(plan.conflicts)} conflicts (detect mode: nothing "
                          f"written)" if drift
                          else "in sync: the world matches the revision")
        old = self.state
        self._save(RunState(old.applied, old.seen, result.outcome, old.reconciled_at,
                            old.notes_pending, result.message, writing_at=old.writing_at), result)
        return result

    def _reject(self, snap: Snapshot, result: RunOutcome, message: str, *,
                reason: str = "RevisionRejected", ) -> RunOutcome:
        result.outcome, result.message, result.rejected_head = "rejected", message, True
        if self.options.dry_run:
            return result
        api = self.targets.kube_api
        if api is not None:
            serving = f"; still serving {self.state.applied[:12]}" if self.state.applied else ""
            first = (problems.sorted_problems(problems.errors(result.problems))[:1]
                     or result.refusals[:1] or [""])[0]
            why = f"revision {snap.revision[:12]} rejected: {message} (first: {first}){serving}"
            served = kubeobserve.served_crs(api, self.options.agent_namespace)
            marks = statusdiff.rejection_marks(served, reason=reason, message=why, now=events.now())
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
        # the rejected head stays what the state says; the revision that serves was reconciled
        if self.repairing:
            result.rejected_head = True
            return RunState(old.applied, old.seen, old.outcome, time.time(), old.notes_pending,
                            old.message)
        message = (result.message or f"{result.outcome} {snap.revision[:12]}")[:300]
        new = RunState(old.applied, snap.revision, result.outcome, time.time(), message=message)
        if result.outcome in ("applied", "partial"):
            new.applied = snap.revision
        elif result.refusals:
            # looked at again on every run: --force or a new commit may allow it
            new.outcome = "refused"
        same = (new.applied, new.seen, new.outcome, new.message, old.notes_pending) == (
            old.applied, old.seen, old.outcome, old.message, False)
        # a run that wrote Kubernetes objects always records when: a standby trusts its list of the
        # cluster only if made after the leader's last write (agent/run/memory.py `take_over`)
        wrote = bool(old.writing_at) or (result.kube is not None
                                         and bool(result.kube.applied or result.kube.deleted))
        if (same and not wrote
            and new.reconciled_at - old.reconciled_at < self.options.resync_after / 2):
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
        """The reports built and published, then the state the run leaves saved once (the
        write-ahead mark, saved before the first write, is cleared by it), then the commit status
        and the alerts."""
        state = self._next_state(snap, result)
        with timed(self.steps, "report"):
            took = time.monotonic() - self.started
            reports = [runreport.of_run(self.run_id, snap, result, started_at=self.started_at,
                                        seconds=took, repeat=self.state.applied == snap.revision)]
            for sha in result.superseded:
                reports.append(report.Report(self.run_id, sha, "superseded",
                                             self.source.commit(sha), self.started_at, 0.0,
                                             superseded_by=snap.revision))
        with timed(self.steps, "push"):
            result.notes_pushed = self._publish(reports)
        # kept in the local clone: pushed by the next run, whatever it finds
        if result.notes_pushed is False:
            state.notes_pending = True
        self._save(state, result)
        doc = reports[0].as_dict()
        forge.finished(self.targets.forge, doc)
        # what serves was reconciled again: the head's rejection was alerted, and stays
        if not self.repairing:
            notify.after_run(self.targets.alerts, doc, self.state.outcome,
                             previous_revision=self.state.seen)
        return result
