"""Whether a BIND9 pod waits for its zones, read from the pod's body (pure).

A generated BIND9 pod carries the readiness gate `bindy.firestoned.io/zones-loaded`
(agent/desired/workloads.py): it is Ready, and in its Service, only once the agent has set that
condition True (agent/podready/condition.py). A pod *waits* while it runs with every container ready
(`ContainersReady`: named answers, the zone API is up) and its gate is not True, and is not being
deleted. Such a pod is written like any Ready pod - every zone and record of its instance - and its
gate is opened once it serves them all. A pod whose containers are not ready yet cannot be written:
it is not a server until they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent.model import names


def _conditions(pod: Mapping[str, Any]) -> dict[str, str]:
    return {str(c.get("type")): str(c.get("status"))
            for c in (pod.get("status") or {}).get("conditions") or []}


def is_waiting(pod: Mapping[str, Any]) -> bool:
    """The pod runs with its containers ready, carries the zones-loaded gate, which is not True, and
    is not being deleted."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    gated = any(g.get("conditionType") == names.ZONES_LOADED_CONDITION
                for g in spec.get("readinessGates") or [])
    conds = _conditions(pod)
    return (gated and not meta.get("deletionTimestamp") and bool(status.get("podIP"))
            and conds.get("ContainersReady") == "True"
            and conds.get(names.ZONES_LOADED_CONDITION) != "True")


def waiting_of(pods: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Address -> name of each waiting pod among `pods`."""
    return {str(p["status"]["podIP"]): str(p["metadata"]["name"]) for p in pods if is_waiting(p)}


def selector(instance: str) -> str:
    """The labels every pod of a generated instance carries (its Deployment's selector)."""
    return f"app.kubernetes.io/instance={instance},app.kubernetes.io/name=bind9"
