"""Kubernetes Events on CRs, and marking live CRs when a revision is rejected or refused."""

from __future__ import annotations

import datetime
import logging
from typing import Any

from agent.clients.kubeapi import KubeApi
from agent.errors import KubeError
from agent.model import kinds

log = logging.getLogger(__name__)


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def emit_event(api: KubeApi, obj: dict[str, Any], kind: str, reason: str, message: str) -> None:
    """A Kubernetes Event on a CR (kubectl describe shows it). Failing to emit is only logged."""
    meta = obj["metadata"]
    stamp = now()
    body = {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": f"{meta['name']}.",
                     "namespace": meta.get("namespace") or "default"},
        "involvedObject": {"apiVersion": obj.get("apiVersion", kinds.API_VERSION),
                           "kind": obj.get("kind"), "name": meta["name"],
                           "namespace": meta.get("namespace"), "uid": meta.get("uid")},
        "reason": reason, "message": message[:1024], "type": kind, "count": 1,
        "firstTimestamp": stamp, "lastTimestamp": stamp, "source": {"component": "bindy-agent"},
        "reportingComponent": "bindy-agent",
    }
    try:
        api.create(body)
    except KubeError as exc:
        log.warning("event %s on %s/%s not recorded: %s",
                    reason, obj.get("kind"), meta["name"], exc)


def mark_rejected(api: KubeApi, marks: list[tuple[dict[str, Any], dict[str, Any]]], *, message: str,
                  reason: str = "RevisionRejected") -> int:
    """Writes the marks of an invalid or refused revision (each live CR and its new status:
    agent/plan/statusdiff.rejection_marks), with a Warning Event each. Returns how many were
    written."""
    for live, status in marks:
        meta = live["metadata"]
        api.apply_status(live["kind"], meta.get("namespace"), meta["name"], status)
        emit_event(api, live, "Warning", reason, message)
    return len(marks)
