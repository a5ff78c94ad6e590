"""The Kubernetes Events a run leaves on the Bind9Clusters and ClusterBind9Providers it served, the
way Flux's controllers announce a reconciliation (`kubectl describe bind9cluster NAME`, `kubectl
get events`):

    applied, with changes      Normal   ReconciliationSucceeded   ("repaired drift" on the revision
                               already applied)
    partial                    Warning  ReconciliationFailed
    rejected (invalid)         Warning  ValidationFailed
    rejected (gate refused)    Warning  PlanRefused
    unreachable, error         Warning  ReconciliationFailed
    nothing written            none     (unchanged, suspended, busy, detect mode, an applied run
                               with no change)

Each message ends with the run's kind and why (agent/run/decide.py), e.g. "(reconcile: resync)".
Rate-limited: the same reason and message on the same object at most once per `every` seconds (the
messages hold no times, so a failure that repeats on every run is told once per interval).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from agent.clients.kubeapi import KubeApi
from agent.errors import KubeError
from agent.model import names
from agent.reconcile import events

log = logging.getLogger(__name__)
EVENT_KINDS = ("Bind9Cluster", "ClusterBind9Provider")
DEFAULT_EVERY = 600.0


@dataclasses.dataclass(frozen=True)
class RunEvent:
    type: str  # Normal or Warning
    reason: str
    message: str


def decide(*, outcome: str, revision: str | None, message: str, changes: int,
           failures: Sequence[str] = (), refusals: Sequence[str] = (), repeat: bool = False,
           ran: str = "") -> RunEvent | None:
    """The Event a run deserves, if any. `repeat`: the run handled the revision already applied, so
    what it changed had drifted; `ran`: the run's kind and why, said at the end."""
    event = _event(outcome=outcome, revision=revision, message=message, changes=changes,
                   failures=failures, refusals=refusals, repeat=repeat)
    return (dataclasses.replace(event, message=f"{event.message} ({ran})") if event is not None
            and ran else event)


def _event(*, outcome: str, revision: str | None, message: str, changes: int,
           failures: Sequence[str], refusals: Sequence[str], repeat: bool) -> RunEvent | None:
    rev = (revision or "")[:12] or "the head"
    if outcome == "applied":
        if not changes:
            return None
        what = "repaired drift on" if repeat else "applied"
        return RunEvent("Normal", "ReconciliationSucceeded",
                        f"{what} revision {rev}: {changes} changes")
    first = f" (first: {failures[0]})" if failures else ""
    if outcome == "partial":
        return RunEvent("Warning", "ReconciliationFailed", f"revision {rev}: {message}{first}")
    if outcome == "rejected":
        reason = "PlanRefused" if refusals else "ValidationFailed"
        return RunEvent("Warning", reason, f"revision {rev} rejected: {message}")
    if outcome in ("unreachable", "error"):
        return RunEvent("Warning", "ReconciliationFailed",
                        f"revision {rev}: {message or outcome}{first}")
    return None


class Limiter:
    """Whether an Event may be emitted: one key at most once per `every` seconds. Thread-safe."""

    def __init__(self, every: float = DEFAULT_EVERY, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.every, self._clock = every, clock
        self._last: dict[tuple[str, ...], float] = {}
        self._lock = threading.Lock()

    def allow(self, key: tuple[str, ...]) -> bool:
        now = self._clock()
        with self._lock:
            if now - self._last.get(key, -float("inf")) < self.every:
                return False
            self._last = {k: t for k, t in self._last.items() if now - t < self.every}  # bounded
            self._last[key] = now
            return True


def emit(api: KubeApi, event: RunEvent, *, agent_namespace: str, limiter: Limiter) -> int:
    """Emits `event` on every Bind9Cluster and ClusterBind9Provider the agent manages (those its
    limiter allows); returns how many were emitted. A cluster that cannot be read is only logged."""
    emitted = 0
    for kind in EVENT_KINDS:
        try:
            served: list[dict[str, Any]] = api.list(
                kind, label_selector=names.selector(agent_namespace))
        except KubeError as exc:
            log.warning("no %s Event on the %ss: they cannot be listed: %s", event.reason, kind,
                        exc)
            continue
        for live in served:
            meta = live.get("metadata") or {}
            key = (kind, meta.get("namespace") or "", meta.get("name") or "", event.reason,
                   event.message)
            if limiter.allow(key):
                events.emit_event(api, live, event.type, event.reason, event.message)
                emitted += 1
    return emitted
