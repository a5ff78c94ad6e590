"""Kubernetes Events on CRs, and marking live CRs when a revision is rejected or refused."""

from __future__ import annotations

import datetime
import logging
from typing import Any

from agent.errors import KubeError
from agent.model import kinds
from agent.plan import kubediff, statusdiff
from agent.reconcile.kubeapi import KubeApi

log = logging.getLogger(__name__)


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def emit_event(api: KubeApi, obj: dict[str, Any], kind: str, reason: str, message: str) -> None:
    """A Kubernetes Event on a CR (kubectl describe shows it). Failing to emit is only logged."""
    meta = obj["metadata"]
    stamp = now()
    body = {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": f"{meta['name']}.", "namespace": meta.get("namespace") or "default"},
        "involvedObject": {"apiVersion": obj.get("apiVersion", kinds.API_VERSION), "kind": obj.get("kind"),
                           "name": meta["name"], "namespace": meta.get("namespace"), "uid": meta.get("uid")},
        "reason": reason, "message": message[:1024], "type": kind, "count": 1,
        "firstTimestamp": stamp, "lastTimestamp": stamp, "source": {"component": "bindy-agent"},
        "reportingComponent": "bindy-agent",
    }
    try:
        api.create(body)
    except KubeError as exc:
        log.warning("event %s on %s/%s not recorded: %s", reason, obj.get("kind"), meta["name"], exc)


def mark_rejected(api: KubeApi, *, agent_namespace: str, message: str, reason: str = "RevisionRejected") -> int:
    """After an invalid or refused revision: every CR this agent manages keeps its state (the last
    good revision keeps serving) and gains `Progressing=False` with `reason` and why.
    Returns the number of statuses written (only those that changed)."""
    written = 0
    stamp = now()
    for kind in kinds.KINDS.values():
        for live in api.list(kind.name, label_selector=kubediff.selector(agent_namespace)):
            old = live.get("status") or {}
            conds = [c for c in old.get("conditions") or [] if c.get("type") != "Progressing"]
            conds.append({"type": "Progressing", "status": "False", "reason": reason, "message": message})
            new = {**old, "conditions": conds}
            if not statusdiff.changed(new, old):
                continue
            meta = live["metadata"]
            api.apply_status(kind.name, meta.get("namespace"), meta["name"], statusdiff.merge_times(new, old, stamp))
            emit_event(api, live, "Warning", reason, message)
            written += 1
    return written
