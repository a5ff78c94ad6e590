"""The 12 Bindy CRDs, generated from the models: applied when they differ, waited on until served."""

from __future__ import annotations

import time

from agent.clients.kubeapi import KubeApi
from agent.errors import KubeError
from agent.model import kinds, schema
from agent.plan import kubediff


def install_crds(api: KubeApi, *, timeout: float = 60) -> list[str]:
    """Applies every CRD that differs from the models' and waits until all are Established."""
    changed = []
    for kind in kinds.KINDS.values():
        body = schema.crd(kind)
        live = api.get("CustomResourceDefinition", None, kind.crd_name)
        if live is None or kubediff.differences(body, live):
            api.apply(body)
            changed.append(kind.crd_name)
    deadline = time.monotonic() + timeout
    pending = [k.crd_name for k in kinds.KINDS.values()]
    while pending:
        live = api.get("CustomResourceDefinition", None, pending[0])
        conds = (live or {}).get("status", {}).get("conditions") or []
        if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
            pending.pop(0)
            continue
        if time.monotonic() > deadline:
            raise KubeError(f"CRD {pending[0]} not Established after {timeout:.0f}s", reason="timeout",
                            retryable=True)
        time.sleep(0.2)
    if changed:  # discovery of new resources takes a moment after Established
        _wait_served(api, deadline)
    return changed


def _wait_served(api: KubeApi, deadline: float) -> None:
    for kind in kinds.KINDS.values():
        while True:
            try:
                api.list(kind.name)
                break
            except KubeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
