"""Bindy's 12 CRDs, generated from the models, against the installed ones (pure): a missing CRD is a
create, one that lacks what the models' says is an update (extra fields the API server fills in are
fine: the comparison is kubediff.differences), an equal one is nothing.

The installed CRDs are read by agent/observe/kubeobserve.crds; agent/reconcile/crdapply.py writes
the plan's CRD changes, first of all the Kubernetes writes, and only once the gate passed the
plan."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from agent.model import kinds, schema
from agent.plan.kubechange import CrdChange
from agent.plan.kubediff import differences

REASON = {"create": "Bindy's CRD, generated from the agent's models",
          "update": "the installed CRD differs from the agent's models"}


@functools.cache
def wanted() -> tuple[dict[str, Any], ...]:
    """The CRDs the models make (computed once a process: the models do not change while it runs;
    nothing changes them in place)."""
    return tuple(schema.crd(kind) for kind in kinds.KINDS.values())


def names() -> list[str]:
    return [kind.crd_name for kind in kinds.KINDS.values()]


def diff(installed: Mapping[str, dict[str, Any] | None]) -> list[CrdChange]:
    """`installed`: each CRD name -> the live CRD (None: not installed)."""
    out: list[CrdChange] = []
    for body in wanted():
        live = installed.get(body["metadata"]["name"])
        if live is None:
            out.append(CrdChange("create", body))
        elif fields := differences(body, live):
            out.append(CrdChange("update", body, tuple(fields)))
    return out
