"""What an operator sees of the agent without a profiler: every external call counted and timed, each
run's start and end lines with its trigger and step times, the metrics a dashboard and the alerts
read, the Events on the clusters a run served, and deploy/monitoring/ (which queries only what
/metrics serves, and whose rules promtool accepts)."""

from __future__ import annotations

import json
import logging
import pathlib
import re
import subprocess
import sys
from typing import Any

import prometheus_client
import pytest
import yaml

from agent.errors import KubeError
from agent.model import calls
from agent.model.key import ObjectKey
from agent.model.ownership import RunState
from agent.outcome import runevents
from agent.plan import build
from agent.plan import changes as plan_model
from agent.run import decide, logs, metrics, orchestrator, runtrace, settings
from agent.run.decision import Head, Now, Phase, Standing
from agent.run.planner import Options
from tests.conftest import ROOT
from tests.support.monitoring import (
    MONITORING,
    _value,
    promtool,
    queried_names,
    rules,
    served_names,
)


# -- the tally of external calls --------------------------------------------------------------
def test_a_measured_call_is_counted_timed_and_told_to_listeners_with_its_result() -> None:
    heard: list[tuple[str, str, str, float]] = []
    stop = calls.listen(lambda *call: heard.append(call))

    @calls.measured("zone_api", op=lambda method, path: method)
    def request(method: str, path: str) -> str:
        if path == "/bad":
            raise OSError("refused")
        return "ok"

    before = calls.totals()
    try:
        assert request("POST", "/zones") == "ok"
        with pytest.raises(OSError):
            request("DELETE", "/bad")
    finally:
        stop()
    request("GET", "/zones")  # nobody listens any more: still counted
    assert [(t, o, r) for t, o, r, _ in heard] == [("zone_api", "POST", "ok"), ("zone_api", "DELETE", "error")]
    assert all(0 <= seconds < 1 for *_, seconds in heard)
    after = calls.totals()
    assert {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)} == {
        ("zone_api", "POST", "ok"): 1, ("zone_api", "DELETE", "error"): 1, ("zone_api", "GET", "ok"): 1}


@pytest.mark.parametrize(("method", "path", "content_type", "verb"), [
    ("GET", "/api/v1/namespaces/dns/configmaps/state", "", "get"),
    ("GET", "/api/v1/namespaces/dns/configmaps", "", "list"),
    ("GET", "/api/v1/namespaces", "", "list"),
    ("GET", "/apis/bindy.firestoned.io/v1beta1/clusterbind9providers", "", "list"),
    ("GET", "/apis/bindy.firestoned.io/v1beta1/namespaces/dns/bind9clusters/main", "", "get"),
    ("PATCH", "/apis/apps/v1/namespaces/dns/deployments/a", "application/apply-patch+yaml", "apply"),
    ("PATCH", "/api/v1/namespaces/dns/configmaps/a", "application/merge-patch+json", "patch"),
    ("POST", "/api/v1/namespaces/dns/events", "application/json", "create"),
    ("PUT", "/api/v1/namespaces/dns/configmaps/a", "application/json", "update"),
    ("DELETE", "/api/v1/namespaces/dns/configmaps/a", "application/json", "delete"),
])
def test_kubernetes_calls_are_named_by_the_verbs_of_the_audit_log(method: str, path: str, content_type: str,
                                                                    verb: str) -> None:
    assert calls.kube_verb(method, path, content_type=content_type) == verb


def test_the_real_clients_are_measured() -> None:
    """Each I/O client marks its calls: the wrapper is there (functools.wraps keeps __wrapped__)."""
    from agent.clients import axfr, dnsquery, kubeapi, rfc2136, zoneapi
    from agent.sources import git

    for fn in (axfr.transfer, rfc2136.send, dnsquery.serials, dnsquery.query_many, kubeapi.KubeApi._call,
               zoneapi.ZoneApi._request, git.GitSource._git):
        assert hasattr(fn, "__wrapped__"), fn


# -- metrics ----------------------------------------------------------------------------------


def _change(layer: str, name: str = "www", reason: str | None = None) -> plan_model.Change:
    target: plan_model.Target = (plan_model.RRsetTarget("example.com.", f"{name}.example.com.", "A")
                                 if layer == "records" else plan_model.ZoneTarget("example.com.", name, "primary")
                                 if layer == "zones" else plan_model.KubeTarget("ConfigMap", "dns", name))
    if reason is None:
        reason = "drift: edited by hand" if layer == "kubernetes" else ""
    return plan_model.Change(plan_model.Action.UPDATE, target, reason=reason)


