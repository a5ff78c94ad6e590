"""One run: a revision from its source to applied state, CR status and a commit report.

    sync_git:  remote head --(unchanged and recently reconciled: stop, no clone, no parse)-->
               fetch -> load -> validate --(invalid: report, apply and delete nothing)-->
               desired -> apply_revision (Kubernetes, DNS, status) -> state -> reports (git notes)

The steps themselves live in agent/reconcile/; this module only orders them and decides the
outcome. An invalid revision changes nothing; the last good one keeps serving, and the next valid
commit applies normally - the agent is never stuck on an old failure.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from agent.desired import hierarchy as desired
from agent.desired.hierarchy import Desired
from agent.errors import SourceError
from agent.load import loader
from agent.model import names, problems
from agent.model.key import ObjectKey
from agent.outcome import report, status
from agent.plan import build
from agent.plan import model as plan
from agent.reconcile import dns, kube
from agent.reconcile.endpoints import Endpoint
from agent.reconcile.kubeapi import KubeApi
from agent.reconcile.state import AgentState, Store
from agent.run import logs
from agent.sources.git import GitSource

log = logging.getLogger(__name__)
Endpoints = Mapping[str, Endpoint] | Callable[[Desired], Mapping[str, Endpoint]]


@dataclasses.dataclass
class RunResult:
    revision: str | None
    kube: kube.SyncOutcome | None
    dns: dns.DnsResult | None
    dry_run: bool

    @property
    def refused(self) -> list[str]:
        return [z.refused for z in self.dns.zones if z.refused] if self.dns else []

    @property
    def failures(self) -> list[str]:
        out: list[str] = []
        if self.kube and self.kube.result:
            out += [f"{k}: {m}" for k, m in sorted(self.kube.result.failed.items(), key=lambda kv: str(kv[0]))]
        if self.dns:
            for z in self.dns.zones:
                out += [f"{z.name}: {e}" for e in (z.primary_error, z.secondary_error) if e]
                out += [f"{z.name}: {c.server} does not answer the new {c.name} {c.rtype}"
                        for c in z.checks if not c.ok]
            out += self.dns.errors
        return out

    @property
    def outcome(self) -> str:
        return "rejected" if self.refused else "partial" if self.failures else "applied"


def apply_revision(state: Desired, *, revision: str | None, kube_api: KubeApi | None = None,
                   endpoints: Endpoints | None = None, agent_state: AgentState | None = None,
                   dry_run: bool = False, force: bool = False, install_crds: bool = True,
                   agent_namespace: str = names.DEFAULT_AGENT_NAMESPACE, rotate_rndc_keys: bool = False,
                   batch: int = 1000, verify_wait: float = 10) -> RunResult:
    """Kubernetes objects, then zones and records, then every CR's status. `agent_state` (DNS
    ownership) is updated in place; the caller saves it."""
    kube_outcome = None
    if kube_api is not None:
        kube_outcome = kube.sync(kube_api, state, revision=revision, dry_run=dry_run, install=install_crds,
                                 agent_namespace=agent_namespace, rotate_rndc_keys=rotate_rndc_keys)
    dns_result = None
    if endpoints is not None and agent_state is not None:
        if callable(endpoints):  # resolved after the Kubernetes step created the Services and Secrets
            endpoints = endpoints(state)
        dns_result = dns.sync(state, endpoints, agent_state, force=force, dry_run=dry_run, batch=batch,
                              verify_wait=verify_wait)
    if kube_api is not None and kube_outcome is not None and kube_outcome.result is not None:
        wanted = status.wanted(state, kube_outcome.result, revision=revision, dns=dns_result)
        kube.write_statuses(kube_api, wanted, kube_outcome.result, revision=revision)
    return RunResult(revision, kube_outcome, dns_result, dry_run)


@dataclasses.dataclass
class GitRun:
    run_id: str
    revision: str | None
    outcome: str  # applied / partial / rejected / unchanged / unreachable
    problems: list[problems.Problem] = dataclasses.field(default_factory=list)
    result: RunResult | None = None
    superseded: list[str] = dataclasses.field(default_factory=list)
    parsed: bool = False
    notes_pushed: bool | None = None
    plan: plan.Plan | None = None
    message: str = ""


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _change_results(the_plan: plan.Plan, run: RunResult) -> list[dict[str, Any]]:
    failed = {str(k): m for k, m in (run.kube.result.failed.items() if run.kube and run.kube.result else [])}
    zone_errors = {z.name: z.primary_error or z.refused for z in (run.dns.zones if run.dns else [])}
    out = []
    for change in the_plan.changes:
        item = change.as_dict()
        target = change.target
        if isinstance(target, plan.KubeTarget):
            error = failed.get(str(ObjectKey(target.kind, target.namespace, target.name)))
        elif isinstance(target, plan.RRsetTarget | plan.ZoneTarget):
            error = zone_errors.get(target.zone)
        else:  # pragma: no cover
            error = None
        item["result"] = "dry run" if run.dry_run else (f"failed: {error}" if error else "applied")
        out.append(item)
    return out


def sync_git(source: GitSource, *, store: Store, kube_api: KubeApi | None = None,
             endpoints: Endpoints | None = None, dry_run: bool = False, force: bool = False,
             push_notes: bool = True, resync_after: float = 600, default_namespace: str = names.DEFAULT_NAMESPACE,
             run_id: str | None = None, **apply_kwargs: Any) -> GitRun:
    run_id = run_id or uuid.uuid4().hex[:12]
    logs.run_id.set(run_id)  # every log line of this run carries it (and the revision, once known)
    started, started_at = time.monotonic(), _now()
    agent_state = store.load()
    try:
        head = source.remote_head()
    except SourceError as exc:
        return GitRun(run_id, None, "unreachable", message=str(exc))
    logs.revision.set(head)
    fresh = time.time() - agent_state.reconciled_at < resync_after
    if head == agent_state.seen and agent_state.outcome in ("applied", "rejected") and fresh and not dry_run:
        return GitRun(run_id, head, "unchanged",
                      message=f"{head[:12]} was already {agent_state.outcome}; nothing to do")
    try:
        snap = source.fetch()
    except SourceError as exc:
        return GitRun(run_id, head, "unreachable", message=str(exc))
    skipped = [] if dry_run else source.commits_between(agent_state.seen, snap.revision)
    manifest = loader.load_files(snap.files(), default_namespace=default_namespace, limits=snap.limits)
    found = list(manifest.problems)
    state = desired.build(manifest) if manifest.ok else None
    found += state.problems if state else []
    commit = dataclasses.asdict(snap.commit)
    git_run = GitRun(run_id, snap.revision, "rejected", found, superseded=skipped, parsed=True)
    reports: list[report.Report] = []
    if state is None or problems.errors(found):
        git_run.message = f"{len(problems.errors(found))} validation errors; nothing applied"
        if kube_api is not None and not dry_run:
            serving = f"; still serving {agent_state.applied[:12]}" if agent_state.applied else ""
            first = problems.sorted_problems(problems.errors(found))[0]
            namespace = apply_kwargs.get("agent_namespace", names.DEFAULT_AGENT_NAMESPACE)
            kube.mark_rejected(kube_api, agent_namespace=namespace,
                               message=f"revision {snap.revision[:12]} rejected: {git_run.message} (first: {first})"
                               f"{serving}")
        reports.append(report.Report(run_id, snap.revision, "rejected", commit, started_at,
                                     time.monotonic() - started, problems=found))
    else:
        run = apply_revision(state, revision=snap.revision, kube_api=kube_api, endpoints=endpoints,
                             agent_state=agent_state, dry_run=dry_run, force=force, **apply_kwargs)
        git_run.result, git_run.outcome = run, run.outcome
        the_plan = build.online(state, run.kube.plan_changes if run.kube else None, run.dns, revision=snap.revision)
        git_run.plan = the_plan
        checks = [{"server": c.server, "name": c.name, "type": c.rtype, "ok": c.ok}
                  for z in (run.dns.zones if run.dns else []) for c in z.checks]
        reports.append(report.Report(run_id, snap.revision, run.outcome, commit, started_at,
                                     time.monotonic() - started, _change_results(the_plan, run), found, checks,
                                     run.refused, run.failures))
    if dry_run:
        return git_run
    repo = source.repo()
    for sha in skipped:
        reports.append(report.Report(run_id, sha, "superseded", dataclasses.asdict(source.commit(repo, sha)),
                                     started_at, 0.0, superseded_by=snap.revision))
    agent_state.seen, agent_state.outcome = snap.revision, git_run.outcome
    if git_run.outcome != "rejected":
        agent_state.applied = snap.revision
        agent_state.reconciled_at = time.time()
    elif not problems.errors(found):  # refused by the safety gate: try again next time
        agent_state.outcome = "refused"
    else:
        agent_state.reconciled_at = time.time()
    store.save(agent_state)
    git_run.notes_pushed = _notes(source, reports, push=push_notes)
    return git_run


def _notes(source: GitSource, reports: list[report.Report], *, push: bool) -> bool | None:
    """Writes each report as a note; pushes them if asked. Failing to push is logged, not fatal."""
    try:
        source.fetch_notes()
    except SourceError as exc:
        log.warning("could not fetch existing notes: %s", exc)
    for item in reports:
        source.add_note(item.revision, report.to_note(item))
    if not push:
        return None
    try:
        source.push_notes()
        return True
    except SourceError as exc:
        log.warning("could not push the reports (refs/notes/bindy-agent): %s", exc)
        return False
