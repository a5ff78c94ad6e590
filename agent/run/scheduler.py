"""The long-running agent: scheduled syncs, the push webhook, health, readiness and metrics.

    APScheduler interval (jitter) --\\
                                     >-- trigger --> one worker thread: runner.sync_git, one at a time;
    POST /hooks/git (signed) -------/                 triggers during a run collapse into one more run

HTTP: GET /healthz (the worker is alive), GET /readyz (a sync succeeded, or the last good revision
is serving), GET /metrics (Prometheus text), POST /hooks/git (GitHub X-Hub-Signature-256, GitLab
X-Gitlab-Token, or a generic X-Signature-256: sha256=<HMAC of the body>). SIGTERM finishes the
current run, then stops.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from agent.errors import AgentError
from agent.reconcile import endpoints as cluster_endpoints
from agent.reconcile.kubeapi import KubeApi
from agent.reconcile.state import ConfigMapStore, FileStore, Store
from agent.run import lease, logs, metrics, webhook
from agent.run import orchestrator as runner
from agent.run import settings as config
from agent.sources.git import GitSource

log = logging.getLogger(__name__)


class Agent:
    def __init__(self, settings: config.Settings) -> None:
        self.settings = settings
        self.metrics = metrics.Metrics()
        self.source = GitSource(settings.repo, settings.cache, branch=settings.branch, ref=settings.ref,
                                path=settings.path, ssh_key=settings.ssh_key, known_hosts=settings.known_hosts,
                                insecure_ignore_host_key=settings.insecure_ignore_host_key,
                                token_file=settings.token_file, limits=settings.limits())
        self.api = (KubeApi.from_kubeconfig(str(settings.kubeconfig) if settings.kubeconfig else None)
                    if settings.kubeconfig or settings.in_cluster else None)
        self.store: Store = (ConfigMapStore(self.api, settings.agent_namespace) if self.api is not None
                             else FileStore(settings.state or settings.cache / "state.json"))
        self.secret = settings.webhook_secret_file.read_bytes().strip() if settings.webhook_secret_file else None
        self.elector = (lease.LeaderElector(self.api, settings.agent_namespace, name=settings.lease_name,
                                            duration=settings.lease_duration)
                        if self.api is not None and settings.leader_election else None)
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.ready = self.store.load().applied is not None  # serving the last good revision
        self.alive_at = time.monotonic()
        self.runs = 0
        self.scheduler = BackgroundScheduler()
        self.worker = threading.Thread(target=self._loop, name="sync", daemon=True)
        host, _, port = settings.listen.rpartition(":")
        self.httpd = webhook.server(self, host or "0.0.0.0", int(port))
        self.http_thread = threading.Thread(target=self.httpd.serve_forever, name="http", daemon=True)

    def is_ready(self) -> bool:
        """Ready after a good sync, or while a good revision serves (a standby reads the shared state)."""
        if not self.ready and self.elector is not None and not self.elector.leader:
            try:
                self.ready = self.store.load().applied is not None
            except AgentError:  # the probe must answer, not raise
                return False
        return self.ready

    def trigger(self, why: str) -> None:
        log.debug("sync requested by %s", why)
        self.wake.set()

    def _endpoints(self) -> Any:
        if self.settings.endpoints:
            return cluster_endpoints.load_endpoints(self.settings.endpoints)
        if self.settings.in_cluster_dns and self.api is not None:
            api = self.api
            return lambda state: cluster_endpoints.from_cluster(api, state)
        return None

    def run_once(self) -> runner.GitRun:
        started = time.monotonic()
        before = dict(self.api.reads + self.api.writes) if self.api else {}
        logs.revision.set("")
        run = runner.sync_git(self.source, store=self.store, kube_api=self.api, endpoints=self._endpoints(),
                              force=self.settings.force, push_notes=self.settings.push_notes,
                              resync_after=self.settings.resync_after, default_namespace=self.settings.namespace,
                              agent_namespace=self.settings.agent_namespace, run_id=uuid.uuid4().hex[:12])
        after = dict(self.api.reads + self.api.writes) if self.api else {}
        calls = {verb: after.get(verb, 0) - before.get(verb, 0) for verb in after}
        self.metrics.record(run, time.monotonic() - started, calls)
        if run.outcome in ("applied", "partial", "unchanged"):
            self.ready = True
        log.info("sync %s: %s", run.outcome, run.message or (run.result.outcome if run.result else ""))
        return run

    def _elect(self) -> None:
        """Renews (or tries to take) the Lease three times per lease duration."""
        assert self.elector is not None
        while not self.stopping.wait(self.settings.lease_duration / 3):
            was = self.elector.leader
            if self.elector.tick() and not was:
                self.trigger("leadership")

    def _loop(self) -> None:
        while not self.stopping.is_set():
            if not self.wake.wait(timeout=1):
                continue
            self.wake.clear()
            if self.stopping.is_set():
                break
            if self.elector is not None and not self.elector.leader:
                continue  # a standby stays ready but does not sync
            try:
                self.run_once()
            except Exception:  # the loop boundary: log, count, keep serving
                log.exception("sync run failed")
                self.metrics.runs.labels("error").inc()
                self.metrics.failures.inc()
            self.runs += 1

    def start(self) -> None:
        if self.elector is not None:
            self.elector.tick()
            threading.Thread(target=self._elect, name="lease", daemon=True).start()
        every = IntervalTrigger(seconds=self.settings.interval, jitter=self.settings.jitter)
        self.scheduler.add_job(self.trigger, every, args=["schedule"], coalesce=True, max_instances=1, id="sync")
        self.worker.start()
        self.http_thread.start()
        self.scheduler.start()
        self.trigger("start")
        log.info("bindy-agent running: %s (%s), every %.0f s, listening on %s%s", self.settings.repo,
                 self.settings.ref or self.settings.branch, self.settings.interval, self.settings.listen,
                 f", as {self.elector.identity}" if self.elector else "")

    def stop(self) -> None:
        """Finishes the run in progress (a run is never cut in half), then stops everything."""
        self.stopping.set()
        self.scheduler.shutdown(wait=False)
        self.wake.set()
        self.worker.join(timeout=300)
        if self.elector is not None:
            self.elector.release()
        self.httpd.shutdown()
        self.httpd.server_close()
        if self.api is not None:
            self.api.close()
