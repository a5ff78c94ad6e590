"""The writing half of a run, once the gate has passed its plan: Kubernetes applied, then the zones
and RRsets (a second round for the zones found stale while written), the pods waiting for their
zones, then the CRs' statuses; the write-ahead mark saved before the first Kubernetes write. A part
of the orchestrator's run (agent/run/orchestrator.py `_Run`), apart so that each half reads on its
own."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from agent.clients import commitstatus
from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint
from agent.desired.hierarchy import Desired
from agent.errors import AgentError, KubeError
from agent.model.observed import DnsObserved, Observed
from agent.model.ownership import RunState
from agent.model.scope import Scope
from agent.model.steps import Steps, timed
from agent.observe import kubeobserve
from agent.outcome import conditions, status
from agent.plan import statusdiff
from agent.plan.changes import Plan
from agent.plan.zoneplan import ZonePlan
from agent.podready import step as podstep
from agent.reconcile import dnsapply, dnsresult, events, insync, kubeapply
from agent.run import memorize, planner
from agent.run.decision import Decision, StatusScope
from agent.run.memory import Memory
from agent.run.planner import Options, Targets
from agent.run.revisions import RevisionSource
from agent.run.runoutcome import RunOutcome
from agent.run.validation import Progress, Validated

log = logging.getLogger("agent.run.orchestrator")  # the lines operators already filter on
again_log = logging.getLogger("agent.run.dnsrounds")  # the second DNS round's, as before


class Executing:
    """What a run holds (set by the orchestrator's `_Run`), and its writing steps."""

    source: RevisionSource
    targets: Targets
    options: Options
    run_id: str
    memory: Memory
    progress: Progress
    yield_to: Callable[[], bool] | None
    pushed: bool
    kube_fast: bool
    dns_fast: bool
    repairing: bool  # reconciling the revision that serves, not the (rejected) head
    decision: Decision  # what kind of run this is, and why (agent/run/decide.py)
    endpoints: Mapping[str, Endpoint] | None
    started: float
    started_at: str
    deadline: Deadline
    state: RunState
    observed: Observed
    validated: Validated  # the revision planned (the second DNS round plans from it again)
    steps: Steps

    def _writes_begin(self, revision: str) -> None:
        """The first step of the writing half: the forge is told the commit is being applied
        (the status built when the run's targets were: `Targets.pending`; none when statuses
        are off)."""
        commitstatus.post(self.targets.pending, revision)

    def _apply(self, desired: Desired, result: RunOutcome) -> None:
        plan, options, api = result.plan, self.options, self.targets.kube_api
        assert plan is not None
        lasting = False  # a step failed for a reason a later run would meet again
        try:
            # Bindy's CRDs first: lines of the plan (Plan.crds)
            if api is not None and plan.kube is not None:
                kube_options = kubeapply.KubeApplyOptions(
                    options.agent_namespace, options.rotate_rndc_keys)
                assert self.observed.kube is not None
                if plan.kube or plan.crds or plan.namespaces:
                    self._writing()
                with timed(self.steps, "apply_kubernetes"):
                    result.kube = kubeapply.apply(api, plan, self.observed.kube,
                                                  options=kube_options, deadline=self.deadline,
                                                  progress=lambda done, total: self.progress(
                                                      "applied", "objects", done, total))
            if plan.zones is not None and self.endpoints is not None:
                result.dns = self._apply_dns(plan.zones, result.revision,
                                             reported=self.memory.reports(),
                                             observed=self.observed.dns)
                if result.dns.stale:
                    result.replan = self._again(result.revision, result.dns)
                # new pods: Ready
                gated = podstep.after_dns(api, desired, self.endpoints, result.dns,
                                          wait=options.verify_wait, deadline=self.deadline,
                                          steps=self.steps)
                result.errors += gated.errors
            if api is not None and result.kube is not None:
                with timed(self.steps, "status"):
                    self._statuses(desired, result)
        # a whole step failed (CRDs, the store, the deadline): the rest waits
        except AgentError as exc:
            log.warning("apply stopped: %s", exc)
            result.errors.append(str(exc))
            lasting = not exc.retryable
        result.outcome = "partial" if result.failures or result.conflicts else "applied"
        # foreign data, a refused zone or a lasting error stay what they are until someone acts
        refused = result.replan is not None and bool(result.replan.refusals)
        stays = lasting or refused or bool(result.conflicts)
        result.retryable = result.outcome == "partial" and not stays
        if result.outcome == "partial":
            result.message = self._partial(result)
        planned_from = memorize.PlannedFrom(self.observed, self.kube_fast, self.dns_fast)
        memorize.after_run(self.memory, desired, result.kube, result.dns, planned_from,
                           agent_namespace=self.options.agent_namespace,
                           failed=bool(result.errors))

    def _apply_dns(self, zones: list[ZonePlan], revision: str | None, *,
                   reported: insync.Reported | None,
                   observed: DnsObserved | None) -> dnsresult.DnsResult:
        """The zones and RRsets of a plan (reconcile/dnsapply.py); verification is a step of its
        own."""
        assert self.endpoints is not None
        options = dnsapply.DnsApplyOptions(self.options.batch, self.options.verify_wait, revision)
        with timed(self.steps, "apply_dns"):
            def applied(n: int, total: int) -> None:
                self.progress("applied", "zones", n, total)

            done = dnsapply.apply(zones, self.endpoints, self.targets.store, options=options,
                                  deadline=self.deadline, observed=observed, reported=reported,
                                  progress=applied)
        self.steps["apply_dns"] -= done.verify_seconds
        self.steps["verify"] = self.steps.get("verify", 0.0) + done.verify_seconds
        return done

    def _again(self, revision: str | None, first: dnsresult.DnsResult) -> Plan | None:
        """The second DNS round: the zones `first` found stale (an UPDATE's prerequisite failed:
        they changed since observed) through the one planner once more - observed as they are now
        (what the first round's earlier batches wrote included, through the stored intent), planned,
        gated - and applied where the gate passes; `first` takes the outcome (reconcile/dnsresult.py
        `merge_round`). Returns the second round's plan (None: the zones could not be observed
        again)."""
        stale = frozenset(first.stale)
        again_log.warning("observing, planning and gating again the zones that changed while being "
                          "written: %s", ", ".join(sorted(stale)))
        scope = Scope.stale(stale)
        planning = planner.Planning(self.targets, self.options, deadline=self.deadline)
        again = planner.plan_validated(self.validated, scope, planner.AGAIN, planning,
                                       revision=revision, endpoints=self.endpoints)
        for name, seconds in again.steps.items():
            self.steps[name] = self.steps.get(name, 0.0) + seconds
        if again.plan is None:
            first.errors.append(f"zones that changed while being written could not be observed "
                                f"again: {again.error}")
            for zone in (z for z in first.zones if z.stale):
                zone.stale += dnsresult.landed(zone.written)
            first.stale = {}
            return None
        refused = {r.zone or "": r.text for r in again.plan.refused}
        second = self._apply_dns([zp for zp in again.plan.zones or [] if zp.name not in refused],
                                 revision, reported=self.memory.reports(),
                                 observed=again.observed.dns)
        dnsresult.merge_round(first, second, refused)
        return again.plan

    def _statuses(self, desired: Desired, result: RunOutcome) -> None:
        api, plan, kube = self.targets.kube_api, result.plan, result.kube
        assert api is not None and plan is not None and kube is not None
        only, moved = None, self.memory.pods_moved  # every CR's, unless the cluster was remembered:
        # what this run changed, unsettled, pods moved
        if self.decision.statuses is StatusScope.AFFECTED:
            affected = status.affected(desired, plan, kube, result.dns)
            only = affected | self.memory.unsettled | status.served_by(desired, moved)
        # why they do not start
        pods = kubeobserve.pods(api, conditions.unready(kube.live, desired.instances))
        wanted = status.wanted(desired, kube, revision=result.revision, dns=result.dns, only=only,
                               pods=pods, endpoints=self.endpoints, plan=plan)
        # what serves is reconciled; the head's rejection still shows until a good head
        if self.repairing:
            wanted = statusdiff.keep_rejection(wanted, kube.live)
        todo = statusdiff.to_write(wanted, kube.live, kube.conflicts, events.now())
        if todo:
            self._writing()
        memorize.statuses_computed(self.memory, wanted, only, written=False, moved=moved)
        kubeapply.write_statuses(api, todo, kube, revision=result.revision, deadline=self.deadline)
        memorize.statuses_computed(self.memory, wanted, only, written=True, not_written=kube.failed)

    def _writing(self) -> None:
        """Saved before the run's first Kubernetes write (RunState.writing_at), cleared by its end:
        a standby lists the cluster again after it, even if this process dies before its end is
        saved. Raises if it cannot be saved, and then nothing is written."""
        # else set already: by this run, or by a run whose end was never saved
        if not self.state.writing_at:
            self.state.writing_at = time.time()
            try:
                self.targets.store.save_run(self.state)
            # the state's namespace does not exist yet (this run creates it): a
            except KubeError as exc:
                # state never saved is trusted by no replica (RunState.wrote_at)
                if exc.reason != "not_found":
                    raise
                self.state.writing_at = 0.0  # saved at the next write, once the namespace exists

    def _partial(self, result: RunOutcome) -> str:
        """What a partial run tells the user (the CLI prints it; the deadline also goes into the
        report)."""
        if self.deadline.expired and result.failures:
            result.errors.append(f"the run's deadline ({self.deadline.seconds:.0f} s) passed "
                                 f"before it finished")
        counts = []
        if result.failures:
            counts.append(f"{len(result.failures)} failed")
        if result.conflicts:
            counts.append(f"{len(result.conflicts)} conflicts")
        why = "; ".join(counts)
        late = " (the run's deadline passed)" if self.deadline.expired and result.failures else ""
        return (f"partial: {why}{late}; what was applied stays, the rest is tried again on the "
                f"next run")
