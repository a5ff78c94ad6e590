"""Observe -> diff -> apply for the Kubernetes side of a revision, then CR status.

    install_crds(api)                 CRDs generated from the models, waited on until Established
    observe(api, desired)             live objects carrying the agent's label (+ same-named ones)
    kubediff.diff(...)                pure: create / update / delete / conflict
    apply(api, desired, observed)     parents first (owner UIDs known), prune children first,
                                      inventory, then statuses written only when they changed

A failing object marks the CR it came from Degraded and does not stop unrelated objects.
RNDC key values are generated here, once per Secret, and never logged.
"""

from __future__ import annotations

import base64
import concurrent.futures
import dataclasses
import datetime
import itertools
import json
import logging
import secrets
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from agent.desired import workloads
from agent.desired.hierarchy import CHILD_ORDER, Desired, KubeObject
from agent.errors import KubeError
from agent.model import kinds, names, schema
from agent.model.key import ObjectKey
from agent.plan import kubediff, statusdiff
from agent.reconcile.kubeapi import KubeApi

log = logging.getLogger(__name__)
WORKERS = 8  # concurrent API calls for independent objects (same tier)
T = TypeVar("T")
# what the agent creates and prunes (not: namespaces it only ensures, CRDs, its Lease, Events)
MANAGED_KINDS = [*kinds.KINDS, "ServiceAccount", "Secret", "ConfigMap", "Service", "Deployment"]


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


@dataclasses.dataclass
class Observed:
    live: dict[ObjectKey, dict[str, Any]]
    inventory: set[ObjectKey]
    inventory_body: dict[str, Any] | None
    namespaces: set[str]


def _inventory_keys(body: dict[str, Any] | None) -> set[ObjectKey]:
    if not body:
        return set()
    raw = json.loads((body.get("data") or {}).get("objects", "[]"))
    return {ObjectKey(k, n, name) for k, n, name in raw}


def observe(api: KubeApi, desired: Desired, *, agent_namespace: str = names.DEFAULT_AGENT_NAMESPACE) -> Observed:
    live: dict[ObjectKey, dict[str, Any]] = {}
    for kind in MANAGED_KINDS:
        for item in api.list(kind, label_selector=kubediff.selector(agent_namespace)):
            if item["metadata"]["name"] == names.INVENTORY_NAME and kind == "ConfigMap":
                continue
            live[kubediff.key_of(item)] = item
    namespaces = {o.key.namespace for o in desired.objects if o.key.namespace} | {agent_namespace}
    existing = {ns for ns in namespaces if api.get("Namespace", None, ns) is not None}
    # Same-named objects the agent does not manage are conflicts: one list per kind and namespace.
    unseen = {o.key for o in desired.objects if o.key not in live}
    for kind, ns in sorted({(k.kind, k.namespace) for k in unseen}, key=str):
        if ns is None:
            for key in [k for k in unseen if k.kind == kind]:
                found = api.get(kind, None, key.name)
                if found is not None:
                    live[key] = found
        elif ns in existing:
            for item in api.list(kind, namespace=ns):
                key = kubediff.key_of(item)
                if key in unseen:
                    live[key] = item
    inventory_body = (api.get("ConfigMap", agent_namespace, names.INVENTORY_NAME)
                      if agent_namespace in existing else None)
    return Observed(live, _inventory_keys(inventory_body), inventory_body, existing)


@dataclasses.dataclass
class KubeResult:
    changes: list[kubediff.KubeChange]
    live: dict[ObjectKey, dict[str, Any]] = dataclasses.field(default_factory=dict)
    failed: dict[ObjectKey, str] = dataclasses.field(default_factory=dict)
    applied: list[ObjectKey] = dataclasses.field(default_factory=list)
    deleted: list[ObjectKey] = dataclasses.field(default_factory=list)
    statuses_written: list[ObjectKey] = dataclasses.field(default_factory=list)
    conflicts: set[ObjectKey] = dataclasses.field(default_factory=set)

    @property
    def ok(self) -> bool:
        return not self.failed


def _rndc_value(obj: KubeObject, live: dict[str, Any] | None, rotate: bool) -> dict[str, Any]:
    """Fills a generated Secret's placeholders: kept from the live Secret unless rotating."""
    body = obj.body
    data = (live or {}).get("data") or {}
    filled = dict(body.get("stringData") or {})
    for k, v in filled.items():
        if v != workloads.SECRET_PLACEHOLDER:
            continue
        if k in data and not rotate:
            filled[k] = base64.b64decode(data[k]).decode()
        else:
            filled[k] = base64.b64encode(secrets.token_bytes(32)).decode()
    return filled


