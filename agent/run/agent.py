"""The long-running agent: scheduled syncs, the push webhook, health, readiness and metrics.

    APScheduler interval (jitter) ----> due at once ---------\\
    start, new leadership ------------> due at once -----------> one worker thread:
    POST /hooks/git (signed) ---------> at once, then at most    orchestrator.run, one run at a
                                        one run per min interval time; requests made before a run
                                                                 starts are all served by it

HTTP (agent/run/httpserver.py, agent/run/webhook.py): GET /healthz (the worker is alive), GET
/readyz (the newest good revision serves: one was applied and the newest commit is not rejected),
GET /metrics (Prometheus text), POST /hooks/git (GitHub X-Hub-Signature-256, GitLab X-Gitlab-Token,
Gitea X-Gitea-Signature, or a generic X-Signature-256: sha256=<HMAC of the body>; pushes of refs
other than the followed branch start nothing: agent/clients/forges/). SIGTERM finishes the current
run, then stops.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from agent.clients import statestore
from agent.clients.kubeapi import KubeApi
from agent.errors import AgentError
from agent.model import ownership
from agent.podready import watch as podwatch
from agent.run import (
    compose,
    follow,
    httpserver,
    leaderlabel,
    lease,
    memorize,
    memory,
    metrics,
    runtrace,
    throttle,
    webhook,
)
from agent.run import orchestrator as runner
from agent.run import settings as config

log = logging.getLogger("agent.run.scheduler")  # the lines operators already filter on
RETRY_FIRST = 5.0  # seconds before the first retry of a run that may succeed later


class Agent:
    def __init__(self, settings: config.Settings) -> None:
        self.settings = settings
        self.secret = (webhook.read_secret(settings.webhook_secret_file)
                       if settings.webhook_secret_file else None)
        self.metrics = metrics.Metrics()
        # source, cluster, state store, DNS endpoints, announcements and options: built as `sync`
        # builds them
        self.built = compose.build(compose.from_settings(settings))
        self.api, self.store = self.built.targets.kube_api, self.built.targets.store
        # the Lease gets a connection object of its own: its renewals are not counted as a run's API
        # calls, and a run's deadline does not cut them
        self.elector: lease.LeaderElector | None = None
        if self.api is not None and settings.leader_election:
            api = self.api
            self.elector = lease.LeaderElector(KubeApi(api.client, namespaces=api.namespaces),
                                               settings.agent_namespace, name=settings.lease_name,
                                               duration=settings.lease_duration,
                                               patience=self._patience)
        pod = os.environ.get("POD_NAME")  # set by deploy/deployment.yaml
        # the webhook Service selects the leader
        self.label = (leaderlabel.LeaderLabel(self.elector.api, settings.agent_namespace, pod)
                      if self.elector is not None and pod else None)
        self.triggers = throttle.Triggers(settings.webhook_min_interval)
        self.stopping = threading.Event()
        self.backoff = 0  # retries in a row (see _retry)
        try:  # a replica that may not lead yet leaves an unreadable record to the leader
            state = self.store.load_run(quarantine=self.elector is None)
        except statestore.StateUnreadable:
            state = ownership.RunState()
        self.ready = runner.serving(state)  # serving the newest good revision
        # start/end lines, metrics, Events
        self.trace = runtrace.RunTrace(self.metrics, api=self.api,
                                       agent_namespace=settings.agent_namespace,
                                       applied=state.applied, seen=state.seen)
        self.metrics.watch(ready=self.is_ready,
                           leader=lambda: self.elector is None or self.elector.leader)
        self.runs = 0
        self.warm_since: float | None = None  # when this replica first followed (or ran) a revision
        # the worker's last turn was a run as the leader (False: a follow as a standby)
        self.led = True
        self.terms = self.taken = 0  # times the Lease was taken; of them, taken over by the worker
        self.memory = memory.Memory()  # so that a run costs what changed (agent/run/memory.py)
        # a new BIND9 pod gets its zones at once; what the watch sees goes with its trigger, to the
        # worker
        self.pods = (podwatch.PodWatch(KubeApi(self.api.client, namespaces=self.api.namespaces),
                                       trigger=self.trigger, waiting=self.triggers.pods_waiting,
                                       leading=lambda: self.elector is None or self.elector.leader,
                                       longest=settings.interval, moved=self.triggers.pods_moved)
                     if self.api is not None else None)
        self.scheduler = BackgroundScheduler()
        self.worker = threading.Thread(target=self._loop, name="sync", daemon=True)
        self.httpd = self._http_server()
        self.http_stop = threading.Event()
        self.http_thread = threading.Thread(target=self.httpd.serve, args=(self.http_stop,),
                                            name="http", daemon=True)

    def _http_server(self) -> httpserver.Server:
        s = self.settings
        endpoints = webhook.App(alive=self.alive, ready=self.is_ready,
                                exposition=self.metrics.exposition,
                                secret=self.secret, deliveries=self.metrics.deliveries,
                                on_delivery=lambda: self.trigger(throttle.WEBHOOK),
                                leading=lambda: self.elector is None or self.elector.leader,
                                followed=webhook.followed(s.branch, s.ref))
        host, _, port = s.listen.rpartition(":")
        limits = httpserver.HttpLimits(max_body=s.webhook_max_body,
                                       header_timeout=s.http_header_timeout,
                                       body_timeout=s.http_body_timeout,
                                       connection_limit=s.http_connection_limit)
        return httpserver.Server(endpoints, host=host.strip("[]") or "0.0.0.0", port=int(port),
                                 limits=limits)

    def alive(self) -> bool:
        return self.worker.is_alive() and not self.stopping.is_set()

    def is_ready(self) -> bool:
        """Ready while the newest good revision serves: a revision was applied and the newest commit
        is not a rejected one (a standby reads the shared state on every probe)."""
        if self.elector is not None and not self.elector.leader:
            try:
                self.ready = runner.serving(self.store.load_run(quarantine=False))
            except AgentError:  # the probe must answer, not raise
                return False
        return self.ready

    def trigger(self, why: str) -> None:
        log.debug("sync requested by %s", why)
        self.triggers.request(why)

    def run_once(self, why: str = "schedule") -> runner.RunOutcome:
        run_id, trigger = self.trace.start(why)
        b = self.built
        run = runner.run(b.source, b.targets, b.options, run_id=run_id, memory=self.memory,
                         # pushes first: a reconcile yields to a webhook
                         yield_to=self.triggers.push_due,
                         # the branch moved: fetch at once
                         pushed=why in (throttle.WEBHOOK, "push"))
        # cut for a push: the push's run, then the reconcile it cut (agent/run/decide.py
        # `next_phase`)
        follow_up = memorize.run_ended(self.memory, why, run.outcome)
        if follow_up is not None:
            self.trigger(follow_up.value)
        if run.rejected_head:
            self.ready = False  # until a good commit applies
        elif run.outcome in ("applied", "partial", "unchanged"):
            self.ready = True
        self.trace.finish(run, trigger)  # after: a counted run shows in /readyz
        if run.outcome in ("applied", "partial", "unchanged"):
            self._warm()
        return run

    def _patience(self) -> float:
        """How long past its expiry this replica leaves another's Lease to a warm standby: none once
        it has followed the revisions for a lease duration, else a lease duration
        (agent/run/lease.py)."""
        duration = float(self.settings.lease_duration)
        warm = self.warm_since is not None and time.monotonic() - self.warm_since >= duration
        return 0.0 if warm else duration

    def _warm(self) -> None:
        if self.warm_since is None:
            self.warm_since = time.monotonic()

    def _elect(self) -> None:
        """Renews (or tries to take) the Lease three times per lease duration."""
        assert self.elector is not None
        while not self.stopping.wait(self.settings.lease_duration / 3):
            was = self.elector.leader
            if self._tick() and not was:
                self.terms += 1
                # the worker takes over before its first run as the leader
                self.trigger("leadership")

    def _take_over(self) -> None:
        """What this replica followed as a standby is checked, not thrown away
        (agent/run/follow.py); the zones' ownership records are read back, since the old leader
        wrote them."""
        try:
            quarantined = self.store.quarantined
            memorize.take_over(self.memory, applied_at=self.store.load_run().wrote_at)
            self.store.load_zones(refresh=True)
            # a record was unreadable: read the world again
            if self.store.quarantined != quarantined:
                memorize.forget_world(self.memory)
        except AgentError as exc:
            log.warning("taking over: could not read the zones' ownership records (%s): nothing "
                        "remembered is trusted", exc)
            memorize.take_over_failed(self.memory)

    def _tick(self) -> bool:
        """One renewal (or attempt to take the Lease); the pod's leader label follows the result."""
        assert self.elector is not None
        leader = self.elector.tick()
        if self.label is not None:
            self.label.follow(leader)
        return leader

    def _loop(self) -> None:
        while not self.stopping.is_set():
            why = self.triggers.take(timeout=1)
            if why is None or self.stopping.is_set():
                continue
            log.debug("sync run started by %s", why)
            # before deciding: a run, or a follow
            memorize.pods_seen(self.memory, *self.triggers.pods_seen())
            if self.elector is not None and not self.elector.leader:
                self.led = False
                # a standby does not sync; it follows, so that taking over costs a push
                self._follow()
                continue
            # on this thread: a follow in flight cannot undo it
            if not self.led or self.taken != self.terms:
                self.taken, self.led = self.terms, True
                self._take_over()
            try:
                self._retry(self.run_once(why))
            except Exception as exc:  # the loop boundary: log, count, keep serving
                log.exception("sync run failed")
                self.trace.failed(runtrace.TRIGGERS.get(why, why), exc)
            self.runs += 1

    def _follow(self) -> None:
        b = self.built
        try:
            done = follow.follow(b.source, b.targets, b.options, self.memory)
        except Exception:  # the loop boundary: log, keep serving
            log.exception("following the source as a standby failed")
            self.metrics.follows.labels("error").inc()
            return
        self.metrics.follows.labels("error" if done.problem else "ok").inc()
        if not done.problem:
            self._warm()
        if done.problem:
            log.info("standby: could not follow %s: %s", (done.revision or "the source")[:12],
                     done.problem)
        else:
            log.info("standby: followed %s (%d zones observed, nothing written)",
                     (done.revision or "")[:12], done.zones)

    def _retry(self, run: runner.RunOutcome | None) -> None:
        """A run that may succeed later (`retryable`: a pod not ready yet, a server not reachable)
        is run again soon: after RETRY_FIRST seconds, doubling on each retry up to the interval; a
        run that needs none resets the back-off."""
        if run is None or not getattr(run, "retryable", False):
            self.backoff = 0
            return
        delay = min(self.settings.interval, RETRY_FIRST * 2 ** self.backoff)
        # at the interval it stays: 2 ** n would overflow a float
        self.backoff += delay < self.settings.interval
        log.info("run %s was %s and may succeed later: running again in %.0f s", run.run_id,
                 run.outcome, delay)
        timer = threading.Timer(delay, self.trigger, ["retry"])
        timer.daemon = True
        timer.start()

    def start(self) -> None:
        every = IntervalTrigger(seconds=self.settings.interval, jitter=self.settings.jitter)
        self.scheduler.add_job(self.trigger, every, args=["schedule"], coalesce=True,
                               max_instances=1, id="sync")
        self.worker.start()
        self.http_thread.start()
        # after the server: the leader label sends webhooks to this pod
        if self.elector is not None:
            self._tick()
            threading.Thread(target=self._elect, name="lease", daemon=True).start()
        self.scheduler.start()
        if self.pods is not None:
            self.pods.start()
        self.trigger("start")
        log.info("bindy-agent running: %s (%s), every %.0f s, listening on %s%s%s",
                 self.settings.repo, self.settings.ref or self.settings.branch,
                 self.settings.interval, self.httpd.address,
                 "" if self.secret else " (webhook off: no --webhook-secret-file)",
                 f", as {self.elector.identity}" if self.elector else "")
        if self.settings.report_key_file is None:
            log.warning("commit reports are not signed: no --report-key-file "
                        "(BINDY_AGENT_REPORT_KEY_FILE); `bindy-agent report` shows every report as "
                        "unverified, since anyone who can push to refs/notes/bindy-agent can write "
                        "one")

    def stop(self) -> None:
        """Finishes the run in progress (a run is never cut in half), then stops everything."""
        self.stopping.set()
        self.scheduler.shutdown(wait=False)
        if self.pods is not None:
            self.pods.stop()
        self.triggers.interrupt()
        self.worker.join(timeout=300)
        if self.elector is not None:
            if self.label is not None:
                self.label.follow(False)  # webhooks stop coming here before the standby takes over
            self.elector.release()
        self.http_stop.set()
        self.httpd.wake()
        self.http_thread.join(timeout=10)
        if self.api is not None:
            self.api.close()

