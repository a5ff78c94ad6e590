"""Prometheus metrics of the long-running agent, with the process, platform and GC collectors.

Every name and label is listed in README's "Monitoring" section; deploy/monitoring/ queries them
(tests/run/test_runtrace.py checks that each name it queries is served). Labels only take fixed
words (outcomes, triggers, steps, layers, call targets): never a name from the repository.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import prometheus_client

from agent.clients import statestore
from agent.model import calls
from agent.model.key import ObjectKey
from agent.plan import changes as plan_changes
from agent.run import orchestrator

# the steps of a run (RunOutcome.steps), initialised at 0 so that a dashboard shows every one
STEPS = ("fetch", "load", "validate", "desired", "observe", "plan", "gate", "apply_kubernetes",
         "apply_dns", "verify", "status", "report", "push")
TRIGGERS = ("start-up", "schedule", "webhook", "resync")
LAYERS = ("kubernetes", "zones", "records")
# the kind and why of a run that ended before it was decided (busy, unreachable, a bug)
NONE = "none"
CALL_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
STEP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class Metrics:
    """Every metric of the agent, in a registry of its own, and what updates them."""

    def __init__(self) -> None:
        self.registry = prometheus_client.CollectorRegistry()
        self._lock = threading.Lock()  # a scrape sees a run's metrics all updated or none of them
        r = self.registry
        self._run_metrics(r)
        self._call_metrics(r)
        self._drift_metrics(r)
        self._state_metrics(r)
        # process_resident_memory_bytes, open fds, CPU, ...
        prometheus_client.ProcessCollector(registry=r)
        prometheus_client.PlatformCollector(registry=r)  # python_info
        prometheus_client.GCCollector(registry=r)
        for step in STEPS:  # zero series, so a dashboard and a rule find every step before it ran
            self.steps.labels(step)
        for layer in LAYERS:
            self.drift_found.labels(layer)
            self.drift_repaired.labels(layer)
        self.deadlines.inc(0)
        self._stops = (calls.listen(self.call),
                       statestore.listen(lambda record: self.quarantined.labels(record).inc()))

    def _run_metrics(self, r: prometheus_client.CollectorRegistry) -> None:
        """Runs, their steps, and the revisions and changes they applied."""
        self.duration = prometheus_client.Histogram(
            "bindy_agent_sync_duration_seconds", "Duration of a sync run", registry=r,
            buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120))
        self.steps = prometheus_client.Histogram(
            "bindy_agent_step_duration_seconds", "Duration of each step of a run", ["step"],
            registry=r, buckets=STEP_BUCKETS)
        self.runs = prometheus_client.Counter(
            "bindy_agent_runs", "Sync runs by outcome, trigger (start-up, schedule, webhook, "
            "resync), kind and why (agent/run/decide.py)", ["outcome", "trigger", "kind", "why"],
            registry=r)
        self.revision = prometheus_client.Info(
            "bindy_agent_last_applied_revision", "Last applied Git revision", registry=r)
        self.revisions = prometheus_client.Info(
            "bindy_agent_revision", "The Git revision last applied and the newest one a run "
            "looked at", registry=r)
        self.applied_at = prometheus_client.Gauge(
            "bindy_agent_last_applied_timestamp_seconds", "When the last revision was applied",
            registry=r)
        self.changes = prometheus_client.Counter(
            "bindy_agent_changes_applied", "Changes applied by kind", ["kind"], registry=r)
        self.dns_updates = prometheus_client.Counter(
            "bindy_agent_dns_updates", "DNS UPDATE messages sent", registry=r)

    def _call_metrics(self, r: prometheus_client.CollectorRegistry) -> None:
        """The external calls: Git, Kubernetes, the zone API, DNS servers."""
        self.api_calls = prometheus_client.Counter(
            "bindy_agent_kube_api_calls", "Kubernetes API calls by verb", ["verb"], registry=r)
        self.calls = prometheus_client.Counter(
            "bindy_agent_external_calls", "Calls to Git, Kubernetes, the zone API and DNS "
            "servers, by target, operation and result (ok, error)",
            ["target", "operation", "result"], registry=r)
        self.call_seconds = prometheus_client.Histogram(
            "bindy_agent_external_call_duration_seconds", "Latency of the calls to Git, "
            "Kubernetes, the zone API and DNS servers", ["target", "operation"], registry=r,
            buckets=CALL_BUCKETS)

    def _drift_metrics(self, r: prometheus_client.CollectorRegistry) -> None:
        """Changes found in a world that had drifted, and written back."""
        self.drift = prometheus_client.Gauge(
            "bindy_agent_drift_changes", "Changes a sync would make, by layer (detect mode)",
            ["layer"], registry=r)
        self.drift_found = prometheus_client.Counter(
            "bindy_agent_drift_found", "Changes planned for a revision already applied (the world "
            "had drifted), by layer", ["layer"], registry=r)
        self.drift_repaired = prometheus_client.Counter(
            "bindy_agent_drift_repaired", "Drifted changes written back, by layer", ["layer"],
            registry=r)

    def _state_metrics(self, r: prometheus_client.CollectorRegistry) -> None:
        """What an operator alerts on, what the agent manages, its Events and webhook deliveries."""
        self.suspended = prometheus_client.Gauge(
            "bindy_agent_suspended", "1 while runs are suspended", registry=r)
        self.ready = prometheus_client.Gauge(
            "bindy_agent_ready", "1 while /readyz answers 200: the newest good revision serves",
            registry=r)
        self.leader = prometheus_client.Gauge(
            "bindy_agent_leader", "1 while this replica holds the Lease (or runs without leader "
            "election)", registry=r)
        self.rejected = prometheus_client.Gauge(
            "bindy_agent_head_rejected", "1 while the newest commit is one validation or the gate "
            "refused", registry=r)
        self.failures = prometheus_client.Gauge(
            "bindy_agent_consecutive_failures", "Runs in a row that did not fully apply",
            registry=r)
        self.deadlines = prometheus_client.Counter(
            "bindy_agent_deadline_exceeded", "Runs cut by their deadline", registry=r)
        self.notes_pending = prometheus_client.Gauge(
            "bindy_agent_notes_pending", "1 while commit reports wait in the local clone: the "
            "last push of the notes failed", registry=r)
        self.notes_failed = prometheus_client.Counter(
            "bindy_agent_notes_push_failures", "Runs whose commit reports could not be pushed",
            registry=r)
        self.managed = prometheus_client.Gauge(
            "bindy_agent_managed", "What the last applied revision manages: zones, rrsets (per "
            "zone, not per server), objects (Kubernetes)", ["what"], registry=r)
        self.events = prometheus_client.Counter(
            "bindy_agent_events", "Kubernetes Events emitted on clusters and providers, by reason",
            ["reason"], registry=r)
        self.follows = prometheus_client.Counter(
            "bindy_agent_standby_follows", "Runs of a standby that read the newest revision and "
            "the world and wrote nothing, by result (ok, error)", ["result"], registry=r)
        self.quarantined = prometheus_client.Counter(
            "bindy_agent_state_quarantined", "State records found unreadable and moved aside, by "
            "record (run, zone)", ["record"], registry=r)
        for record in ("run", "zone"):
            self.quarantined.labels(record)
        self.deliveries = prometheus_client.Counter(
            "bindy_agent_webhook_deliveries", "Webhook deliveries by result (accepted, ignored: "
            "not a push of a followed ref, refused, standby)", ["result"], registry=r)

    def stop_listening(self) -> None:
        """Hears no more calls or quarantined records (a test's metrics, once done)."""
        for stop in self._stops:
            stop()

    def call(self, target: str, operation: str, result: str, seconds: float) -> None:
        """One external call (agent/model/calls.py)."""
        self.calls.labels(target, operation, result).inc()
        self.call_seconds.labels(target, operation).observe(seconds)

    def watch(self, *, ready: Callable[[], bool], leader: Callable[[], bool]) -> None:
        """Readiness and leadership are read when /metrics is scraped, as /readyz reads them."""
        self.ready.set_function(lambda: 1.0 if ready() else 0.0)
        self.leader.set_function(lambda: 1.0 if leader() else 0.0)

    def exposition(self) -> bytes:
        """The text /metrics answers, never halfway through recording a run (runs_total counted but
        consecutive_failures not yet, say)."""
        with self._lock:
            return prometheus_client.generate_latest(self.registry)

    def record(self, run: orchestrator.RunOutcome, seconds: float, api_calls: Mapping[str, int], *,
               trigger: str = "schedule", applied_before: str | None = None) -> None:
        """One run. `applied_before`: the revision applied before it (its changes to that revision
        are drift)."""
        with self._lock:
            self._record(run, seconds, api_calls, trigger=trigger, applied_before=applied_before)

    def _record(self, run: orchestrator.RunOutcome, seconds: float, api_calls: Mapping[str, int], *,
                trigger: str, applied_before: str | None) -> None:
        self.duration.observe(seconds)
        decision = run.decision
        self.runs.labels(run.outcome, trigger, decision.kind if decision else NONE,
                         decision.why if decision else NONE).inc()
        for verb, count in api_calls.items():
            self.api_calls.labels(verb).inc(count)
        steps: Mapping[str, float] = getattr(run, "steps", None) or {}
        for step, took in steps.items():
            self.steps.labels(step).observe(took)
        # a run that reconciled the revision that serves while the head is rejected (it stays so)
        repair = run.rejected_head and run.outcome in ("applied", "partial")
        self._revisions(run, repair=repair, applied_before=applied_before)
        self._health(run, repair=repair)
        self._changes(run, applied_before=applied_before)

    def _revisions(self, run: orchestrator.RunOutcome, *, repair: bool,
                   applied_before: str | None) -> None:
        """The revision applied and seen, what it manages, whether the head is rejected."""
        if run.outcome in ("applied", "partial") and run.revision:
            self.revision.info({"revision": run.revision})
            self.applied_at.set(time.time())
            self._managed(run)
        if run.revision and not repair:
            applied = run.revision if run.outcome in ("applied", "partial") else applied_before
            self.revisions.info({"applied": applied or "", "seen": run.revision})
        if run.outcome in ("applied", "partial", "rejected", "unchanged"):
            self.rejected.set(1 if run.rejected_head else 0)
        self.suspended.set(1 if run.outcome == "suspended" else 0)

    def _health(self, run: orchestrator.RunOutcome, *, repair: bool) -> None:
        """What an operator alerts on: failures in a row, deadlines, commit reports not pushed."""
        if (run.outcome in ("applied", "in-sync", "suspended") and not repair
                or run.outcome == "unchanged" and not run.rejected_head):
            self.failures.set(0)  # a rejected head counts on every run until a good commit applies
        elif run.outcome != "drift":
            self.failures.inc()
        if run.deadline_hit:
            self.deadlines.inc()
        if run.notes_pushed is not None:
            self.notes_pending.set(0 if run.notes_pushed else 1)
            if not run.notes_pushed:
                self.notes_failed.inc()

    def _changes(self, run: orchestrator.RunOutcome, *, applied_before: str | None) -> None:
        """The changes a run found (drift) and applied, by layer and kind."""
        if run.outcome in ("drift", "in-sync") and run.plan is not None:
            for layer in LAYERS:
                found = sum(1 for c in run.plan.changes if c.target.layer == layer)
                self.drift.labels(layer).set(found)
        applied = run.outcome in ("applied", "partial")
        if applied and run.revision and run.revision == applied_before:
            self._drift(run)
        if run.kube is not None:
            for key in run.kube.applied + run.kube.deleted:
                self.changes.labels(key.kind).inc()
        if run.dns is not None:
            self.dns_updates.inc(run.dns.updates_sent)
            for zone in run.dns.zones:
                for change in zone.changes:
                    self.changes.labels(change.key[1]).inc()

    def failed(self, trigger: str) -> None:
        """A run that raised (a bug, caught at the loop boundary)."""
        with self._lock:
            self.runs.labels("error", trigger, NONE, NONE).inc()
            self.failures.inc()

    def _managed(self, run: orchestrator.RunOutcome) -> None:
        if run.kube is not None:
            self.managed.labels("objects").set(len(run.kube.inventory))
        zones = run.plan.zones if run.plan is not None else None
        if zones is not None:
            self.managed.labels("zones").set(sum(1 for z in zones if z.zone is not None))
            rrsets = sum(len(z.managed_after) for z in zones if z.zone is not None)
            self.managed.labels("rrsets").set(rrsets)

    def _drift(self, run: orchestrator.RunOutcome) -> None:
        """A run of the revision already applied that changed what someone else had changed: the
        world had drifted. The agent's own work in such a run is not drift (a new pod's zones, moved
        servers told, an interrupted run finished: plan/changes.py `drifted`)."""
        assert run.plan is not None
        failed_objects = set(run.kube.failed) if run.kube is not None else set()
        failed_zones = {z.name for z in run.dns.zones if not z.ok} if run.dns is not None else set()
        for change in run.plan.changes:
            if not plan_changes.drifted(change):
                continue
            target: Any = change.target
            self.drift_found.labels(target.layer).inc()
            failed = (ObjectKey(target.kind, target.namespace, target.name) in failed_objects
                      if target.layer == "kubernetes" else target.zone in failed_zones)
            if not failed:
                self.drift_repaired.labels(target.layer).inc()
