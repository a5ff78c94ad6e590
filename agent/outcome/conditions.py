"""The conditions a CR's `.status` carries, after seeds/002: `Ready`, `Progressing`, `Degraded`,
each with a reason; from what happened to the CR in a sync (`Outcome`), or for a Bind9Instance from
its Deployment and pods, as Bindy counts them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from agent.model.key import ObjectKey
from agent.outcome import pods as podstate


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What happened to one CR in this sync."""

    ok: bool
    message: str = ""
    reason: str = ""


def condition(ctype: str, status: str, reason: str, message: str) -> dict[str, str]:
    """One condition of a `.status`."""
    return {"type": ctype, "status": status, "reason": reason, "message": message}


def conditions(outcome: Outcome, *, dns_pending: bool = False) -> list[dict[str, str]]:
    """A CR's conditions from its outcome; `dns_pending`: applied to Kubernetes, DNS not configured
    in this run."""
    if not outcome.ok:
        return [condition("Ready", "False", outcome.reason or "ReconcileFailed", outcome.message),
                condition("Degraded", "True", outcome.reason or "ReconcileFailed", outcome.message)]
    if dns_pending:
        msg = "applied to Kubernetes; DNS is configured when the agent runs with zone endpoints"
        return [condition("Ready", "Unknown", "WaitingForDns", msg),
                condition("Progressing", "True", "WaitingForDns", msg)]
    return [condition("Ready", "True", "ReconcileSucceeded", outcome.message or "Reconciled"),
            condition("Degraded", "False", "ReconcileSucceeded", "")]


def readiness(deployment: dict[str, Any],
              pods: Iterable[dict[str, Any]] = ()) -> list[dict[str, str]]:
    """A Bind9Instance's conditions from its Deployment, as Bindy counts its pods: Ready True with
    AllReady when every replica is ready (and of the current template), else False with NotReady
    (none ready) or PartiallyReady. Pods still starting are Progressing; Degraded once a pod says it
    cannot start (`pods`: the instance's pods as listed, e.g. a container waiting with ErrImagePull
    or CrashLoopBackOff, or Unschedulable: the pod, reason and message are named) or the Deployment
    says it failed (ReplicaFailure, ProgressDeadlineExceeded), with its message."""
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    want = int(spec.get("replicas", 1))
    ready = int(status.get("readyReplicas") or 0)
    if all_ready(deployment):
        return [condition("Ready", "True", "AllReady", f"All {want} pods are ready"),
                condition("Degraded", "False", "AllReady", "")]
    conds = status.get("conditions") or []
    if ready == 0:
        reason = "NotReady"
        message = "Waiting for pods to become ready" if want else "No pods are wanted (replicas: 0)"
    else:
        reason, message = "PartiallyReady", f"{min(ready, want)}/{want} pods are ready"
    # pods starting say no more than that (as Bindy): the message stays the same from run to run
    stuck = podstate.problem(pods)
    failed = "; ".join(x for x in (stuck.message() if stuck else "", _deployment_problem(
        conds, (("ReplicaFailure", "True"), ("Progressing", "False")))) if x)
    message += f": {failed}" if failed else ""
    if failed:
        return [condition("Ready", "False", reason, message),
                condition("Degraded", "True", reason, message)]
    return [condition("Ready", "False", reason, message),
            condition("Progressing", "True", reason, message),
            condition("Degraded", "False", reason, "")]


def all_ready(deployment: dict[str, Any]) -> bool:
    """Every wanted replica of the Deployment is ready and of its current template."""
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    want = int(spec.get("replicas", 1))
    current = (status.get("observedGeneration") or 0) >= (deployment.get("metadata")
                                                          or {}).get("generation", 0)
    updated = int(status.get("updatedReplicas") or 0) if current else 0
    return want > 0 and int(status.get("readyReplicas") or 0) >= want and updated >= want


def unready(live: Mapping[ObjectKey, dict[str, Any]], instances: Iterable[ObjectKey] | None = None,
            ) -> list[dict[str, Any]]:
    """The live Deployments that are not all ready: the ones whose pods are worth reading. With
    `instances`, only theirs (an instance's Deployment has its name): not a walk of every live
    object."""
    if instances is None:
        return [body for key, body in live.items() if key.kind == "Deployment"
                and not all_ready(body)]
    found = (live.get(ObjectKey("Deployment", i.namespace, i.name)) for i in instances)
    return [body for body in found if body is not None and not all_ready(body)]


def _deployment_problem(conds: list[dict[str, Any]], bad: tuple[tuple[str, str], ...]) -> str:
    """The reason and message of the first Deployment condition in `bad` (type, status) that
    holds."""
    for ctype, value in bad:
        found = next((c for c in conds if c.get("type") == ctype and c.get("status") == value),
                     None)
        if found is not None:
            return f"{found.get('reason') or ctype}: {found.get('message') or ''}".rstrip(": ")
    return ""


def is_ready(conds: list[dict[str, str]]) -> bool:
    """The conditions say Ready True."""
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


def settled(status: Mapping[str, Any]) -> bool:
    """A status that shows nothing to come back to: Ready True, not Degraded, no revision's
    rejection mark (Progressing False), a zone whose servers serve what Git wants (InSync True). A
    long-running agent computes an unsettled status again on its next run, whatever that run
    changes (agent/run/memorize.py `statuses_computed`)."""
    conds = status.get("conditions") or []
    trouble = (("Degraded", "True"), ("Progressing", "False"), ("InSync", "False"),
               ("InSync", "Unknown"))
    return is_ready(conds) and not any((c.get("type"), c.get("status")) in trouble for c in conds)
