"""Writes the CRD changes of a gated plan (agent/plan/crddiff.py decided them) and waits until the
API server serves them: Established, then listed (discovery of a new resource takes a moment).
Decides nothing: what it writes is `Plan.crds`."""

from __future__ import annotations

import time
from collections.abc import Sequence

from agent.clients.deadline import UNBOUNDED, Deadline
from agent.clients.kubeapi import KubeApi
from agent.errors import KubeError
from agent.model import kinds
from agent.plan.kubechange import CrdChange

WAIT = 60.0  # seconds a written CRD may take to be served (at most the run's time left)


def apply(api: KubeApi, changes: Sequence[CrdChange], *, deadline: Deadline = UNBOUNDED,
          wait: float = WAIT) -> list[str]:
    """Applies each CRD change, then waits until every CRD it wrote is Established and served.
    Returns the names of the CRDs written."""
    written = []
    for change in changes:
        deadline.check(f"applying CustomResourceDefinition {change.name}")
        api.apply(change.body)
        written.append(change.name)
    if written:
        until = time.monotonic() + max(0.0, min(wait, deadline.remaining()))
        established(api, written, until=until)
        _served(api, written, until=until)
    return written


def established(api: KubeApi, names: Sequence[str], *, until: float) -> None:
    """Waits until each CRD of `names` is Established (KubeError, retryable, at the monotonic
    `until`)."""
    pending = list(names)
    while pending:
        live = api.get("CustomResourceDefinition", None, pending[0])
        conds = (live or {}).get("status", {}).get("conditions") or []
        if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
            pending.pop(0)
            continue
        if time.monotonic() > until:
            raise KubeError(f"CRD {pending[0]} not Established in time: the API server did not "
                            "report it Established; the next run waits for it again",
                            reason="timeout", retryable=True)
        time.sleep(0.2)


def _served(api: KubeApi, names: Sequence[str], *, until: float) -> None:
    """Each written CRD's kind can be listed."""
    for kind in (k for k in kinds.KINDS.values() if k.crd_name in names):
        while True:
            try:
                api.list(kind.name)
                break
            except KubeError:
                if time.monotonic() > until:
                    raise
                time.sleep(0.2)
