"""Prometheus metrics of the long-running agent, with the process, platform and GC collectors."""

from __future__ import annotations

import time

import prometheus_client

from agent.run import orchestrator


class Metrics:
    def __init__(self) -> None:
        self.registry = prometheus_client.CollectorRegistry()
        r = self.registry
        self.duration = prometheus_client.Histogram("bindy_agent_sync_duration_seconds", "Duration of a sync run",
                                                    registry=r, buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120))
        self.runs = prometheus_client.Counter("bindy_agent_runs", "Sync runs by outcome", ["outcome"], registry=r)
        self.revision = prometheus_client.Info("bindy_agent_last_applied_revision", "Last applied Git revision",
                                               registry=r)
        self.applied_at = prometheus_client.Gauge("bindy_agent_last_applied_timestamp_seconds",
                                                  "When the last revision was applied", registry=r)
        self.changes = prometheus_client.Counter("bindy_agent_changes_applied", "Changes applied by kind",
                                                 ["kind"], registry=r)
        self.dns_updates = prometheus_client.Counter("bindy_agent_dns_updates", "DNS UPDATE messages sent",
                                                     registry=r)
        self.api_calls = prometheus_client.Counter("bindy_agent_kube_api_calls", "Kubernetes API calls by verb",
                                                   ["verb"], registry=r)
        self.drift = prometheus_client.Gauge("bindy_agent_drift_changes", "Changes a sync would make, by layer "
                                             "(detect mode)", ["layer"], registry=r)
        self.suspended = prometheus_client.Gauge("bindy_agent_suspended", "1 while runs are suspended", registry=r)
        self.failures = prometheus_client.Gauge("bindy_agent_consecutive_failures",
                                                "Runs in a row that did not fully apply", registry=r)
        self.deliveries = prometheus_client.Counter("bindy_agent_webhook_deliveries",
                                                    "Webhook deliveries by result (accepted, refused)", ["result"],
                                                    registry=r)
        prometheus_client.ProcessCollector(registry=r)  # process_resident_memory_bytes, open fds, CPU, ...
        prometheus_client.PlatformCollector(registry=r)  # python_info
        prometheus_client.GCCollector(registry=r)

    def record(self, run: orchestrator.RunOutcome, seconds: float, api_calls: dict[str, int]) -> None:
        self.duration.observe(seconds)
        self.runs.labels(run.outcome).inc()
        for verb, count in api_calls.items():
            self.api_calls.labels(verb).inc(count)
        if run.outcome in ("applied", "partial") and run.revision:
            self.revision.info({"revision": run.revision})
            self.applied_at.set(time.time())
        self.suspended.set(1 if run.outcome == "suspended" else 0)
        if run.outcome in ("drift", "in-sync") and run.plan is not None:
            for layer in ("kubernetes", "zones", "records"):
                self.drift.labels(layer).set(sum(1 for c in run.plan.changes if c.target.layer == layer))
        if run.outcome in ("applied", "in-sync", "suspended") or (run.outcome == "unchanged" and not run.rejected_head):
            self.failures.set(0)  # a rejected head counts on every run until a good commit applies
        elif run.outcome != "drift":
            self.failures.inc()
        if run.kube is not None:
            for key in run.kube.applied + run.kube.deleted:
                self.changes.labels(key.kind).inc()
        if run.dns is not None:
            self.dns_updates.inc(run.dns.updates_sent)
            for zone in run.dns.zones:
                for change in zone.changes:
                    self.changes.labels(change.key[1]).inc()