def _run(outcome: str, revision: str | None = "a" * 40, **kw: Any) -> orchestrator.RunOutcome:
    return orchestrator.RunOutcome("run1", revision, outcome, **kw)


def test_a_run_is_counted_by_outcome_and_trigger_with_each_steps_duration() -> None:
    m = metrics.Metrics()
    run = _run("applied", plan=plan_model.Plan([_change("records")]))
    run.steps = {"fetch": 0.2, "load": 0.01, "apply_dns": 1.5}
    m.record(run, 2.0, {}, trigger="webhook")
    assert _value(m, "bindy_agent_runs_total", outcome="applied", trigger="webhook") == 1
    assert _value(m, "bindy_agent_step_duration_seconds_count", step="apply_dns") == 1
    assert _value(m, "bindy_agent_step_duration_seconds_sum", step="fetch") == pytest.approx(0.2)
    assert _value(m, "bindy_agent_step_duration_seconds_count", step="verify") == 0  # every step has a series
    assert _value(m, "bindy_agent_revision_info", applied="a" * 40, seen="a" * 40) == 1
    assert _value(m, "bindy_agent_runs_total", kind="none", why="none") == 1  # not decided (a direct call)
    decided = _run("applied", decision=decide.decide(RunState(), Phase(Standing.WARM, keeps=True), Head("b" * 40),
                                                     Options(), Now(0.0, 0.0)))
    m.record(decided, 1.0, {}, trigger="webhook")
    assert _value(m, "bindy_agent_runs_total", outcome="applied", trigger="webhook", kind="reconcile",
                  why="new-head") == 1
    m.failed("schedule")
    assert _value(m, "bindy_agent_runs_total", outcome="error", trigger="schedule", kind="none", why="none") == 1


def test_external_calls_become_counters_and_latency_histograms_by_target_operation_and_result() -> None:
    m = metrics.Metrics()
    try:
        calls.record("dns_update", "update", "ok", 0.004)
        calls.record("dns_update", "update", "error", 2.0)
        calls.record("git", "ls-remote", "ok", 0.03)
    finally:
        m.stop_listening()
    assert _value(m, "bindy_agent_external_calls_total", target="dns_update", operation="update", result="ok") == 1
    assert _value(m, "bindy_agent_external_calls_total", target="dns_update", operation="update",
                  result="error") == 1
    assert _value(m, "bindy_agent_external_call_duration_seconds_count", target="dns_update",
                  operation="update") == 2
    assert _value(m, "bindy_agent_external_call_duration_seconds_bucket", target="git", operation="ls-remote",
                  le="0.05") == 1


def test_changes_to_the_revision_already_applied_are_drift_found_and_repaired_except_where_they_failed() -> None:
    m = metrics.Metrics()
    rev = "b" * 40
    m.record(_run("applied", rev, plan=plan_model.Plan([_change("records")])), 1, {}, applied_before=None)
    assert _value(m, "bindy_agent_drift_found_total", layer="records") == 0  # a new revision is no drift
    from agent.reconcile.kubeapply import KubeResult
    kube = KubeResult([], failed={ObjectKey("ConfigMap", "dns", "bad"): "refused"})
    own = [_change("zones", "dns/dns-primary-0@10.1.0.9", build.NEW_POD),  # the agent's own work: no drift
           _change("records", "new", build.WITH_ZONE), _change("zones", "dns/dns-primary-0", build.RENOTIFY),
           _change("kubernetes", "upgraded", "")]
    repaired = _run("partial", rev, plan=plan_model.Plan([_change("records"), _change("kubernetes", "good"),
                                                          _change("kubernetes", "bad"), *own]), kube=kube)
    m.record(repaired, 1, {}, trigger="resync", applied_before=rev)
    assert _value(m, "bindy_agent_drift_found_total", layer="records") == 1
    assert _value(m, "bindy_agent_drift_found_total", layer="kubernetes") == 2
    assert _value(m, "bindy_agent_drift_found_total", layer="zones") == 0
    assert _value(m, "bindy_agent_drift_repaired_total", layer="records") == 1
    assert _value(m, "bindy_agent_drift_repaired_total", layer="kubernetes") == 1  # not the one that failed
    gone = _change("zones", "dns/dns-primary-0@10.1.0.7", build.ZONE_GONE)  # a zone deleted on a server by hand
    m.record(_run("applied", rev, plan=plan_model.Plan([gone])), 1, {}, trigger="resync", applied_before=rev)
    assert _value(m, "bindy_agent_drift_repaired_total", layer="zones") == 1


