"""The long-running agent: scheduled syncs, the push webhook, health, readiness and metrics.

    APScheduler interval (jitter) ----> due at once ---------\\
    start, new leadership ------------> due at once -----------> one worker thread: orchestrator.run,
    POST /hooks/git (signed) ---------> at once, then at most    one run at a time; requests made before
                                        one run per min interval a run starts are all served by it

HTTP (agent/run/httpserver.py, agent/run/webhook.py): GET /healthz (the worker is alive), GET /readyz
(the newest good revision serves: one was applied and the newest commit is not rejected), GET /metrics
(Prometheus text), POST /hooks/git (GitHub X-Hub-Signature-256, GitLab X-Gitlab-Token, or a generic X-Signature-256:
sha256=<HMAC of the body>). SIGTERM finishes the current run, then stops.
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
from agent.gate import safety
from agent.outcome import signature
from agent.reconcile import endpoints as cluster_endpoints
from agent.reconcile.kubeapi import KubeApi
from agent.reconcile.statestore import ConfigMapStore, FileStore, Store
from agent.run import httpserver, lease, memory, metrics, revisions, throttle, webhook
from agent.run import orchestrator as runner
from agent.run import settings as config
from agent.sources.git import GitSource

log = logging.getLogger(__name__)


class Agent:
    def __init__(self, settings: config.Settings) -> None:
        self.settings = settings
        self.secret = webhook.read_secret(settings.webhook_secret_file) if settings.webhook_secret_file else None
        self.report_key = signature.read_key(settings.report_key_file) if settings.report_key_file else None
        self.metrics = metrics.Metrics()
        self.source = GitSource(settings.repo, settings.cache, branch=settings.branch, ref=settings.ref,
                                path=settings.path, ssh_key=settings.ssh_key, known_hosts=settings.known_hosts,
                                insecure_ignore_host_key=settings.insecure_ignore_host_key,
                                token_file=settings.token_file, limits=settings.limits())
        self.api = (KubeApi.from_kubeconfig(str(settings.kubeconfig) if settings.kubeconfig else None,
                                            namespaces=settings.policy_settings().kube_scope())
                    if settings.kubeconfig or settings.in_cluster else None)
        self.store: Store = (ConfigMapStore(self.api, settings.agent_namespace) if self.api is not None
                             else FileStore(settings.state or settings.cache / "state"))
        self.forge, self.alerts = settings.forge_settings(), settings.notify_settings()
        # the Lease gets a connection object of its own: its renewals are not counted as a run's API
        # calls, and a run's deadline does not cut them
        self.elector = (lease.LeaderElector(KubeApi(self.api.client, namespaces=self.api.namespaces),
                                            settings.agent_namespace, name=settings.lease_name,
                                            duration=settings.lease_duration)
                        if self.api is not None and settings.leader_election else None)
        self.triggers = throttle.Triggers(settings.webhook_min_interval)
        self.stopping = threading.Event()
        self.ready = runner.serving(self.store.load_run())  # serving the newest good revision
        self.runs = 0
        self.memory = memory.Memory()  # so that a run costs what changed (agent/run/memory.py)
        self.scheduler = BackgroundScheduler()
        self.worker = threading.Thread(target=self._loop, name="sync", daemon=True)
        self.httpd = self._http_server()
        self.http_stop = threading.Event()
        self.http_thread = threading.Thread(target=self.httpd.serve, args=(self.http_stop,), name="http", daemon=True)

    def _http_server(self) -> httpserver.Server:
        s = self.settings
        endpoints = webhook.App(alive=self.alive, ready=self.is_ready, registry=self.metrics.registry,
                                      secret=self.secret, deliveries=self.metrics.deliveries,
                                      on_delivery=lambda: self.trigger(throttle.WEBHOOK))
        host, _, port = s.listen.rpartition(":")
        limits = httpserver.HttpLimits(max_body=s.webhook_max_body, header_timeout=s.http_header_timeout,
                                   body_timeout=s.http_body_timeout, connection_limit=s.http_connection_limit)
        return httpserver.Server(endpoints, host=host.strip("[]") or "0.0.0.0", port=int(port), limits=limits)

    def alive(self) -> bool:
        return self.worker.is_alive() and not self.stopping.is_set()

    def is_ready(self) -> bool:
        """Ready while the newest good revision serves: a revision was applied and the newest commit
        is not a rejected one (a standby reads the shared state on every probe)."""
        if self.elector is not None and not self.elector.leader:
            try:
                self.ready = runner.serving(self.store.load_run())
            except AgentError:  # the probe must answer, not raise
                return False
        return self.ready

    def trigger(self, why: str) -> None:
        log.debug("sync requested by %s", why)
        self.triggers.request(why)

    def _endpoints(self) -> Any:
        return zone_endpoints(self.settings, self.api)

    def options(self) -> runner.Options:
        s = self.settings
        return runner.Options(policy=safety.Policy(force=s.force, allow_prune=s.allow_prune,
                                                   delete_threshold=s.delete_threshold_percent / 100),
                              repo_policy=s.policy_settings(),
                              agent_namespace=s.agent_namespace, default_namespace=s.namespace,
                              install_crds=s.install_crds, create_namespaces=s.create_namespaces,
                              deadline=s.deadline or None, mode=s.mode, suspend=s.suspend,
                              push_notes=s.push_notes, resync_after=s.resync_after,
                              transfer=s.transfer_limits())

    def run_once(self) -> runner.RunOutcome:
        started = time.monotonic()
        before = dict(self.api.reads + self.api.writes) if self.api else {}
        targets = runner.Targets(self.store, self.api, self._endpoints(), self.forge, self.alerts)
        source = revisions.GitRevisions(self.source, report_key=self.report_key)
        run = runner.run(source, targets, self.options(), run_id=uuid.uuid4().hex[:12], memory=self.memory)
        after = dict(self.api.reads + self.api.writes) if self.api else {}
        calls = {verb: after.get(verb, 0) - before.get(verb, 0) for verb in after}
        if run.outcome in ("applied", "partial") or (run.outcome == "unchanged" and not run.rejected_head):
            self.ready = True
        elif run.rejected_head:
            self.ready = False  # until a good commit applies
        self.metrics.record(run, time.monotonic() - started, calls)  # after: a counted run shows in /readyz
        why = "; ".join(run.failures[:3] + run.refusals[:3])
        log.info("sync %s: %s", run.outcome, f"{run.message} ({why})" if run.message and why else run.message or why)
        return run

    def _elect(self) -> None:
        """Renews (or tries to take) the Lease three times per lease duration."""
        assert self.elector is not None
        while not self.stopping.wait(self.settings.lease_duration / 3):
            was = self.elector.leader
            if self.elector.tick() and not was:
                self.memory.forget_world()  # another replica may have written meanwhile
                self.trigger("leadership")

    def _loop(self) -> None:
        while not self.stopping.is_set():
            why = self.triggers.take(timeout=1)
            if why is None or self.stopping.is_set():
                continue
            log.debug("sync run started by %s", why)
            if self.elector is not None and not self.elector.leader:
                continue  # a standby does not sync (it is ready while the leader serves the newest good revision)
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
        log.info("bindy-agent running: %s (%s), every %.0f s, listening on %s%s%s", self.settings.repo,
                 self.settings.ref or self.settings.branch, self.settings.interval, self.httpd.address,
                 "" if self.secret else " (webhook off: no --webhook-secret-file)",
                 f", as {self.elector.identity}" if self.elector else "")
        if self.report_key is None:
            log.warning("commit reports are not signed: no --report-key-file (BINDY_AGENT_REPORT_KEY_FILE); "
                        "`bindy-agent report` shows every report as unverified, since anyone who can push to "
                        "refs/notes/bindy-agent can write one")

    def stop(self) -> None:
        """Finishes the run in progress (a run is never cut in half), then stops everything."""
        self.stopping.set()
        self.scheduler.shutdown(wait=False)
        self.triggers.interrupt()
        self.worker.join(timeout=300)
        if self.elector is not None:
            self.elector.release()
        self.http_stop.set()
        self.httpd.wake()
        self.http_thread.join(timeout=10)
        if self.api is not None:
            self.api.close()


def zone_endpoints(settings: config.Settings, api: KubeApi | None) -> Any:
    """How a run reaches each instance: a fixed map (--endpoints), in-cluster Services (the zone API
    token goes only to managed instances in allowed namespaces), or None (no DNS step)."""
    if settings.endpoints:
        return cluster_endpoints.load_endpoints(settings.endpoints)
    if settings.in_cluster_dns and api is not None:
        token, audience = settings.zone_api_token_file, settings.zone_api_audience
        allowed = settings.policy_settings().namespace_allowed
        return lambda state: cluster_endpoints.from_cluster(
            api, state, token_file=token, audience=audience, send_token_to=lambda key: allowed(key.namespace or ""))
    return None
