"""A planned change to one Kubernetes object, and the manifest apply sends for it (pure): the
desired body with the agent's labels, the hash of what is applied, and the owner reference. Which
objects are the agent's (both labels), and the order objects are applied in (parents first). What
the plan creates besides the revision's objects: a Bindy CRD (`CrdChange`), a namespace
(`namespace_body`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from agent.desired.hierarchy import (
    TIER_CHILD,
    TIER_CLUSTER,
    TIER_INSTANCE,
    TIER_PROVIDER,
    TIER_RECORD,
    TIER_ZONE,
    KubeObject,
)
from agent.model import kinds
from agent.model.key import ObjectKey
from agent.model.names import (
    AGENT_LABEL,
    HASH_ANNOTATION,
    MANAGED_BY,
    MANAGED_BY_KEY,
    MANAGED_BY_VALUE,
)

TIERS = {"ClusterBind9Provider": TIER_PROVIDER, "Bind9Cluster": TIER_CLUSTER,
         "Bind9Instance": TIER_INSTANCE, "DNSZone": TIER_ZONE,
         **{k.name: TIER_RECORD for k in kinds.RECORD_KINDS}}


def tier_of(kind: str) -> int:
    return TIERS.get(kind, TIER_CHILD)


def is_managed(live: dict[str, Any], agent: str) -> bool:
    """Created by this agent: both labels present. Anything else is never changed or pruned."""
    labels = live.get("metadata", {}).get("labels") or {}
    return bool(labels.get(MANAGED_BY_KEY) == MANAGED_BY_VALUE and labels.get(AGENT_LABEL) == agent)


def terminating(body: dict[str, Any]) -> bool:
    """Being deleted: a finalizer holds it until its controller lets go; then it is gone."""
    return bool(body.get("metadata", {}).get("deletionTimestamp"))


def manifest(obj: KubeObject, agent: str, owner_uid: str | None = None) -> dict[str, Any]:
    """The body to apply: the desired object plus the agent's labels, hash and owner reference."""
    body = obj.body_copy()
    meta = body.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), MANAGED_BY_KEY: MANAGED_BY_VALUE,
                      AGENT_LABEL: agent}
    if obj.owner is not None:
        owner_api = kinds.API_VERSION if obj.owner.kind in kinds.KINDS else "v1"
        meta["ownerReferences"] = [{"apiVersion": owner_api, "kind": obj.owner.kind,
                                    "name": obj.owner.name, "uid": owner_uid or "",
                                    "controller": True, "blockOwnerDeletion": True}]
    meta["annotations"] = {**(meta.get("annotations") or {}), HASH_ANNOTATION: obj.hash}
    return body


@dataclasses.dataclass(frozen=True, slots=True)
class KubeChange:
    action: str  # "create" | "update" | "delete" | "conflict"
    key: ObjectKey
    desired: KubeObject | None
    fields: tuple[str, ...] = ()
    drift: bool = False
    reason: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class CrdChange:
    """One of Bindy's CRDs the plan creates or updates (agent/plan/crddiff.py): the body apply
    sends, generated from the models, and for an update the fields the installed one differs in."""

    action: str  # "create" | "update"
    body: dict[str, Any]
    fields: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])


def namespace_body(name: str) -> dict[str, Any]:
    """The Namespace apply creates (the plan lists it: `Plan.namespaces`)."""
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": dict(MANAGED_BY)}}