def test_the_gauges_an_operator_alerts_on() -> None:
    m = metrics.Metrics()
    ready, leader = [True], [False]
    m.watch(ready=lambda: ready[0], leader=lambda: leader[0])
    assert (_value(m, "bindy_agent_ready"), _value(m, "bindy_agent_leader")) == (1, 0)
    ready[0], leader[0] = False, True  # read at every scrape, as /readyz reads it
    assert (_value(m, "bindy_agent_ready"), _value(m, "bindy_agent_leader")) == (0, 1)

    m.record(_run("rejected", rejected_head=True, notes_pushed=False), 1, {})
    assert _value(m, "bindy_agent_head_rejected") == 1
    assert _value(m, "bindy_agent_notes_pending") == 1
    assert _value(m, "bindy_agent_notes_push_failures_total") == 1
    assert _value(m, "bindy_agent_consecutive_failures") == 1
    m.record(_run("partial", errors=["the run's deadline (300 s) passed before it finished"], notes_pushed=True, deadline_hit=True),
             300, {})
    assert _value(m, "bindy_agent_deadline_exceeded_total") == 1
    assert (_value(m, "bindy_agent_head_rejected"), _value(m, "bindy_agent_notes_pending")) == (0, 0)
    assert _value(m, "bindy_agent_last_applied_timestamp_seconds") > 0


# -- logs -------------------------------------------------------------------------------------
def _record(msg: str, fields: dict[str, Any]) -> logging.LogRecord:
    record = logging.LogRecord("agent.run.scheduler", logging.INFO, __file__, 1, msg, (), None)
    record.fields = fields
    return record


def test_a_lines_fields_are_top_level_json_and_key_value_text() -> None:
    fields = {"trigger": "webhook", "seconds": 1.23456, "steps": {"fetch": 0.1, "load": 0.02}}
    doc = json.loads(logs.JsonFormatter().format(_record("sync applied: ok", fields)))
    assert (doc["msg"], doc["trigger"], doc["steps"]) == ("sync applied: ok", "webhook", {"fetch": 0.1, "load": 0.02})
    text = logs.TextFormatter().format(_record("sync applied: ok", {**fields, "note": "a\x1b[31mb"}))
    assert text.endswith("trigger=webhook seconds=1.235 steps=fetch:0.1,load:0.02 note=a\\x1b[31mb"), text
    assert "\x1b" not in text  # repository text cannot drive the terminal


def test_the_log_level_setting_and_its_refusal() -> None:
    assert settings.Settings(repo="https://example.com/dns.git", log_level="debug").log_level == "debug"
    assert logs.level("warning") == logging.WARNING
    with pytest.raises(Exception, match="log_level"):
        settings.Settings(repo="https://example.com/dns.git", log_level="loud")


def test_run_accepts_log_level_and_the_environment_variable(tmp_path: pathlib.Path) -> None:
    def shown(*argv: str, env: dict[str, str] | None = None) -> Any:
        done = subprocess.run([sys.executable, "-m", "agent", "run", "--repo", "https://example.com/dns.git",
                               "--print-config", *argv], capture_output=True, text=True, cwd=ROOT,
                              env={"PATH": "/usr/bin:/bin", **(env or {})}, check=False)
        return done.returncode, (json.loads(done.stdout) if done.stdout else done.stderr)

    assert shown("--log-level", "debug")[1]["log_level"] == "debug"
    assert shown(env={"BINDY_AGENT_LOG_LEVEL": "warning"})[1]["log_level"] == "warning"


class _Api:
    """A KubeApi stand-in: lists the agent's clusters and providers, keeps the Events created."""

    def __init__(self, *, fail: bool = False) -> None:
        self.created: list[dict[str, Any]] = []
        self.fail = fail
        self.reads: dict[str, int] = {}
        self.writes: dict[str, int] = {}

    def list(self, kind: str, *, label_selector: str | None = None) -> list[dict[str, Any]]:
        if self.fail:
            raise KubeError("GET: cannot reach the API server", reason="unreachable")
        if kind == "Bind9Cluster":
            return [{"kind": kind, "apiVersion": "bindy.firestoned.io/v1beta1",
                     "metadata": {"name": "main", "namespace": "dns", "uid": "u1"}}]
        return [{"kind": kind, "apiVersion": "bindy.firestoned.io/v1beta1", "metadata": {"name": "global", "uid": "u2"}}]

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        self.created.append(body)
        return body


