"""`bindy-agent run` against a real kube-apiserver, named pair and Git remote, watched the way an
operator watches it: through a start-up, a push, two hand edits a resync repairs, a rejected commit
and a fix whose reports cannot be pushed. Each step is checked in the log lines, on /metrics, in the
Events on the Bind9Cluster and in the commit's note; then the alerts of deploy/monitoring/ are run by
`promtool test rules` on series taken from the /metrics scrapes of those runs (and of a run cut by its
deadline): each alert fires on the scrape of the run that should fire it, and none on a healthy one."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import dns.query
import dns.rcode
import dns.tsigkeyring
import dns.update
import httpx
import pytest
import yaml
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from agent.clients import endpoints as config
from agent.clients import rfc2136 as records
from agent.run import metrics, orchestrator
from tests.conftest import ROOT
from tests.support import bind as bind_support
from tests.support import dnsrepo, monitoring
from tests.support.agentproc import AgentProcess
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster
from tests.support.procs import wait_for

SECRET = b"a3f9c1e7b5d2048e6c1a9f3b7d5e2c8a"
KEY = "a report key of more than 32 characters"
WEB = "records/example-com/web.yaml"
BAD = ("apiVersion: bindy.firestoned.io/v1beta1\nkind: ARecord\nmetadata: {name: bad, namespace: NS, "
       "labels: {zone: example-com}}\nspec: {name: bad}\n")  # no ipv4Addresses: invalid
EXTRA_LABELS = {"namespace": "bindy-agent", "job": "bindy-agent"}  # as Prometheus adds them


def _lines(agent: AgentProcess) -> list[dict[str, Any]]:
    return [json.loads(line) for line in agent.log_lines() if line.startswith("{")]


def _ends(agent: AgentProcess) -> list[dict[str, Any]]:
    """The end line of each run."""
    return [line for line in _lines(agent) if line["msg"].startswith("sync ") and "outcome" in line]


def _scrape(agent: AgentProcess) -> str:
    return httpx.get(agent.url + "/metrics", timeout=5).text


def _events(core: Any, namespace: str) -> list[tuple[str, str, str, str]]:
    """(kind/name, type, reason, message) of the run Events on the repository's cluster."""
    items = core.list_namespaced_event(namespace).items
    return [(f"{e.involved_object.kind}/{e.involved_object.name}", e.type, e.reason, e.message) for e in items
            if e.involved_object.kind == "Bind9Cluster" and e.reason in ("ReconciliationSucceeded",
                                                                          "ReconciliationFailed", "ValidationFailed")]


def _by_hand(bind: bind_support.BindPair, zone: str, name: str, value: str) -> None:
    keyring = dns.tsigkeyring.from_text({bind_support.TSIG_NAME: ("hmac-sha256", bind.keys.tsig)})
    update = dns.update.UpdateMessage(zone, keyring=keyring, keyalgorithm="hmac-sha256")
    update.replace(name, 300, "A", value)
    assert dns.query.tcp(update, bind.primary.address, port=bind.primary.port, timeout=5).rcode() == dns.rcode.NOERROR