def _groups(changes: Iterable[kubediff.KubeChange]) -> list[list[kubediff.KubeChange]]:
    """Consecutive changes of the same apply group (tier, child order) can run concurrently."""
    def group(c: kubediff.KubeChange) -> tuple[int, int]:
        return (kubediff.tier_of(c.key.kind), CHILD_ORDER.get(c.key.kind, 0))

    return [list(g) for _, g in itertools.groupby(changes, key=group)]


def _parallel(fn: Callable[[T], None], items: list[T]) -> None:
    if len(items) <= 1:
        for item in items:
            fn(item)
        return
    with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for future in [pool.submit(fn, item) for item in items]:
            future.result()


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def apply(api: KubeApi, desired: Desired, observed: Observed, changes: list[kubediff.KubeChange], *,
          agent_namespace: str = names.DEFAULT_AGENT_NAMESPACE, rotate_rndc_keys: bool = False) -> KubeResult:
    """Applies creates/updates parents first, then prunes children first, then the inventory.
    Statuses are written separately (`write_statuses`), after the DNS steps."""
    result = KubeResult(changes, dict(observed.live))
    live = result.live
    uids = {k: v["metadata"].get("uid", "") for k, v in live.items()}
    conflicts = {c.key for c in changes if c.action == "conflict"}

    for ns in sorted({o.key.namespace for o in desired.objects if o.key.namespace} | {agent_namespace}):
        if ns not in observed.namespaces:
            api.apply({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": ns, "labels": dict(names.MANAGED_BY)}})

    if rotate_rndc_keys:
        rotate = [kubediff.KubeChange("update", o.key, o, ("data.secret",)) for o in desired.objects
                  if o.key.kind == "Secret" and o.key in live and o.key not in conflicts
                  and not any(c.key == o.key for c in changes)]
        changes = changes + rotate
    def put(change: kubediff.KubeChange) -> None:
        obj = change.desired
        assert obj is not None
        if obj.owner is not None and not uids.get(obj.owner):
            result.failed[obj.key] = f"not applied: its owner {obj.owner} could not be applied"
            return
        body = kubediff.manifest(obj, agent_namespace, uids.get(obj.owner) if obj.owner else None)
        if obj.key.kind == "Secret":
            body["stringData"] = _rndc_value(obj, live.get(obj.key), rotate_rndc_keys)
        try:
            stored = api.apply(body)
        except KubeError as exc:
            log.warning("apply %s failed: %s", obj.key, exc)
            result.failed[obj.key] = str(exc)
            return
        live[obj.key] = stored
        uids[obj.key] = stored["metadata"]["uid"]
        result.applied.append(obj.key)

    def remove(change: kubediff.KubeChange) -> None:
        try:
            if api.delete(change.key.kind, change.key.namespace, change.key.name):
                result.deleted.append(change.key)
            live.pop(change.key, None)
        except KubeError as exc:
            result.failed[change.key] = str(exc)

    for group in _groups(c for c in changes if c.action in ("create", "update") and c.desired is not None):
        _parallel(put, group)
    for group in _groups(c for c in changes if c.action == "delete"):
        _parallel(remove, group)
    order = {c.key: i for i, c in enumerate(changes)}
    result.applied.sort(key=order.__getitem__)
    result.deleted.sort(key=order.__getitem__)

    _write_inventory(api, desired, observed, agent_namespace, result)
    result.conflicts = conflicts
    return result


def _write_inventory(api: KubeApi, desired: Desired, observed: Observed, namespace: str,
                     result: KubeResult) -> None:
    keys = sorted([o.key.kind, o.key.namespace, o.key.name] for o in desired.objects
                  if o.key not in result.failed or o.key in observed.live)
    text = json.dumps(keys, separators=(",", ":"))
    if observed.inventory_body and (observed.inventory_body.get("data") or {}).get("objects") == text:
        return
    api.apply({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": names.INVENTORY_NAME, "namespace": namespace,
                            "labels": {**names.AGENT_APP_LABELS, names.AGENT_LABEL: namespace}},
               "data": {"objects": text}})


def write_statuses(api: KubeApi, wanted: dict[ObjectKey, dict[str, Any]], result: KubeResult, *,
                   revision: str | None) -> None:
    """Writes every CR status in `wanted` that differs from the live one."""
    live, conflicts = result.live, result.conflicts
    now = _now()
    todo = []
    for key, new in wanted.items():
        current = live.get(key)
        if current is None or key in conflicts:
            continue
        old = current.get("status")
        if statusdiff.changed(new, old):
            todo.append((key, statusdiff.merge_times(new, old, now)))

    def write(item: tuple[ObjectKey, dict[str, Any]]) -> None:
        key, new = item
        try:
            api.apply_status(key.kind, key.namespace, key.name, new)
            result.statuses_written.append(key)
        except KubeError as exc:
            log.warning("status of %s not written: %s", key, exc)
            result.failed.setdefault(key, f"status not written: {exc}")
            return
        conds = {c["type"]: c for c in new.get("conditions", [])}
        degraded, ready = conds.get("Degraded", {}), conds.get("Ready", {})
        if degraded.get("status") == "True":
            emit_event(api, live[key], "Warning", degraded.get("reason", "Degraded"), degraded.get("message", ""))
        elif ready.get("status") == "True":
            emit_event(api, live[key], "Normal", "Applied", f"revision {revision}: {ready.get('message', '')}")

    _parallel(write, todo)
    result.statuses_written.sort(key=str)


@dataclasses.dataclass
class SyncOutcome:
    plan_changes: list[kubediff.KubeChange]
    result: KubeResult | None  # None for a dry run


def sync(api: KubeApi, desired: Desired, *, revision: str | None, dry_run: bool = False,
         install: bool = True, agent_namespace: str = names.DEFAULT_AGENT_NAMESPACE,
         rotate_rndc_keys: bool = False) -> SyncOutcome:
    """One Kubernetes sync of a validated revision: CRDs, observe, diff, apply (statuses are
    written by the caller, after the DNS steps)."""
    if install and not dry_run:
        install_crds(api)
    observed = observe(api, desired, agent_namespace=agent_namespace)
    changes = kubediff.diff(desired.objects, observed.live, observed.inventory, agent=agent_namespace)
    if dry_run:
        return SyncOutcome(changes, None)
    result = apply(api, desired, observed, changes, agent_namespace=agent_namespace,
                   rotate_rndc_keys=rotate_rndc_keys)
    return SyncOutcome(changes, result)


def emit_event(api: KubeApi, obj: dict[str, Any], kind: str, reason: str, message: str) -> None:
    """A Kubernetes Event on a CR (kubectl describe shows it). Failing to emit is only logged."""
    meta = obj["metadata"]
    now = _now()
    body = {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": f"{meta['name']}.", "namespace": meta.get("namespace") or "default"},
        "involvedObject": {"apiVersion": obj.get("apiVersion", kinds.API_VERSION), "kind": obj.get("kind"),
                           "name": meta["name"], "namespace": meta.get("namespace"), "uid": meta.get("uid")},
        "reason": reason, "message": message[:1024], "type": kind, "count": 1,
        "firstTimestamp": now, "lastTimestamp": now, "source": {"component": "bindy-agent"},
        "reportingComponent": "bindy-agent",
    }
    try:
        api.create(body)
    except KubeError as exc:
        log.warning("event %s on %s/%s not recorded: %s", reason, obj.get("kind"), meta["name"], exc)


def mark_rejected(api: KubeApi, *, agent_namespace: str, message: str) -> int:
    """After an invalid revision: every CR this agent manages keeps its state (the last good
    revision keeps serving) and gains `Progressing=False, reason RevisionRejected` saying why.
    Returns the number of statuses written (only those that changed)."""
    written = 0
    now = _now()
    for kind in kinds.KINDS.values():
        for live in api.list(kind.name, label_selector=kubediff.selector(agent_namespace)):
            old = live.get("status") or {}
            conds = [c for c in old.get("conditions") or [] if c.get("type") != "Progressing"]
            conds.append({"type": "Progressing", "status": "False", "reason": "RevisionRejected", "message": message})
            new = {**old, "conditions": conds}
            if not statusdiff.changed(new, old):
                continue
            meta = live["metadata"]
            api.apply_status(kind.name, meta.get("namespace"), meta["name"], statusdiff.merge_times(new, old, now))
            emit_event(api, live, "Warning", "RevisionRejected", message)
            written += 1
    return written