def test_runs_that_write_or_fail_leave_an_event_on_each_cluster_and_provider_at_most_once_per_interval(
        caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    limiter = runevents.Limiter(600, clock=lambda: now[0])
    api = _Api()
    event = runevents.decide(outcome="rejected", revision="c" * 40, message="2 validation errors; nothing applied",
                             changes=0)
    assert event == runevents.RunEvent("Warning", "ValidationFailed",
                                       f"revision {'c' * 12} rejected: 2 validation errors; nothing applied")
    told = runevents.decide(outcome="applied", revision="c" * 40, message="", changes=2, ran="reconcile: resync")
    assert told is not None and told.message == f"applied revision {'c' * 12}: 2 changes (reconcile: resync)"
    assert runevents.emit(api, event, agent_namespace="bindy-agent", limiter=limiter) == 2  # type: ignore[arg-type]
    assert [(e["involvedObject"]["kind"], e["involvedObject"]["name"], e["reason"], e["type"])
            for e in api.created] == [("Bind9Cluster", "main", "ValidationFailed", "Warning"),
                                      ("ClusterBind9Provider", "global", "ValidationFailed", "Warning")]
    now[0] = 599  # the same rejection on the next runs: told once
    assert runevents.emit(api, event, agent_namespace="bindy-agent", limiter=limiter) == 0  # type: ignore[arg-type]
    now[0] = 600
    assert runevents.emit(api, event, agent_namespace="bindy-agent", limiter=limiter) == 2  # type: ignore[arg-type]
    failing = _Api(fail=True)
    with caplog.at_level(logging.WARNING):
        assert runevents.emit(failing, event, agent_namespace="a", limiter=limiter) == 0  # type: ignore[arg-type]
    assert "cannot be listed" in caplog.text


@pytest.mark.parametrize(("kw", "expected"), [
    ({"outcome": "applied", "changes": 3}, ("Normal", "ReconciliationSucceeded", "applied revision dddddddddddd: 3 changes")),
    ({"outcome": "applied", "changes": 1, "repeat": True},
     ("Normal", "ReconciliationSucceeded", "repaired drift on revision dddddddddddd: 1 changes")),
    ({"outcome": "applied", "changes": 0}, None),
    ({"outcome": "unchanged", "changes": 0}, None),
    ({"outcome": "suspended", "changes": 0}, None),
    ({"outcome": "partial", "changes": 2, "message": "partial: 1 failed", "failures": ["a.org.: refused"]},
     ("Warning", "ReconciliationFailed", "revision dddddddddddd: partial: 1 failed (first: a.org.: refused)")),
    ({"outcome": "rejected", "changes": 0, "message": "refused", "refusals": ["mass delete"]},
     ("Warning", "PlanRefused", "revision dddddddddddd rejected: refused")),
    ({"outcome": "unreachable", "changes": 0, "message": "git ls-remote: no answer"},
     ("Warning", "ReconciliationFailed", "revision dddddddddddd: git ls-remote: no answer")),
])
def test_which_runs_get_an_event(kw: dict[str, Any], expected: tuple[str, str, str] | None) -> None:
    event = runevents.decide(revision="d" * 40, **{"message": "", **kw})
    assert (None if event is None else (event.type, event.reason, event.message)) == expected


def test_a_run_has_a_start_and_an_end_line_and_a_scheduled_run_of_the_seen_revision_is_a_resync(
        caplog: pytest.LogCaptureFixture) -> None:
    m = metrics.Metrics()
    trace = runtrace.RunTrace(m, api=None, agent_namespace="bindy-agent", applied="e" * 40, seen="e" * 40)
    with caplog.at_level(logging.INFO, logger="agent"):
        run_id, trigger = trace.start("start")
        assert trigger == "start-up" and logs.run_id.get() == run_id
        start_up = decide.decide(RunState("e" * 40, "e" * 40, "applied"), Phase(Standing.COLD, keeps=True),
                                 Head("e" * 40), Options(), Now(0.0, 0.0))
        run = _run("applied", "e" * 40, plan=plan_model.Plan([_change("records")]), decision=start_up)
        run.steps = {"fetch": 0.5}  # type: ignore[attr-defined]
        trace.finish(run, trigger)
        _, trigger = trace.start("schedule")
        trace.finish(_run("applied", "e" * 40, plan=plan_model.Plan([])), trigger)
        _, trigger = trace.start("schedule")
        trace.finish(_run("unchanged", "e" * 40), trigger)
    lines = [(r.getMessage(), getattr(r, "fields", {})) for r in caplog.records]
    assert lines[0] == (f"run started by start-up (last seen {'e' * 12})", {"trigger": "start-up"})
    assert re.fullmatch(r"sync applied: e{12}, 1 changes in 0\.\d s", lines[1][0]), lines[1][0]
    assert {k: lines[1][1][k] for k in ("trigger", "kind", "why", "outcome", "steps", "changes")} == {
        "trigger": "start-up", "kind": "reconcile", "why": "start-up", "outcome": "applied", "steps": {"fetch": 0.5},
        "changes": 1}
    assert (lines[3][1]["kind"], lines[3][1]["why"]) == ("none", "none")  # a run made without a decision
    assert lines[3][1]["trigger"] == "resync"  # the revision it had seen, reconciled again
    assert lines[5][1]["trigger"] == "schedule"  # nothing was looked at again
    assert _value(m, "bindy_agent_runs_total", outcome="applied", trigger="resync") == 1
    assert _value(m, "bindy_agent_runs_total", outcome="applied", kind="reconcile", why="start-up") == 1
    assert _value(m, "bindy_agent_drift_found_total", layer="records") == 1  # the start-up run found drift


# -- deploy/monitoring ------------------------------------------------------------------------


def test_every_metric_the_dashboard_and_the_alerts_query_is_served() -> None:
    """By the registry, once runs of every kind were recorded (the integration test checks a real agent)."""
    m = metrics.Metrics()
    m.watch(ready=lambda: True, leader=lambda: True)
    from agent.reconcile.kubeapply import KubeResult
    key = ObjectKey("ConfigMap", "dns", "a")
    m.record(_run("applied", plan=plan_model.Plan([_change("records")]), notes_pushed=True,
                  kube=KubeResult([], applied=[key], inventory={key})), 1, {"GET": 1})
    m.deliveries.labels("accepted").inc()
    m.events.labels("ValidationFailed").inc()
    calls.record("git", "fetch", "ok", 0.1)
    text = prometheus_client.generate_latest(m.registry).decode()
    m.stop_listening()
    missing = queried_names() - served_names(text)
    assert not missing, missing
    assert {"bindy_agent_runs_total", "bindy_agent_step_duration_seconds_bucket", "bindy_agent_head_rejected",
            "bindy_agent_external_call_duration_seconds_bucket"} <= queried_names()


def test_the_rules_pass_promtool(tmp_path: pathlib.Path) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules()))
    done = subprocess.run([promtool(), "check", "rules", str(tmp_path / "rules.yaml")], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 6 rules found" in done.stdout
    alerts = {r["alert"] for r in rules()["groups"][0]["rules"]}
    assert alerts == {"BindyAgentRunsFailing", "BindyAgentRejectedHead", "BindyAgentDriftRepairedRepeatedly",
                      "BindyAgentDeadlineHit", "BindyAgentNotesNotPushed", "BindyAgentNotReady"}


def test_monitoring_installs_on_its_own_and_deploy_does_not_need_the_prometheus_operator() -> None:
    kubectl = pathlib.Path(sys.executable).parent / "kubectl"
    done = subprocess.run([str(kubectl), "kustomize", str(MONITORING)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    kinds = [(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(done.stdout)]
    assert sorted(kinds) == [("ConfigMap", "bindy-agent-dashboard"), ("PrometheusRule", "bindy-agent"),
                             ("ServiceMonitor", "bindy-agent")]
    assert "monitoring" not in (ROOT / "deploy" / "kustomization.yaml").read_text()


def test_sync_log_level_hides_or_shows_the_library_lines(tmp_path: pathlib.Path) -> None:
    """Without --log-level a sync logs warnings; --log-level error leaves only errors."""
    (tmp_path / "endpoints.yaml").write_text(  # nothing listens on port 9: every transfer is refused
        'instances:\n  dns-system/dns-primary-0: {dns: "127.0.0.1:9", api: "http://127.0.0.1:9"}\n')

    def stderr(*extra: str) -> str:
        done = subprocess.run([sys.executable, "-m", "agent", "sync", str(ROOT / "sample-repo"), "--endpoints",
                               str(tmp_path / "endpoints.yaml"), "--state", str(tmp_path / f"state{len(extra)}"),
                               "--deadline", "20", *extra], capture_output=True, text=True, cwd=ROOT, check=False,
                              timeout=120)
        assert done.returncode == 1, done.stderr  # partial: nothing could be observed
        return done.stderr

    assert "WARNING agent." in stderr()
    assert "WARNING agent." not in stderr("--log-level", "error")
