"""Alerts to a generic webhook and to Slack on failure, refusal and recovery - never on a plain
success.

    event      when
    failure    a run ended partial (some objects or zones failed)
    refusal    a run was rejected: the commit is invalid, or the safety gate refused its plan
    recovery   a run applied after one or more runs that did not (partial, rejected, refused)

The same failure on the same commit is not sent again (a partial commit is retried every interval).
The generic webhook gets JSON, signed `X-Signature-256: sha256=<HMAC-SHA256 of the body>` when a
secret is configured; Slack gets an incoming-webhook message. Both are size-capped, and no value
read from a secret file ever appears in them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import pathlib
import urllib.parse
from typing import Any

from agent.clients import httppost
from agent.model.calls import CallTarget
from agent.model.outcomes import Outcome
from agent.outcome import delivery, report

# REFUSED: the state's name for a gate refusal
NOT_APPLIED = (Outcome.PARTIAL, Outcome.REJECTED, Outcome.REFUSED)
MAX_ITEMS = 10  # failures, refusals and errors listed in one alert
MAX_ITEM_CHARS = 500
MAX_BODY_BYTES = 16_384
MAX_SLACK_CHARS = 3_000  # Slack's limit for one text block


@dataclasses.dataclass(frozen=True)
class NotifySettings:
    """Where alerts go; built by the caller (see run.settings.Settings.notify_settings)."""

    webhook_url: str | None = None
    webhook_secret_file: pathlib.Path | None = None  # HMAC-SHA256 key for X-Signature-256
    slack_url_file: pathlib.Path | None = None  # the incoming-webhook URL is itself a secret
    report_url: str | None = None  # "{revision}" in it becomes the commit SHA
    budget: delivery.Budget = delivery.Budget()


def event(report_doc: dict[str, Any], previous_outcome: str | None,
          previous_revision: str | None = None) -> str | None:
    """failure / refusal / recovery, or None when nothing is worth an alert."""
    outcome = report_doc["outcome"]
    if outcome == Outcome.APPLIED:
        return "recovery" if previous_outcome in NOT_APPLIED else None
    if outcome not in (Outcome.PARTIAL, Outcome.REJECTED):
        return None
    same = (previous_outcome or "").replace(Outcome.REFUSED, Outcome.REJECTED) == outcome
    if same and previous_revision == report_doc["revision"]:
        return None
    return "failure" if outcome == Outcome.PARTIAL else "refusal"


def _clip(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    text = delivery.redact(str(text))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _errors(doc: dict[str, Any]) -> list[str]:
    return [": ".join(str(x) for x in (f"{p['file']}:{p['line']}" if p["file"] else "<generated>",
                                         p["object"], p["path"], p["message"]) if x)
            for p in doc.get("problems", []) if p["severity"] == "error"]


def _lists(doc: dict[str, Any], limit: int) -> tuple[dict[str, list[str]], dict[str, int]]:
    full = {"failures": list(doc.get("failures", [])), "refusals": list(doc.get("refusals", [])),
            "errors": _errors(doc)}
    shown = {k: [_clip(x) for x in v[:limit]] for k, v in full.items()}
    return shown, {k: len(v) - len(shown[k]) for k, v in full.items() if len(v) > len(shown[k])}


def _text(doc: dict[str, Any], name: str, previous_outcome: str | None) -> str:
    lines = [report.headline(doc)]
    lines += [x for x in report.summary_lines(doc) if not x.startswith(("refused: ", "failed: "))]
    if name == "recovery":
        lines.insert(0, f"recovered: applied after a {previous_outcome} run")
    return _clip("\n".join(lines), 2 * MAX_ITEM_CHARS)


def _webhook_json(doc: dict[str, Any], name: str, previous_outcome: str | None, link: str | None,
                  limit: int) -> bytes:
    shown, omitted = _lists(doc, limit)
    commit = {k: _clip(v) for k, v in (doc.get("commit") or {}).items()}
    body = {"event": name, "outcome": doc["outcome"], "previousOutcome": previous_outcome,
            "revision": doc["revision"], "runId": doc["runId"], "commit": commit,
            "summary": doc["summary"], "text": _text(doc, name, previous_outcome),
            "reportUrl": link, **shown, "omitted": omitted}
    return json.dumps(body, sort_keys=True).encode()


def webhook_body(doc: dict[str, Any], name: str, previous_outcome: str | None,
                 link: str | None) -> bytes:
    """The generic webhook's JSON, at most MAX_BODY_BYTES: the lists shrink until it fits."""
    for limit in (MAX_ITEMS, 3):
        data = _webhook_json(doc, name, previous_outcome, link, limit)
        if len(data) <= MAX_BODY_BYTES:
            return data
    # counts only; every string is clipped
    return _webhook_json(doc, name, previous_outcome, link, 0)


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_body(doc: dict[str, Any], name: str, previous_outcome: str | None,
               link: str | None) -> bytes:
    icon = {"failure": ":x:", "refusal": ":no_entry:", "recovery": ":white_check_mark:"}[name]
    shown, omitted = _lists(doc, MAX_ITEMS)
    lines = [f"{icon} *{name}*: " + _slack_escape(_text(doc, name, previous_outcome))]
    for key, items in shown.items():
        lines += [f"• {key[:-1]}: {_slack_escape(x)}" for x in items]
        if omitted.get(key):
            lines.append(f"• … and {omitted[key]} more {key}")
    if link:
        lines.append(f"<{link}|full report>")
    text = "\n".join(lines)
    if len(text) > MAX_SLACK_CHARS:
        text = text[:MAX_SLACK_CHARS - 40] + "\n… (cut; see the commit's report)"
    return json.dumps({"text": text}).encode()


def _send_webhook(settings: NotifySettings, url: str, body: bytes, name: str) -> bool:
    headers = {"Content-Type": "application/json", "X-Bindy-Event": name}
    if settings.webhook_secret_file is not None:
        secret = delivery.read_secret(settings.webhook_secret_file, "alert webhook signature")
        if secret is None:
            return False
        headers["X-Signature-256"] = "sha256=" + hmac.new(secret.encode(), body,
                                                          hashlib.sha256).hexdigest()
    host = urllib.parse.urlsplit(url).hostname or "?"
    return httppost.post(CallTarget.ALERT, f"{name} alert to the webhook on {host}", url, body=body,
                         headers=headers, budget=settings.budget)


def after_run(settings: NotifySettings | None, report_doc: dict[str, Any],
              previous_outcome: str | None, *, previous_revision: str | None = None) -> str | None:
    """Sends the alert a finished run calls for, if any; returns its event name. Never raises."""
    name = event(report_doc, previous_outcome, previous_revision)
    if settings is None or name is None:
        return name
    link = delivery.report_link(settings.report_url, report_doc["revision"])
    if settings.webhook_url:
        _send_webhook(settings, settings.webhook_url,
                      webhook_body(report_doc, name, previous_outcome, link), name)
    if settings.slack_url_file is not None:
        slack = delivery.read_secret(settings.slack_url_file, "Slack alert")
        if slack is not None:
            httppost.post(CallTarget.ALERT, f"{name} alert to Slack", slack,
                          body=slack_body(report_doc, name, previous_outcome, link),
                          headers={"Content-Type": "application/json"}, budget=settings.budget)
    return name

