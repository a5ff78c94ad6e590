"""Alerts to a generic webhook and to Slack, posted to a real local HTTP server that records them."""

from __future__ import annotations

import hashlib
import hmac
import logging
import pathlib
import time

import pytest

from agent.clients import commitstatus
from agent.outcome import delivery, forge, notify
from tests.support.procs import free_port
from tests.support.recorder import Answer, Recorder
from tests.support.reports import SHA, report_doc

HMAC_KEY = "whsec-0123456789-signing-key"
SLACK_PATH = "/services/T0001/B0002/XyZsEcReTpAtH42"
QUICK = delivery.Budget(timeout=2, retries=0)
REPORTS = "https://ci.example/dns/{revision}"


def _secret(tmp_path: pathlib.Path, name: str, value: str) -> pathlib.Path:
    path = tmp_path / name
    path.write_text(value + "\n")
    return path


def test_webhook_alert_is_json_signed_with_hmac_of_the_exact_body(tmp_path: pathlib.Path) -> None:
    with Recorder(Answer(200)) as server:
        settings = notify.NotifySettings(f"{server.url}/hooks/dns", _secret(tmp_path, "key", HMAC_KEY),
                                         report_url=REPORTS, budget=QUICK)
        doc = report_doc("partial", created=2, failures=("Bind9Instance/dns/primary-0: HTTP 422: invalid",))
        assert notify.after_run(settings, doc, "applied") == "failure"
    [request] = server.received
    assert request.path == "/hooks/dns"
    expected = "sha256=" + hmac.new(HMAC_KEY.encode(), request.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(request.headers["x-signature-256"], expected)
    assert request.headers["x-bindy-event"] == "failure"
    body = request.json()
    assert {k: body[k] for k in ("event", "outcome", "previousOutcome", "revision", "runId", "reportUrl")} == {
        "event": "failure", "outcome": "partial", "previousOutcome": "applied", "revision": SHA,
        "runId": "run0123abcd", "reportUrl": f"https://ci.example/dns/{SHA}"}
    assert body["failures"] == ["Bind9Instance/dns/primary-0: HTTP 422: invalid"]
    assert body["commit"]["subject"] == "Add shop CNAME"
    assert body["summary"]["kubernetes"] == {"create": 2, "update": 0, "delete": 0}
    assert body["text"].startswith('bindy-agent: partial 3f2a9c1d0b7e "Add shop CNAME" (Ada <ada@example.com>)\n')


def test_webhook_without_a_secret_is_sent_unsigned() -> None:
    with Recorder(Answer(204, b"")) as server:
        assert notify.after_run(notify.NotifySettings(server.url, budget=QUICK), report_doc("rejected", errors=1),
                                None) == "refusal"
    [request] = server.received
    assert "x-signature-256" not in request.headers
    assert request.json()["errors"] == ["zones/example.com.yaml:3: DNSZone/dns/example-com: "
                                        "spec.soaRecord.serial: must be a positive integer"]


def test_slack_gets_a_readable_message_at_its_secret_url(tmp_path: pathlib.Path) -> None:
    with Recorder(Answer(200, b"ok")) as server:
        settings = notify.NotifySettings(slack_url_file=_secret(tmp_path, "slack", server.url + SLACK_PATH),
                                         report_url=REPORTS, budget=QUICK)
        doc = report_doc("rejected", errors=2, subject="Move <shop> & cart")
        assert notify.after_run(settings, doc, "applied") == "refusal"
    [request] = server.received
    assert request.path == SLACK_PATH
    text = request.json()["text"]
    assert text.splitlines() == [
        ':no_entry: *refusal*: bindy-agent: rejected 3f2a9c1d0b7e "Move &lt;shop&gt; &amp; cart" (Ada &lt;ada@example.com&gt;)',
        "run run0123abcd, 2.4 s: Kubernetes 0 created, 0 updated, 0 deleted; DNS 0 RRset changes, 0 zone changes, verified 0/0",
        "rejected: 2 validation errors; nothing was applied, the last good revision keeps serving",
        "• error: zones/example.com.yaml:3: DNSZone/dns/example-com: spec.soaRecord.serial: must be a positive integer",
        "• error: zones/example.com.yaml:4: DNSZone/dns/example-com: spec.soaRecord.serial: must be a positive integer",
        f"<https://ci.example/dns/{SHA}|full report>",
    ]


def test_alerts_on_failure_and_refusal_once_each_then_one_recovery_and_nothing_on_success() -> None:
    with Recorder(Answer(200)) as server:
        settings = notify.NotifySettings(server.url, budget=QUICK)
        previous: tuple[str | None, str | None] = (None, None)  # (outcome, revision) as the agent's state keeps them
        events = []
        for outcome, revision in [("applied", "1" * 40), ("partial", "2" * 40), ("partial", "2" * 40),
                                  ("rejected", "3" * 40), ("rejected", "3" * 40), ("applied", "4" * 40),
                                  ("applied", "4" * 40), ("applied", "5" * 40)]:
            doc = report_doc(outcome, revision=revision, errors=int(outcome == "rejected"),
                             failures=("x",) * (outcome == "partial"))
            events.append(notify.after_run(settings, doc, previous[0], previous_revision=previous[1]))
            previous = (outcome, revision)
    assert events == [None, "failure", None, "refusal", None, "recovery", None, None]
    assert [(r.json()["event"], r.json()["revision"][0]) for r in server.received] == [
        ("failure", "2"), ("refusal", "3"), ("recovery", "4")]
    assert server.received[-1].json()["text"].startswith("recovered: applied after a rejected run\n")


def test_a_gate_refusal_recorded_as_refused_counts_as_not_applied() -> None:
    assert notify.event(report_doc("applied"), "refused") == "recovery"
    assert notify.event(report_doc("rejected", refusals=("example.com: apex NS",)), "refused", SHA) is None
    assert notify.event(report_doc("superseded"), "partial") is None


def test_huge_reports_give_bounded_messages_that_say_what_was_left_out(tmp_path: pathlib.Path) -> None:
    failures = tuple(f"Bind9Instance/dns/i-{i}: " + "x" * 2000 for i in range(5000))
    doc = report_doc("partial", failures=failures, subject="s" * 20_000)
    with Recorder(Answer(200)) as server:
        settings = notify.NotifySettings(server.url, slack_url_file=_secret(tmp_path, "slack", server.url + SLACK_PATH),
                                         budget=QUICK)
        assert notify.after_run(settings, doc, None) == "failure"
    webhook, slack = server.received
    assert len(webhook.body) <= notify.MAX_BODY_BYTES
    body = webhook.json()
    assert len(body["failures"]) + body["omitted"]["failures"] == 5000
    assert 0 < len(body["failures"]) < 5000
    assert len(slack.json()["text"]) <= notify.MAX_SLACK_CHARS
    assert slack.json()["text"].endswith("… (cut; see the commit's report)")


def test_no_secret_reaches_a_message_even_when_a_failure_quotes_one(tmp_path: pathlib.Path) -> None:
    with Recorder(Answer(200)) as server:
        settings = notify.NotifySettings(server.url, _secret(tmp_path, "key", HMAC_KEY),
                                         _secret(tmp_path, "slack", server.url + SLACK_PATH), budget=QUICK)
        doc = report_doc("partial", failures=(f"webhook said: bad key {HMAC_KEY} for {SLACK_PATH}",))
        assert notify.after_run(settings, doc, None) == "failure"
    assert len(server.received) == 2
    for request in server.received:
        assert HMAC_KEY not in request.body.decode() and SLACK_PATH not in request.body.decode()
    assert server.received[0].json()["failures"] == ["webhook said: bad key <secret> for <secret>"]


def test_down_or_slow_endpoints_cost_at_most_the_timeout_each_and_never_raise(tmp_path: pathlib.Path,
                                                                             caplog: pytest.LogCaptureFixture) -> None:
    budget = delivery.Budget(timeout=0.6, retries=5, backoff=0.05)
    with Recorder(Answer(200, delay=5)) as slow:
        settings = notify.NotifySettings(f"http://127.0.0.1:{free_port()}/hook",
                                         slack_url_file=_secret(tmp_path, "slack", slow.url + SLACK_PATH), budget=budget)
        started = time.monotonic()
        assert notify.after_run(settings, report_doc("partial", failures=("x",)), None) == "failure"
        assert time.monotonic() - started < 2.0
    warnings = sorted(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert len(warnings) == 2
    assert warnings[0].startswith("failure alert to Slack: not delivered after 1 attempt(s)")
    assert warnings[1].startswith("failure alert to the webhook on 127.0.0.1: not delivered after")


def test_no_token_or_secret_url_in_any_log_line(tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.INFO, logger="httpx")  # its request lines, whatever an earlier test's logs.configure set
    token = "glpat-SeCrEtToKeN-0123456789"
    answers = (Answer(401, f'{{"message":"token {token} is revoked"}}'.encode()), Answer(500), Answer(200))
    with Recorder(*answers) as server:
        budget = delivery.Budget(timeout=2, retries=2, backoff=0.01)
        status = forge.configure("gitlab", repo="https://gitlab.example.com/platform/dns.git",
                                 token_file=_secret(tmp_path, "token", token), api_url=server.url, budget=budget)
        assert not commitstatus.post(forge.pending(status), SHA)  # 401, quoting the token back
        alerts = notify.NotifySettings(f"{server.url}/hook", _secret(tmp_path, "key", HMAC_KEY),
                                       _secret(tmp_path, "slack", server.url + SLACK_PATH), budget=budget)
        assert notify.after_run(alerts, report_doc("partial", failures=(token,)), None) == "failure"
    assert len(server.received) == 4  # 401; webhook 500 then 200; Slack 200
    lines = [r.getMessage() for r in caplog.records]
    assert any("HTTP 401: {\"message\":\"token <secret> is revoked\"}" in line for line in lines)
    assert any(line.startswith("HTTP Request: POST") and line.endswith('<secret> "HTTP/1.0 200 OK"') for line in lines)
    for secret in (token, HMAC_KEY, SLACK_PATH):
        assert not [line for line in lines if secret in line]


def test_a_slack_file_without_a_usable_url_is_logged_not_fatal(tmp_path: pathlib.Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    garbage = _secret(tmp_path, "slack", "xoxb-pasted-a-token-not-a-url")
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe\x00secret")
    for path in (garbage, binary):
        settings = notify.NotifySettings(slack_url_file=path, budget=QUICK)
        assert notify.after_run(settings, report_doc("partial", failures=("x",)), None) == "failure"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings[0].startswith("failure alert to Slack: not delivered after 1 attempt(s)")
    assert warnings[1] == f"Slack alert file {binary}: not UTF-8 text (byte 1 is not); not sent"
    assert "xoxb-pasted-a-token-not-a-url" not in caplog.text
