"""The one function that runs a revision; the CLI, the scheduler and the webhook only decide when.

    lock -> head unchanged? (stop: no fetch, no parse, no writes)
         -> snapshot -> load -> desired --(invalid: mark live CRs, report "rejected")-->
         -> observe (Kubernetes, DNS) -> plan (whole revision) -> gate --(refused: same)-->
         -> apply (Kubernetes, zones and RRsets) -> outcome (statuses, state, reports)

Nothing is written before the gate has passed the whole plan: an invalid or refused revision
changes nothing but the marks on live CRs saying why, and the last good revision keeps serving.
Every network call is bounded by the run's deadline.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence

from agent.desired import hierarchy
from agent.desired.hierarchy import Desired
from agent.errors import AgentError
from agent.gate import overrides, safety, tenancy
from agent.gate import policy as repo_rules
from agent.load import loader
from agent.model import names, problems
from agent.model.key import ObjectKey
from agent.model.limits import Limits
from agent.model.ownership import RunState
from agent.outcome import forge, notify, report, status
from agent.plan import build
from agent.plan.model import Plan
from agent.plan.observed import KubeObserved, Observed
from agent.reconcile import axfr, dnsapply, dnsobserve, events, kubeapply, kubeobserve
from agent.reconcile.deadline import UNBOUNDED, Deadline
from agent.reconcile.endpoints import Endpoint
from agent.reconcile.kubeapi import KubeApi
from agent.reconcile.statestore import Store
from agent.run import collector, lock, logs
from agent.run.memory import Memory
from agent.run.revisions import RevisionSource, Snapshot

log = logging.getLogger(__name__)
SUSPENDED_BY_SETTING = ("suspended by the setting suspend (BINDY_AGENT_SUSPEND, --suspend or the config file): nothing "
                        "is read or written; set it to false to continue")
SUSPENDED_BY_MARK = (f"suspended by `bindy-agent suspend` (the annotation {names.SUSPEND_ANNOTATION}: \"true\" on the "
                     "agent's state ConfigMap, or the file `suspended` in its --state directory): nothing is read or "
                     "written; `bindy-agent resume` to continue")
Endpoints = Mapping[str, Endpoint] | Callable[[Desired], Mapping[str, Endpoint]]
# Progress of a long step: (verb, unit, done, total or None), e.g. ("observed", "zones", 100, 500).
Progress = Callable[[str, str, int, int | None], None]


def quiet(verb: str, unit: str, done: int, total: int | None) -> None:
    """The default Progress: nobody is watching."""


@dataclasses.dataclass
class Targets:
    """Where a run reads and writes: the ownership store, and optionally a cluster and DNS servers."""

    store: Store
    kube_api: KubeApi | None = None
    endpoints: Endpoints | None = None
    forge: forge.ForgeSettings | None = None  # commit statuses
    alerts: notify.NotifySettings | None = None  # failure / refusal / recovery alerts


@dataclasses.dataclass(frozen=True)
class Options:
    dry_run: bool = False
    policy: safety.Policy = safety.Policy()  # the safety gate's limits and overrides
    repo_policy: repo_rules.PolicySettings = repo_rules.PolicySettings()  # what a repository may ask for
    agent_namespace: str = names.DEFAULT_AGENT_NAMESPACE
    default_namespace: str = names.DEFAULT_NAMESPACE
    install_crds: bool = True
    create_namespaces: bool = False
    rotate_rndc_keys: bool = False
    batch: int = 1000
    verify_wait: float = 10
    deadline: float | None = names.DEFAULT_DEADLINE  # seconds a run may take; None: unbounded
    push_notes: bool = True
    mode: str = "apply"  # "detect": plan every run and report drift, write nothing to the world
    suspend: bool = False  # runs read and write nothing (also: the suspend mark on the state record)
    # an unchanged head is re-reconciled, and the cluster read in full, after this long
    resync_after: float = names.DEFAULT_RESYNC_AFTER
    sweep_after: float = 3600  # every zone is transferred and compared in full after this long
    lock_wait: float = names.DEFAULT_LOCK_WAIT
    transfer: axfr.TransferLimits = axfr.TransferLimits()  # octets and records one AXFR may bring in


@dataclasses.dataclass
class Validated:
    """A revision loaded, expanded and checked against the policy, as a whole and without a write."""

    manifest: loader.Manifest
    desired: Desired | None  # None: the files did not load

    @property
    def problems(self) -> list[problems.Problem]:
        return list(self.manifest.problems) + (self.desired.problems if self.desired is not None else [])

    @property
    def ok(self) -> bool:
        return self.desired is not None and not problems.errors(self.problems)


def validate(files: Sequence[loader.SourceFile], options: Options, *, limits: Limits,
             kube_api: KubeApi | None = None, memory: Memory | None = None,
             progress: Progress = quiet) -> Validated:
    """load -> desired -> policy. With a cluster, the policy sees the live labels of the Secrets the
    revision references (metadata only); without one, such references are only warned about."""
    with collector.long_lived():
        manifest = loader.load_files(files, default_namespace=options.default_namespace, limits=limits,
                                     cache=memory.files if memory else None,
                                     progress=lambda done, total: progress("loaded", "files", done, total))
        if not manifest.ok:
            return Validated(manifest, None)
        desired = hierarchy.build(manifest, memory.desired if memory else None)
    labels = (kubeobserve.secret_labels(kube_api, tenancy.secrets_to_observe(manifest))
              if kube_api is not None else None)
    desired.problems += repo_rules.check(manifest, desired, options.repo_policy, secret_labels=labels)
    desired.problems += overrides.check(manifest, options.policy.delete_threshold)  # the gate is the operator's
    return Validated(manifest, desired)


@dataclasses.dataclass
class Planned:
    """What a sync of a revision would do, decided before any write: the gated plan of the whole
    revision, and what it was planned from (the apply step works on the same observations)."""

    validated: Validated
    plan: Plan | None = None  # None: the revision is invalid, or the world could not be observed
    error: str | None = None  # why the world could not be observed
    observed: Observed = dataclasses.field(default_factory=Observed)
    endpoints: Mapping[str, Endpoint] | None = None
    kube_fast: bool = False  # the cluster was remembered, not read in full (see Memory)
    dns_fast: bool = False  # the zones were checked by their SOA serials only


def plan(snap: Snapshot, targets: Targets, options: Options, *, memory: Memory | None = None,
         deadline: Deadline = UNBOUNDED, progress: Progress = quiet) -> Planned:
    """The one way a revision is planned, for `plan --kubeconfig`, `sync --dry-run` and a sync alike:
    validate, observe everything the revision touches, plan it whole, gate it. Writes nothing."""
    validated = validate(snap.files, options, limits=snap.limits, kube_api=targets.kube_api, memory=memory,
                         progress=progress)
    planned = Planned(validated)
    if not validated.ok:
        return planned
    desired = validated.desired
    assert desired is not None
    try:
        _observe(planned, desired, targets, options, memory=memory, deadline=deadline, progress=progress)
    except AgentError as exc:
        planned.error = str(exc)
        return planned
    with collector.long_lived():
        planned.plan = build.build(desired, planned.observed, revision=snap.revision,
                                   agent=options.agent_namespace, rotate_rndc_keys=options.rotate_rndc_keys,
                                   trust_hash=planned.kube_fast,
                                   memo=memory.plans if memory is not None and planned.dns_fast else None,
                                   force=options.policy.force)
    planned.plan.refusals = safety.check(planned.plan, options.policy)
    return planned


def offline(validated: Validated) -> Planned:
    """`plan DIR` without a cluster: the revision planned against the empty world, where every
    object, zone and RRset is a create."""
    planned = Planned(validated)
    if validated.ok:
        assert validated.desired is not None
        with collector.long_lived():
            planned.plan = build.offline(validated.desired)
    return planned


def _observe(planned: Planned, desired: Desired, targets: Targets, options: Options, *, memory: Memory | None,
             deadline: Deadline, progress: Progress) -> None:
    """What the revision touches in the cluster and on the DNS servers; from memory where it is fresh."""
    observed, api, namespace = planned.observed, targets.kube_api, options.agent_namespace
    planned.kube_fast = memory is not None and memory.kube_fresh(options.resync_after, namespace)
    planned.dns_fast = memory is not None and memory.dns_fresh(options.sweep_after)
    if api is not None:
        observed.kube = (kubeobserve.recall(api, desired, memory.kube, agent_namespace=namespace)
                         if memory is not None and memory.kube is not None and planned.kube_fast
                         else kubeobserve.observe(api, desired, agent_namespace=namespace))
    endpoints = targets.endpoints
    planned.endpoints = endpoints(desired) if callable(endpoints) else endpoints
    if planned.endpoints is not None:
        focused = (memory is not None and planned.dns_fast and options.mode != "detect"
                   and memory.serials_fresh(options.resync_after))
        observed.dns = dnsobserve.observe(
            desired, targets.store, planned.endpoints, deadline=deadline,
            memory=memory.dns if memory and planned.dns_fast else None, refresh=not planned.dns_fast,
            focus=memory.dns.changed(desired) if memory is not None and focused else None,
            progress=lambda done, total: progress("observed", "zones", done, total), limits=options.transfer)


@dataclasses.dataclass
class RunOutcome:
    run_id: str
    revision: str | None
    outcome: str  # applied / partial / rejected / unchanged / unreachable / busy / planned
    problems: list[problems.Problem] = dataclasses.field(default_factory=list)
    plan: Plan | None = None
    kube: kubeapply.KubeResult | None = None
    dns: dnsapply.DnsResult | None = None
    superseded: list[str] = dataclasses.field(default_factory=list)
    parsed: bool = False
    notes_pushed: bool | None = None
    message: str = ""
    errors: list[str] = dataclasses.field(default_factory=list)  # steps that failed as a whole
    rejected_head: bool = False  # the newest commit is one the gate or validation refused (this run or before)

    @property
    def refusals(self) -> list[str]:
        return list(self.plan.refusals) if self.plan else []

    @property
    def failures(self) -> list[str]:
        out = list(self.errors)
        if self.kube is not None:
            out += [f"{k}: {m}" for k, m in sorted(self.kube.failed.items(), key=lambda kv: str(kv[0]))]
        if self.dns is not None:
            for z in self.dns.zones:
                out += [f"{z.name}: {e}" for e in (z.primary_error, z.secondary_error, z.refused) if e]
                out += [f"{z.name}: {c.server} does not answer the new {c.name} {c.rtype}"
                        for c in z.checks if not c.ok]
            out += self.dns.errors
        return out

    @property
    def conflicts(self) -> list[str]:
        return list(self.plan.conflicts) if self.plan else []


def serving(state: RunState) -> bool:
    """Whether the world serves the newest good revision: one was applied, and the newest commit a run
    looked at was not rejected (while it is, every change after it is blocked)."""
    return state.applied is not None and state.outcome not in ("rejected", "refused")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def run(source: RevisionSource, targets: Targets, options: Options, *, run_id: str | None = None,
        memory: Memory | None = None, progress: Progress = quiet) -> RunOutcome:
    """Runs the newest revision of `source` against `targets`, at most one run per source at a time.
    A long-running agent passes its `memory`, so that a run costs what changed (agent/run/memory.py);
    `progress` hears the counts of the long steps (files loaded, zones observed and applied)."""
    run_id = run_id or uuid.uuid4().hex[:12]
    logs.run_id.set(run_id)  # every log line of this run carries it (and the revision, once known)
    logs.revision.set("")
    one = _Run(source, targets, options, run_id, memory, progress)
    if targets.kube_api is not None:
        targets.kube_api.deadline = one.deadline  # every API call of this run is cut to its deadline
    source.bound(one.deadline.remaining)  # and every git command
    try:
        with lock.held(source.lock_path, wait=options.lock_wait):
            return one.go()
    except lock.Busy as exc:
        return RunOutcome(run_id, None, "busy", message=str(exc))
    finally:
        source.bound(None)
        if targets.kube_api is not None:
            targets.kube_api.deadline = UNBOUNDED


class _Run:
    def __init__(self, source: RevisionSource, targets: Targets, options: Options, run_id: str,
                 memory: Memory | None, progress: Progress = quiet) -> None:
        self.source, self.targets, self.options, self.run_id = source, targets, options, run_id
        self.memory, self.progress = memory, progress
        self.kube_fast = self.dns_fast = False  # the world is remembered, not read in full (see Memory)
        self.endpoints: Mapping[str, Endpoint] | None = None
        self.started, self.started_at = time.monotonic(), _now()
        self.deadline = Deadline(options.deadline)
        self.state = RunState()
        self.observed = Observed()

    # -- the steps ----------------------------------------------------------------------------
    def go(self) -> RunOutcome:
        try:
            self.state = self.targets.store.load_run()
            if self.options.suspend or self.state.suspended:
                why = SUSPENDED_BY_SETTING if self.options.suspend else SUSPENDED_BY_MARK
                return RunOutcome(self.run_id, None, "suspended", message=why)
            head = self.source.head()
            logs.revision.set(head or "")
            if head is not None and self._unchanged(head):
                return self._nothing_to_do(head)
            snap = self.source.snapshot()
        except AgentError as exc:
            return RunOutcome(self.run_id, None, "unreachable", message=str(exc))
        logs.revision.set(snap.revision)
        skipped = self.source.superseded(self.state.seen, snap.revision) if self.writes else []
        planned = plan(snap, self.targets, self.options, memory=self.memory, deadline=self.deadline,
                       progress=self.progress)
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
        self._apply(desired, result)
        return self._finish(snap, result)

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
                            result.message), result)
        return result

    def _unchanged(self, head: str) -> bool:
        if self.options.mode == "detect":
            return False  # drift arises in the world, not in Git: look every time
        if self.memory is not None and self.memory.blank:
            return False  # a long-running agent just started: reconcile now, not at the first push
        fresh = time.time() - self.state.reconciled_at < self.options.resync_after
        done = self.state.outcome in ("applied", "rejected")
        return head == self.state.seen and done and fresh and not self.options.dry_run

    def _apply(self, desired: Desired, result: RunOutcome) -> None:
        plan, options, api = result.plan, self.options, self.targets.kube_api
        assert plan is not None
        try:
            if api is not None and plan.kube is not None:
                kube_options = kubeapply.KubeApplyOptions(
                    options.agent_namespace, options.install_crds and not self.kube_fast, options.create_namespaces,
                    options.rotate_rndc_keys)
                assert self.observed.kube is not None
                result.kube = kubeapply.apply(api, desired, self.observed.kube, plan.kube, options=kube_options,
                                              deadline=self.deadline, progress=lambda done, total: self.progress(
                                                  "applied", "objects", done, total))
            endpoints = self.endpoints
            if plan.zones is not None and endpoints is not None:
                dns_options = dnsapply.DnsApplyOptions(options.batch, options.verify_wait, options.policy,
                                                       result.revision, transfer=options.transfer)
                result.dns = dnsapply.apply(plan.zones, endpoints, self.targets.store, options=dns_options,
                                            deadline=self.deadline, progress=lambda done, total: self.progress(
                                                "applied", "zones", done, total),
                                            focus=self.observed.dns.focus if self.observed.dns else None)
            if api is not None and result.kube is not None:
                only = status.affected(desired, plan, result.kube, result.dns) if self.kube_fast else None
                wanted = status.wanted(desired, result.kube, revision=result.revision, dns=result.dns, only=only,
                                       changed=status.changed_zones(plan))
                kubeapply.write_statuses(api, wanted, result.kube, revision=result.revision, deadline=self.deadline)
        except AgentError as exc:  # a whole step failed (CRDs, the store, the deadline): the rest waits
            log.warning("apply stopped: %s", exc)
            result.errors.append(str(exc))
        result.outcome = "partial" if result.failures or result.conflicts else "applied"
        if result.outcome == "partial":
            result.message = self._partial(result)
        if self.memory is not None:
            self._remember(desired, result)

    def _remember(self, desired: Desired, result: RunOutcome) -> None:
        """What this run left in the world, for the next run of a long-running agent to start from."""
        memory, now = self.memory, time.monotonic()
        assert memory is not None
        if result.errors:
            memory.forget_world()
            return
        if result.kube is not None and self.observed.kube is not None:
            live = {k: v for k, v in result.kube.live.items() if k not in result.kube.failed}
            memory.kube = KubeObserved(live, result.kube.inventory, set(self.observed.kube.namespaces),
                                       result.kube.inventory_text)
            memory.agent_namespace = self.options.agent_namespace
            memory.kube_at = memory.kube_at if self.kube_fast else now
        if result.dns is not None:
            wanted = {z.name: z.rrsets for z in desired.zones}
            for zone in (set(memory.dns.zones) | set(memory.dns.sources)) - wanted.keys():
                memory.dns.forget(zone)
            for zr in result.dns.zones:
                if not zr.ok:
                    memory.dns.forget(zr.name)
                    continue
                for primary, seen in zr.after.items():
                    if memory.dns.seen(zr.name, primary) is not seen:
                        memory.dns.remember(zr.name, primary, seen)
                if zr.conflicts or not all(c.ok for c in zr.checks):  # not confirmed: asked again next run
                    memory.dns.sources.pop(zr.name, None)
                else:
                    memory.dns.sources[zr.name] = wanted.get(zr.name)
            memory.dns_at = memory.dns_at if self.dns_fast else now
            dns = self.observed.dns
            memory.serials_at = memory.serials_at if dns is not None and dns.focus is not None else now

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
            events.mark_rejected(api, agent_namespace=self.options.agent_namespace, reason=reason,
                                 message=f"revision {snap.revision[:12]} rejected: {message} (first: {first})"
                                 f"{serving}")
        return self._finish(snap, result)

    def _report(self, snap: Snapshot, result: RunOutcome) -> report.Report:
        plan = result.plan
        changes = plan.changes if plan and not plan.refusals else []
        failed = {z.name: z.primary_error or z.refused for z in (result.dns.zones if result.dns else [])}
        kube_failed = {str(k): m for k, m in (result.kube.failed.items() if result.kube else [])}
        items = []
        for change in changes:
            item = change.as_dict()
            target = item["target"]
            if item["layer"] == "kubernetes":
                error = kube_failed.get(str(ObjectKey(target["kind"], target["namespace"], target["name"])))
            else:
                error = failed.get(target["zone"])
            item["result"] = f"failed: {error}" if error else "applied"
            items.append(item)
        checks = [{"server": c.server, "name": c.name, "type": c.rtype, "ok": c.ok}
                  for z in (result.dns.zones if result.dns else []) for c in z.checks]
        return report.Report(self.run_id, snap.revision, result.outcome, snap.commit, self.started_at,
                             time.monotonic() - self.started, items, result.problems, checks, result.refusals,
                             result.failures, conflicts=result.conflicts)

    def _next_state(self, snap: Snapshot, result: RunOutcome) -> RunState:
        old = self.state
        message = (result.message or f"{result.outcome} {snap.revision[:12]}")[:300]
        new = RunState(old.applied, snap.revision, result.outcome, time.time(), message=message)
        if result.outcome in ("applied", "partial"):
            new.applied = snap.revision
        elif result.refusals:
            new.outcome = "refused"  # looked at again on every run: --force or a new commit may allow it
        same = (new.applied, new.seen, new.outcome, new.message, old.notes_pending) == (
            old.applied, old.seen, old.outcome, old.message, False)
        if same and new.reconciled_at - old.reconciled_at < self.options.resync_after / 2:
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
        reports = [self._report(snap, result)]
        for sha in result.superseded:
            reports.append(report.Report(self.run_id, sha, "superseded", self.source.commit(sha), self.started_at, 0.0,
                                         superseded_by=snap.revision))
        result.notes_pushed = self._publish(reports)
        if result.notes_pushed is False:  # kept in the local clone: pushed by the next run, whatever it finds
            state.notes_pending = True
            self._save(state, result)
        doc = reports[0].as_dict()
        forge.finished(self.targets.forge, doc)
        notify.after_run(self.targets.alerts, doc, self.state.outcome, previous_revision=self.state.seen)
        return result
