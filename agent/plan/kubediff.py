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
A signed zone's DNSSEC key Secret is never deleted either: the DS published in the parent zone
points at its keys, so it outlives the zone's primaries leaving Git, and the zone itself (a zone
restored from Git signs with the same keys); see agent/desired/zonekeys.py.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from agent.desired import workloads, zonekeys
from agent.desired.hierarchy import CHILD_ORDER, KubeObject
from agent.desired.memo import NO_MEMO, Memo
from agent.model.key import ObjectKey
from agent.model.names import HASH_ANNOTATION, selector
from agent.plan.kubechange import KubeChange, is_managed, manifest, terminating, tier_of

# created when absent; never updated, conflicting or pruned
CREATE_ONLY = frozenset({"PersistentVolumeClaim"})


def _decode(value: str) -> str:
    try:
        return base64.b64decode(value).decode()
    except (ValueError, UnicodeDecodeError):
        return value


def differences(want: Any, live: Any, path: str = "") -> list[str]:
    """Field paths where `live` does not have what `want` asks for (extra live fields are fine)."""
    if isinstance(want, dict):
        return _mapping_differences(want, live, path)
    if isinstance(want, list):
        return _list_differences(want, live, path)
    return [] if want == live else [path]


def _mapping_differences(want: dict[str, Any], live: Any, path: str) -> list[str]:
    """A mapping's fields that differ: an empty value wanted may be absent, owner references are
    compared by kind and name."""
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


def _list_differences(want: list[Any], live: Any, path: str) -> list[str]:
    """A list's items that differ, or the list itself when its length does."""
    if not isinstance(live, list) or len(want) != len(live):
        return [path]
    out = []
    for i, (w, v) in enumerate(zip(want, live, strict=True)):
        out += differences(w, v, f"{path}[{i}]")
    return out


def secret_differences(want: dict[str, Any], live: dict[str, Any]) -> list[str]:
    """A Secret's stringData against its live data; generated values only need to exist."""
    out = differences({k: v for k, v in want.items() if k not in ("stringData", "data")}, live)
    data = live.get("data") or {}
    for key, value in (want.get("stringData") or {}).items():
        if key not in data or (value != workloads.SECRET_PLACEHOLDER
                               and _decode(data[key]) != value):
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
    objects = desired if isinstance(desired, Sequence) else list(desired)
    changes: list[KubeChange] = []
    wanted: list[ObjectKey] = []
    _diff_into(changes, wanted, objects, live, inventory, agent=agent, trust_hash=trust_hash)
    return changes + _prune(live, len(wanted), lambda: [o.key for o in objects], agent=agent)


# a list's changes, and how many of its objects were live
_Part = tuple[tuple[KubeChange, ...], int]


def diff_parts(parts: Sequence[Sequence[KubeObject]], live: dict[ObjectKey, dict[str, Any]],
               inventory: set[ObjectKey], *, agent: str, trust_hash: bool = False,
               memo: Memo = NO_MEMO, ) -> list[KubeChange]:
    """`diff` of the revision's objects given list by list (the infrastructure, then the CRs of each
    Git file, in apply order), for a long-running agent's `memo`. A push changes a few files of
    thousands: with `trust_hash`, a list that is the very list diffed last time (the memo's
    contract: an unchanged file is the same objects), and that had nothing to change then, still has
    nothing to change, since live is what this agent left and the agent changes only what a plan
    says. It is not read again. That holds while every object the inventory lists is live (one that
    was deleted, or failed, is diffed again: everything is); a full observe (no `trust_hash`) diffs
    every list."""
    recalled = trust_hash and not inventory.difference(live)  # (a dict: looked up, not copied)
    world = memo.token(("kube-diff-world", agent), recalled) if recalled else object()
    fresh: set[int] = set()

    def one(part: Sequence[KubeObject]) -> _Part:
        fresh.add(id(part))
        changes: list[KubeChange] = []
        wanted: list[ObjectKey] = []
        _diff_into(changes, wanted, part, live, inventory, agent=agent, trust_hash=trust_hash)
        return tuple(changes), len(wanted)

    found = memo.each(("kube-diff",), parts, one, name=lambda part: part[0].key if part else None,
                      shared=(world,))
    changes: list[KubeChange] = []
    present = 0
    for part, (done, count) in zip(parts, found, strict=True):
        # it had changes last time, which were applied since: diffed again
        if done and id(part) not in fresh:
            done, count = one(part)
        changes += done
        present += count
    return changes + _prune(live, present, lambda: [o.key for part in parts for o in part],
                            agent=agent)


