"""What an operator sees of each run of the long-running agent: a start and an end log line, the
metrics (agent/run/metrics.py) and the Kubernetes Events (agent/outcome/runevents.py).

    run started by webhook (last seen 1a2b3c4d5e6f)                    info, runId, trigger
    sync applied: ... (fields: trigger, kind, why, outcome, seconds,   info, runId, revision
      steps, calls)

The trigger is what asked for the run: start-up (the agent started, or became the leader),
schedule, webhook; a scheduled run that reconciled again the revision it had already seen (the
resync of an unchanged head, which repairs drift) ends as trigger "resync". What the run was, and
why, is its decision's (agent/run/decide.py): kind and why in the end line, the runs metric and its
Event.
"""

from __future__ import annotations

import collections
import logging
import time
import uuid

from agent.clients.kubeapi import KubeApi
from agent.errors import AgentError
from agent.model import calls
from agent.outcome import runevents
from agent.run import logs, metrics
from agent.run import orchestrator as runner

log = logging.getLogger("agent.run.scheduler")  # the lines operators already filter on
TRIGGERS = {"start": "start-up", "leadership": "start-up", "schedule": "schedule",
            "webhook": "webhook", "retry": "retry", "resume": "resync", "push": "webhook",
            "pods": "pods"}  # agent/podready/watch.py: a new BIND9 pod waits for its zones
# looked at the revision again
RECONCILED = ("applied", "partial", "rejected", "unreachable", "error")


class RunTrace:
    def __init__(self, registry: metrics.Metrics, *, api: KubeApi | None, agent_namespace: str,
                 applied: str | None = None, seen: str | None = None,
                 events_every: float = runevents.DEFAULT_EVERY) -> None:
        self.metrics, self.api, self.agent_namespace = registry, api, agent_namespace
        # as the state store said at start, then as runs leave them
        self.applied, self.seen = applied, seen
        self.limiter = runevents.Limiter(events_every)
        self._started = 0.0
        self._calls: dict[tuple[str, str, str], int] = {}
        self._api_calls: dict[str, int] = {}

    def start(self, why: str) -> tuple[str, str]:
        """Logs the start line; returns (run id, trigger)."""
        run_id, trigger = uuid.uuid4().hex[:12], TRIGGERS.get(why, why)
        logs.run_id.set(run_id)
        logs.revision.set("")
        self._started, self._calls = time.monotonic(), calls.totals()
        self._api_calls = dict(self.api.reads + self.api.writes) if self.api is not None else {}
        last = f" (last seen {self.seen[:12]})" if self.seen else ""
        log.info("run started by %s%s", trigger, last, extra={"fields": {"trigger": trigger}})
        return run_id, trigger

    def trigger(self, run: runner.RunOutcome, trigger: str) -> str:
        """A scheduled run that reconciled the revision already seen is a resync."""
        again = run.revision is not None and run.revision == self.seen and run.outcome in RECONCILED
        return "resync" if trigger == "schedule" and again else trigger

    def finish(self, run: runner.RunOutcome, trigger: str) -> None:
        """The end line, the metrics and the Events of a run that returned."""
        seconds = time.monotonic() - self._started
        trigger = self.trigger(run, trigger)
        after = dict(self.api.reads + self.api.writes) if self.api is not None else {}
        api_calls = {verb: after.get(verb, 0) - self._api_calls.get(verb, 0) for verb in after}
        applied_before = self.applied
        self.metrics.record(run, seconds, api_calls, trigger=trigger, applied_before=applied_before)
        steps: dict[str, float] = dict(getattr(run, "steps", None) or {})
        why = "; ".join(run.failures[:3] + run.refusals[:3])
        changes = len(run.plan.changes) if run.plan is not None and not run.plan.refusals else 0
        kind, because = (run.decision.kind.value,
                         run.decision.why.value) if run.decision else (metrics.NONE,) * 2
        fields = {"trigger": trigger, "kind": kind, "why": because, "outcome": run.outcome,
                  "seconds": round(seconds, 3), "steps": {k: round(v, 3) for k, v in steps.items()},
                  "calls": self._calls_since(), "changes": changes}
        said = f"{run.message} ({why})" if run.message and why else run.message or why
        if not said and run.revision:  # an applied run says nothing more: which revision, how much
            said = f"{run.revision[:12]}, {changes} changes in {seconds:.1f} s"
        log.info("sync %s: %s", run.outcome, said, extra={"fields": fields})
        if run.outcome in ("applied", "partial") and run.revision:
            self.applied = run.revision
        if run.revision and run.outcome not in ("busy", "suspended"):
            self.seen = run.revision
        event = runevents.decide(outcome=run.outcome, revision=run.revision, message=run.message,
                                 changes=changes, failures=run.failures, refusals=run.refusals,
                                 repeat=run.revision is not None and run.revision == applied_before,
                                 ran=run.decision.told if run.decision else "")
        self._emit(event)

    def failed(self, trigger: str, exc: BaseException) -> None:
        """A run that raised (a bug, caught at the loop boundary): counted, and told on the
        clusters."""
        self.metrics.failed(trigger)
        log.info("sync error: %s", type(exc).__name__, extra={"fields": {
            "trigger": trigger, "outcome": "error",
            "seconds": round(time.monotonic() - self._started, 3)}})
        self._emit(runevents.decide(outcome="error", revision=self.seen, message=f"the run failed: "
                                    f"{type(exc).__name__} (a bug; the agent's log has the "
                                    f"traceback)", changes=0))

    def _calls_since(self) -> dict[str, int]:
        """This run's external calls by target (the agent runs one run at a time)."""
        out: collections.Counter[str] = collections.Counter()
        for (target, _op, _result), count in calls.totals().items():
            out[target] += count - self._calls.get((target, _op, _result), 0)
        return {target: n for target, n in sorted(out.items()) if n}

    def _emit(self, event: runevents.RunEvent | None) -> None:
        if event is None or self.api is None:
            return
        try:
            emitted = runevents.emit(self.api, event, agent_namespace=self.agent_namespace,
                                     limiter=self.limiter)
        except AgentError as exc:  # an Event is worth a warning, never the sync loop
            log.warning("%s Event not emitted: %s", event.reason, exc)
            return
        if emitted:
            self.metrics.events.labels(event.reason).inc(emitted)