def _report(remote: GitRemote, tmp: pathlib.Path, sha: str, key: pathlib.Path) -> str:
    done = subprocess.run([sys.executable, "-m", "agent", "report", sha, "--repo", remote.url, "--cache",
                           str(tmp / "report-cache"), "--report-key-file", str(key)], capture_output=True, text=True,
                          cwd=ROOT, check=False, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.timeout(600)
def test_an_operator_sees_each_run_in_logs_metrics_events_the_note_and_the_alerts(
        tmp_path: pathlib.Path, git_remote: GitRemote, kube: KubeCluster, kube_client: Any, namespace: str,
        bind: bind_support.BindPair, zone_api: Any) -> None:
    sample, tag = dnsrepo.unique_sample(tmp_path / "sample", namespace)
    files = {str(p.relative_to(sample)): p.read_text() for p in sample.rglob("*.yaml")}
    endpoints = dnsrepo.endpoint_map(tmp_path, bind, zone_api, namespace)
    primary = config.load_endpoints(endpoints)[f"{namespace}/dns-primary-0"]
    zone, www = f"example-{tag}.com.", f"www.example-{tag}.com."
    (tmp_path / "webhook").write_bytes(SECRET + b"\n")
    key = tmp_path / "report.key"
    key.write_text(KEY + "\n")
    core = client.CoreV1Api(kube_client)
    first = git_remote.commit("Initial DNS", files)
    git_remote.push()

    agent = AgentProcess(tmp_path, repo=git_remote.url, endpoints=endpoints, secret_file=tmp_path / "webhook",
                         extra=["--kubeconfig", str(kube.kubeconfig), "--agent-namespace", namespace,
                                "--allowed-namespaces", namespace, "--no-leader-election", "--interval", "3",
                                "--resync-after", "5", "--webhook-min-interval", "0", "--push-notes",
                                "--report-key-file", str(key), "--log-level", "info"])
    scrapes: dict[str, str] = {}
    try:
        # -- start-up: a start and an end line, counted by trigger, one Event -----------------------
        start = next(line for line in _lines(agent) if line["msg"].startswith("run started by"))
        assert (start["msg"], start["trigger"], start["level"]) == ("run started by start-up", "start-up", "info")
        end = next(line for line in _ends(agent) if line["runId"] == start["runId"])
        assert (end["msg"].split(":")[0], end["revision"], end["trigger"], end["outcome"]) == (
            "sync applied", first, "start-up", "applied")
        assert end["changes"] > 20 and end["seconds"] > 0
        assert (end["kind"], end["why"]) == ("reconcile", "new-head")  # nothing applied before it
        assert {"git", "kubernetes", "zone_api", "dns_update"} <= set(end["calls"]), end["calls"]
        if "steps" in orchestrator.RunOutcome.__dataclass_fields__:
            assert {"fetch", "load", "plan", "apply_kubernetes", "apply_dns"} <= set(end["steps"]), end["steps"]
            assert set(end["steps"]) <= set(metrics.STEPS)
        assert agent.metric("bindy_agent_runs_total", outcome="applied", trigger="start-up") == 1
        wait_for(lambda: _events(core, namespace), 10)
        assert _events(core, namespace) == [("Bind9Cluster/dns", "Normal", "ReconciliationSucceeded",
                                             f"applied revision {first[:12]}: {end['changes']} changes "
                                             "(reconcile: new-head)")]

        # -- a push, told by the webhook --------------------------------------------------------------
        second = git_remote.commit("New front end", {WEB: files[WEB].replace("192.0.2.12", "192.0.2.52")})
        git_remote.push()
        assert agent.poke(SECRET) == 202
        wait_for(lambda: any(e["revision"] == second and e["outcome"] == "applied" for e in _ends(agent)), 60)
        pushed = next(e for e in _ends(agent) if e["revision"] == second)
        assert pushed["trigger"] == "webhook" and pushed["changes"] == 2, pushed
        assert (pushed["kind"], pushed["why"]) == ("reconcile", "new-head"), pushed
        assert agent.metric("bindy_agent_runs_total", outcome="applied", trigger="webhook") == 1
        assert agent.metric("bindy_agent_revision_info", applied=second, seen=second) == 1
        scrapes["healthy"] = _scrape(agent)

        # -- two hand edits, each repaired by a resync -----------------------------------------------------
        for n, value in enumerate(("203.0.113.9", "203.0.113.10"), start=1):
            _by_hand(bind, zone, www, value)
            wait_for(lambda n=n: agent.metric("bindy_agent_drift_repaired_total", layer="records") == n, 60)
            assert records.query(primary, www, "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.52")
        repairs = [e for e in _ends(agent) if e["revision"] == second and e["trigger"] == "resync" and e["changes"]]
        assert [(e["outcome"], e["changes"], e["why"]) for e in repairs] == [("applied", 1, "resync")] * 2
        assert agent.metric("bindy_agent_drift_found_total", layer="records") == 2
        assert agent.metric("bindy_agent_runs_total", outcome="applied", trigger="resync") >= 2
        assert agent.metric("bindy_agent_managed", what="zones") == 3
        assert agent.metric("bindy_agent_managed", what="rrsets") > 20
        assert agent.metric("bindy_agent_managed", what="objects") > 3
        for target in ("git", "kubernetes", "zone_api", "dns_update", "axfr", "soa_query"):
            assert agent.metric("bindy_agent_external_calls_total", target=target, result="ok") > 0, target
            assert agent.metric("bindy_agent_external_call_duration_seconds_count", target=target) > 0, target
        # told once in 10 min; the message ends with the run's kind and why
        drift_events = [e for e in _events(core, namespace) if e[3].startswith("repaired drift")]
        assert drift_events == [("Bind9Cluster/dns", "Normal", "ReconciliationSucceeded",
                                 f"repaired drift on revision {second[:12]}: 1 changes (reconcile: resync)")]
        note = _report(git_remote, tmp_path, second, key)
        assert note.startswith(f'bindy-agent: applied {second[:12]} "New front end"'), note
        assert "Later runs of this commit (2):" in note and note.count("(drift repaired)") == 2, note
        scrapes["drift"] = _scrape(agent)

        # -- a rejected commit: not ready, counted on every run, one Event ----------------------------
        bad = git_remote.commit("Broken record", {"records/bad.yaml": BAD.replace("NS", namespace)})
        git_remote.push()
        assert agent.poke(SECRET) == 202
        wait_for(lambda: agent.metric("bindy_agent_consecutive_failures") >= 3, 60)
        assert agent.get("/readyz") == 503
        assert (agent.metric("bindy_agent_head_rejected"), agent.metric("bindy_agent_ready")) == (1, 0)
        assert agent.metric("bindy_agent_revision_info", applied=second, seen=bad) == 1
        rejected = [e for e in _ends(agent) if e["revision"] == bad]
        assert rejected[0]["outcome"] == "rejected" and rejected[0]["msg"].startswith("sync rejected: ")
        assert [e[1:3] for e in _events(core, namespace) if bad[:12] in e[3]] == [("Warning", "ValidationFailed")]
        scrapes["rejected"] = _scrape(agent)

        # -- the fix, whose report the remote refuses ------------------------------------------------
        fix = git_remote.commit("Fix the record", {"records/bad.yaml": None})
        git_remote.push()
        hook = git_remote.bare / "hooks" / "pre-receive"
        hook.write_text("#!/bin/sh\necho 'notes are not accepted here' >&2\nexit 1\n")
        hook.chmod(0o755)
        assert agent.poke(SECRET) == 202
        wait_for(lambda: agent.metric("bindy_agent_notes_pending") == 1, 60)
        assert any(e["revision"] == fix and e["outcome"] == "applied" for e in _ends(agent))
        assert (agent.get("/readyz"), agent.metric("bindy_agent_head_rejected")) == (200, 0)
        assert agent.metric("bindy_agent_notes_push_failures_total") >= 1
        scrapes["notes"] = _scrape(agent)

        missing = monitoring.queried_names() - monitoring.served_names(scrapes["notes"])
        assert not missing, f"the dashboard or the rules query what a running agent does not serve: {missing}"
    finally:
        assert agent.stop() == 0
    assert "Traceback" not in agent.log.read_text()

    # -- a run cut by its deadline (its own agent: a deadline too short for anything) -----------------
    late = AgentProcess(tmp_path, repo=git_remote.url, endpoints=endpoints, extra=["--deadline", "0.001"],
                        until="/healthz")
    try:
        wait_for(lambda: late.metric("bindy_agent_deadline_exceeded_total") == 1, 30)
        scrapes["deadline"] = _scrape(late)
    finally:
        late.stop()

    _alerts_fire_where_they_should(tmp_path, scrapes)


FIRES = {  # alert -> the scrape of a run that should fire it (the "healthy" one fires none)
    "BindyAgentRunsFailing": "rejected",
    "BindyAgentRejectedHead": "rejected",
    "BindyAgentNotReady": "rejected",
    "BindyAgentDriftRepairedRepeatedly": "drift",
    "BindyAgentNotesNotPushed": "notes",
    "BindyAgentDeadlineHit": "deadline",
}


def _series(text: str) -> dict[str, float]:
    """Every sample of a scrape as promtool series text, with the labels Prometheus adds."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if not s.name.startswith("bindy_agent_"):
                continue
            labels = {**s.labels, **EXTRA_LABELS}
            shown = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            out[f"{s.name}{{{shown}}}"] = s.value
    return out


def _alerts_fire_where_they_should(tmp: pathlib.Path, scrapes: dict[str, str]) -> None:
    """promtool evaluates each alert for 90 minutes: the healthy scrape at 0, then the scrape of the
    run that should fire it; and the healthy scrape alone, which fires nothing. The annotations are
    left out (templates only: `promtool check rules` checks them)."""
    spec = monitoring.rules()
    for group in spec["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (tmp / "rules.yaml").write_text(yaml.safe_dump(spec))
    healthy = _series(scrapes["healthy"])
    tests = []
    for alert, scrape in FIRES.items():
        firing = _series(scrapes[scrape])
        series = [{"series": name, "values": f"{healthy.get(name, '_')} {value}+0x90"}
                  for name, value in sorted(firing.items())]
        rule = next(r for g in spec["groups"] for r in g["rules"] if r["alert"] == alert)
        labels = {"namespace": "bindy-agent", **rule.get("labels", {})}
        tests.append({"interval": "1m", "input_series": series, "alert_rule_test": [
            {"eval_time": "60m", "alertname": alert, "exp_alerts": [{"exp_labels": labels}]}]})
    tests.append({"interval": "1m",
                  "input_series": [{"series": n, "values": f"{v}+0x90"} for n, v in sorted(healthy.items())],
                  "alert_rule_test": [{"eval_time": "60m", "alertname": a, "exp_alerts": []} for a in FIRES]})
    (tmp / "alerts-test.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m",
                                                          "tests": tests}))
    done = subprocess.run([monitoring.promtool(), "test", "rules", "alerts-test.yaml"], cwd=tmp,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