def _prune(live: dict[ObjectKey, dict[str, Any]], present: int,
           wanted: Callable[[], Iterable[ObjectKey]], *, agent: str) -> list[KubeChange]:
    """The deletes, children first: what the agent made that the revision no longer has. A
    revision's keys are unique (a duplicate is a validation error): when as many of them are live as
    there are live objects, none is left over, and the revision's keys are not gathered."""
    left = live.keys() - set(wanted()) if present < len(live) else ()
    prune = [k for k in left if prunable(k, live[k], agent)]
    prune.sort(key=lambda k: (-tier_of(k.kind), -CHILD_ORDER.get(k.kind, 0), k.kind,
                              k.namespace or "", k.name))
    return [KubeChange("delete", k, None) for k in prune]


def _absent_why(current: dict[str, Any] | None, listed: bool) -> str:
    if current is not None:
        return "being deleted (held by a finalizer): created again once it is gone"
    return "deleted by hand" if listed else ""


def prunable(key: ObjectKey, body: dict[str, Any], agent: str) -> bool:
    """Made by this agent, not already being deleted, and removed when the revision no longer has it
    (a claim never is, nor a zone's DNSSEC key Secret). The prune gate's base counts these: a claim
    is live after a run remembered it and absent after a full observe (its kind is not listed), and
    an object a finalizer holds after its delete is listed but not remembered, so counting either
    made the same revision pass or be refused depending on how the run saw the cluster; a key Secret
    is never deleted, so counting it would let a prune pass that the same revision without it
    refuses."""
    return (key.kind not in CREATE_ONLY and not zone_keys(key, body) and is_managed(body, agent)
            and not terminating(body))


def zone_keys(key: ObjectKey, body: dict[str, Any]) -> bool:
    """A signed zone's DNSSEC key Secret (agent/desired/zonekeys.py), which the agent never
    deletes."""
    return key.kind == "Secret" and ((body.get("metadata") or {}).get("labels")
                                     or {}).get(zonekeys.LABEL) == "true"


def _diff_into(changes: list[KubeChange], wanted: list[ObjectKey], desired: Iterable[KubeObject],
               live: dict[ObjectKey, dict[str, Any]], inventory: set[ObjectKey], *, agent: str,
               trust_hash: bool) -> None:
    """The creates, updates and conflicts of `desired` into `changes`; the keys found live into
    `wanted`."""
    for obj in desired:
        current = live.get(obj.key)
        if current is None or terminating(current):
            changes.append(KubeChange("create", obj.key, obj, drift=obj.key in inventory,
                                      reason=_absent_why(current, obj.key in inventory)))
            continue
        wanted.append(obj.key)
        if trust_hash and _applied_hash(current) == obj.hash:
            continue
        if obj.key.kind in CREATE_ONLY:
            continue
        if not is_managed(current, agent):
            changes.append(KubeChange("conflict", obj.key, obj,
                                      reason="exists but was not created by this "
                                      f"agent (no labels {selector(agent)}); not touched"))
            continue
        body = manifest(obj, agent)
        fields = (secret_differences(body, current) if obj.key.kind == "Secret"
                  else differences(body, current))
        if fields:
            drift = _applied_hash(current) == obj.hash
            changes.append(KubeChange("update", obj.key, obj, tuple(fields), drift=drift,
                                      reason="edited by hand" if drift else ""))
