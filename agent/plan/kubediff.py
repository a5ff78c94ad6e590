"""The pure diff between desired Kubernetes objects and the live ones (no I/O).

Only meaningful fields are compared: the ones the agent sets. Whatever the server fills in
(status, managedFields, resourceVersion, defaults such as a container's terminationMessagePath)
is ignored, because the live object is only compared where the desired one has a value. Every
applied object carries the hash of what was applied; a live object whose hash matches the
desired one but whose fields differ was edited by hand, which the plan calls drift.

    desired, live           -> change
    present, absent         -> create   (drift if the inventory says the agent created it)
    present, ours, differs  -> update   (drift when the hash matches, i.e. edited by hand)
    present, not ours       -> conflict (never touched)
    absent,  ours           -> delete   (children before parents)

A PersistentVolumeClaim is created when absent and otherwise left alone, whoever made it: never
updated (a resize or a new class is the claim owner's decision), never deleted (it holds data).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

from agent.desired import workloads
from agent.desired.hierarchy import CHILD_ORDER, KubeObject
from agent.model.key import ObjectKey
from agent.model.names import HASH_ANNOTATION
from agent.plan.kubechange import KubeChange, is_managed, manifest, selector, tier_of

CREATE_ONLY = frozenset({"PersistentVolumeClaim"})  # created when absent; never updated, conflicting or pruned


def _decode(value: str) -> str:
    try:
        return base64.b64decode(value).decode()
    except (ValueError, UnicodeDecodeError):
        return value


def differences(want: Any, live: Any, path: str = "") -> list[str]:
    """Field paths where `live` does not have what `want` asks for (extra live fields are fine)."""
    if isinstance(want, dict):
        if not isinstance(live, dict):
            return [path or "."]
        out: list[str] = []
        for key, value in want.items():
            sub = f"{path}.{key}" if path else key
            if key == "ownerReferences" and isinstance(value, list):
                names = [(r["kind"], r["name"]) for r in value]
                if names != [(r.get("kind"), r.get("name")) for r in live.get(key) or []]:
                    out.append(sub)
            elif key not in live:
                if value not in ({}, [], None):
                    out.append(sub)
            else:
                out += differences(value, live[key], sub)
        return out
    if isinstance(want, list):
        if not isinstance(live, list) or len(want) != len(live):
            return [path]
        out = []
        for i, (w, v) in enumerate(zip(want, live, strict=True)):
            out += differences(w, v, f"{path}[{i}]")
        return out
    return [] if want == live else [path]


def secret_differences(want: dict[str, Any], live: dict[str, Any]) -> list[str]:
    """A Secret's stringData against its live data; generated values only need to exist."""
    out = differences({k: v for k, v in want.items() if k not in ("stringData", "data")}, live)
    data = live.get("data") or {}
    for key, value in (want.get("stringData") or {}).items():
        if key not in data or (value != workloads.SECRET_PLACEHOLDER and _decode(data[key]) != value):
            out.append(f"data.{key}")
    return out


def _applied_hash(live: dict[str, Any]) -> str | None:
    return (live.get("metadata", {}).get("annotations") or {}).get(HASH_ANNOTATION)


def diff(desired: Iterable[KubeObject], live: dict[ObjectKey, dict[str, Any]],
         inventory: set[ObjectKey], *, agent: str, trust_hash: bool = False) -> list[KubeChange]:
    """Changes in apply order: creates/updates parents first, then deletes children first.

    With `trust_hash` (live is what this agent applied, remembered rather than read back), an object
    whose applied hash equals the desired one is taken as unchanged without comparing its fields:
    the next full observe compares them and finds hand edits."""
    changes: list[KubeChange] = []
    wanted: set[ObjectKey] = set()
    for obj in desired:
        wanted.add(obj.key)
        current = live.get(obj.key)
        if trust_hash and current is not None and _applied_hash(current) == obj.hash:
            continue
        if current is None:
            changes.append(KubeChange("create", obj.key, obj, drift=obj.key in inventory,
                                      reason="deleted by hand" if obj.key in inventory else ""))
            continue
        if obj.key.kind in CREATE_ONLY:
            continue
        if not is_managed(current, agent):
            changes.append(KubeChange("conflict", obj.key, obj, reason="exists but was not created by this "
                                      f"agent (no labels {selector(agent)}); not touched"))
            continue
        body = manifest(obj, agent)
        fields = secret_differences(body, current) if obj.key.kind == "Secret" else differences(body, current)
        if fields:
            drift = _applied_hash(current) == obj.hash
            changes.append(KubeChange("update", obj.key, obj, tuple(fields), drift=drift,
                                      reason="edited by hand" if drift else ""))
    prune = [k for k, body in live.items() if k not in wanted and k.kind not in CREATE_ONLY and is_managed(body, agent)]
    prune.sort(key=lambda k: (-tier_of(k.kind), -CHILD_ORDER.get(k.kind, 0), k.kind, k.namespace or "", k.name))
    changes += [KubeChange("delete", k, None) for k in prune]
    return changes
