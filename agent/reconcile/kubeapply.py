"""Executes the approved Kubernetes part of a plan, then writes CR statuses computed from the
outcome.

    Bindy's CRDs the plan creates or updates (agent/reconcile/crdapply.py, waited on until served)
    -> namespaces the plan creates -> creates/updates parents first (owner UIDs known), independent
    objects of one tier concurrently -> prunes children first -> the inventory the plan lists

A failing object marks the CR it came from Degraded and does not stop unrelated objects. RNDC key
values are generated here, once per Secret, and never logged. Which CRDs are written, which
namespaces are created (only with --create-namespaces: the agent's account need not be able to
write them), which objects cannot be applied and what the inventory lists are decided by the plan
(agent/plan/build.py).
"""

from __future__ import annotations

import base64
import concurrent.futures
import dataclasses
import gzip
import itertools
import json
import logging
import secrets
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from agent.clients.deadline import UNBOUNDED, Deadline
from agent.clients.kubeapi import KubeApi
from agent.desired import workloads
from agent.desired import zonekeys as zone_keys
from agent.desired.hierarchy import CHILD_ORDER, KubeObject
from agent.errors import ApplyError, KubeError
from agent.model import names
from agent.model.key import ObjectKey
from agent.model.observed import KubeObserved
from agent.plan import kubechange, rotation
from agent.plan.changes import Plan
from agent.reconcile import crdapply, events

log = logging.getLogger(__name__)
WORKERS = 8  # concurrent API calls for independent objects (same tier)
T = TypeVar("T")
# a larger inventory is stored gzip-compressed (a ConfigMap holds at most 1 MiB)
_PLAIN_LIMIT = 256 * 1024


@dataclasses.dataclass(frozen=True)
class KubeApplyOptions:
    agent_namespace: str = names.DEFAULT_AGENT_NAMESPACE
    rotate_rndc_keys: bool = False


@dataclasses.dataclass
class KubeResult:
    changes: list[kubechange.KubeChange]
    live: dict[ObjectKey, dict[str, Any]] = dataclasses.field(default_factory=dict)
    failed: dict[ObjectKey, str] = dataclasses.field(default_factory=dict)
    applied: list[ObjectKey] = dataclasses.field(default_factory=list)
    deleted: list[ObjectKey] = dataclasses.field(default_factory=list)
    statuses_written: list[ObjectKey] = dataclasses.field(default_factory=list)
    conflicts: set[ObjectKey] = dataclasses.field(default_factory=set)
    # as written (or kept) by this run
    inventory: set[ObjectKey] = dataclasses.field(default_factory=set)
    inventory_text: str | None = None
    namespaces: list[str] = dataclasses.field(default_factory=list)  # created by this run

    @property
    def ok(self) -> bool:
        return not self.failed


def _rndc_value(obj: KubeObject, live: dict[str, Any] | None,
                rotate: bool = False) -> dict[str, Any]:
    """Fills a generated Secret's placeholders: kept from the live Secret (generated when absent); a
    rotation (plan/rotation.py, which `rotate` no longer bypasses) asks for a new `secret` and keeps
    the live one as `previous-secret`."""
    data = (live or {}).get("data") or {}
    filled = dict(obj.body.get("stringData") or {})
    for k, v in filled.items():
        if v == rotation.CURRENT_SECRET:
            filled[k] = base64.b64decode(data.get("secret", "")).decode()
        elif v == rotation.NEW_SECRET:
            filled[k] = base64.b64encode(secrets.token_bytes(32)).decode()
        elif v != workloads.SECRET_PLACEHOLDER or k == workloads.KEY_FILE:
            continue
        elif k in data:
            filled[k] = base64.b64decode(data[k]).decode()
        else:
            filled[k] = base64.b64encode(secrets.token_bytes(32)).decode()
    if filled.get(workloads.KEY_FILE) == workloads.SECRET_PLACEHOLDER:
        # the key block, from what is above
        filled[workloads.KEY_FILE] = workloads.key_block(filled["key-name"], filled["algorithm"],
                                                         filled["secret"])
    return filled


def _groups(changes: Iterable[kubechange.KubeChange]) -> list[list[kubechange.KubeChange]]:
    """Consecutive changes of the same apply group (tier, child order) can run concurrently."""
    def group(c: kubechange.KubeChange) -> tuple[int, int]:
        return (kubechange.tier_of(c.key.kind), CHILD_ORDER.get(c.key.kind, 0))

    return [list(g) for _, g in itertools.groupby(changes, key=group)]


def parallel(fn: Callable[[T], None], items: list[T]) -> None:
    if len(items) <= 1:
        for item in items:
            fn(item)
        return
    with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for future in [pool.submit(fn, item) for item in items]:
            future.result()


class _Apply:
    def __init__(self, api: KubeApi, observed: KubeObserved, changes: list[kubechange.KubeChange],
                 options: KubeApplyOptions, deadline: Deadline) -> None:
        self.api, self.options, self.deadline = api, options, deadline
        self.result = KubeResult(changes, dict(observed.live))
        self.observed_live = observed.live
        # the owners' uids, read from live when first asked (few of 100,000)
        self.uids: dict[ObjectKey, str] = {}
        self.result.conflicts = {c.key for c in changes if c.action == "conflict"}

    def put(self, change: kubechange.KubeChange) -> None:
        obj, result = change.desired, self.result
        assert obj is not None
        owner_uid = self.uid(obj.owner) if obj.owner is not None else None
        if obj.owner is not None and not owner_uid:
            result.failed[obj.key] = f"not applied: its owner {obj.owner} could not be applied"
            return
        body = kubechange.manifest(obj, self.options.agent_namespace, owner_uid)
        labels = body["metadata"].get("labels") or {}
        if obj.key.kind == "Secret" and labels.get(zone_keys.LABEL) == "true":
            # here: cryptography is loaded only where a zone is signed
            from agent.reconcile import zonekeys

            # DNSSEC keys
            body["stringData"] = zonekeys.fill(obj.body["stringData"], result.live.get(obj.key))
        elif obj.key.kind == "Secret":
            body["stringData"] = _rndc_value(obj, result.live.get(obj.key),
                                             self.options.rotate_rndc_keys)
        try:
            self.deadline.check(f"applying {obj.key}")
            stored = self.api.apply(body)
            previous = names.PREVIOUS_SECRET_KEY
            if obj.key.kind == "Secret" and previous in (stored.get("data") or {}) \
                    and previous not in body["stringData"]:
                # a rolled-out rotation's previous key goes
                stored = self.api.merge_patch("Secret", obj.key.namespace, obj.key.name,
                                              {"data": {previous: None}})
        except ApplyError as exc:  # refused by the server, or out of time
            log.warning("apply %s failed: %s", obj.key, exc)
            result.failed[obj.key] = str(exc)
            return
        if kubechange.terminating(stored):
            # it goes once its finalizers let go; the next run creates it
            held = stored["metadata"].get("finalizers")
            result.failed[obj.key] = (f"{obj.key} is being deleted (finalizers {held}): it is "
                                      "created again by the first run after it is gone")
            return
        result.live[obj.key] = stored
        self.uids[obj.key] = stored["metadata"]["uid"]
        result.applied.append(obj.key)

    def uid(self, key: ObjectKey) -> str:
        """The uid of `key` as this run applied it, else as it is live now ("": neither), read once:
        the run may have remembered the cluster, and an owner deleted and made again since (a
        restore) has a new uid; a child owned by the old one would be deleted by the garbage
        collector at once."""
        found = self.uids.get(key)
        if found is None:
            live = (self.api.get(key.kind, key.namespace, key.name)
                    if key in self.observed_live else None)
            found = self.uids[key] = live["metadata"].get("uid", "") if live is not None else ""
        return found

    def remove(self, change: kubechange.KubeChange) -> None:
        key = change.key
        try:
            self.deadline.check(f"deleting {key}")
            gone = self._delete(key, self.observed_live.get(key))
        except ApplyError as exc:
            self.result.failed[key] = str(exc)
            return
        if gone is not None:
            if gone:
                self.result.deleted.append(key)
            self.result.live.pop(key, None)

    def _delete(self, key: ObjectKey, seen: dict[str, Any] | None) -> bool | None:
        """Deletes the object the plan saw (its uid): True, or False if it was gone. One made again
        under its name since (the plan may have remembered the cluster) is read: deleted as well if
        it is the agent's, else left alone (None) and remembered as someone else's."""
        try:
            return self.api.delete(key.kind, key.namespace, key.name, uid=_uid(seen))
        except KubeError as exc:
            if exc.reason != "conflict" or seen is None:
                raise
        now = self.api.get(key.kind, key.namespace, key.name)
        if now is None:
            return False
        if not kubechange.is_managed(now, self.options.agent_namespace):
            log.info("not deleting %s: made again since by someone else", key)
            self.result.live[key] = now
            return None
        return self.api.delete(key.kind, key.namespace, key.name, uid=_uid(now))


def _uid(body: dict[str, Any] | None) -> str | None:
    return body["metadata"].get("uid") if body is not None else None


def apply(api: KubeApi, plan: Plan, observed: KubeObserved, *, options: KubeApplyOptions,
          deadline: Deadline = UNBOUNDED,
          progress: Callable[[int, int], None] | None = None) -> KubeResult:
    """Executes the plan's Kubernetes part: its CRDs (an error there stops the step: nothing else
    can be applied before they are served), the namespaces it creates, then creates/updates parents
    first, then prunes children first, then the inventory it lists. Statuses are written separately
    (`write_statuses`), after the DNS steps. `progress` hears (changes done, changes) after each
    group."""
    changes = plan.kube or []
    run = _Apply(api, observed, changes, options, deadline)
    crdapply.apply(api, plan.crds, deadline=deadline)
    for ns in plan.namespaces:
        deadline.check(f"creating namespace {ns}")
        api.apply(kubechange.namespace_body(ns))
        run.result.namespaces.append(ns)
    run.result.failed.update(plan.blocked)
    puts = _groups(c for c in changes if c.action in ("create", "update") and c.desired is not None)
    deletes = _groups(c for c in changes if c.action == "delete")
    done, total = 0, sum(len(g) for g in puts + deletes)

    def tick(group: list[kubechange.KubeChange]) -> None:
        nonlocal done
        done += len(group)
        if progress is not None:
            progress(done, total)

    for group in puts:
        parallel(run.put, [c for c in group if c.key not in plan.blocked])
        tick(group)
    for group in deletes:
        parallel(run.remove, group)
        tick(group)
    order = {c.key: i for i, c in enumerate(changes)}
    run.result.applied.sort(key=order.__getitem__)
    run.result.deleted.sort(key=order.__getitem__)
    run.result.inventory, run.result.inventory_text = observed.inventory, observed.inventory_text
    if plan.inventory is not None:
        _write_inventory(api, plan.inventory, observed, options.agent_namespace, run.result)
    return run.result


def _write_inventory(api: KubeApi, inventory: list[ObjectKey], observed: KubeObserved,
                     namespace: str, result: KubeResult) -> None:
    """The plan's inventory, less the objects this run failed to create (a failed update stays
    listed). It is a set: the same keys as last written are not written again (nor rendered: 100,000
    keys)."""
    keys = inventory
    if result.failed:
        keys = [k for k in inventory if k not in result.failed or k in observed.live]
    if (observed.inventory_text is not None and len(keys) == len(observed.inventory)
            and observed.inventory.issuperset(keys)):
        return  # result.inventory and its text are the observed ones
    keys = sorted(keys, key=lambda k: (k.kind, k.namespace or "", k.name))
    text = json.dumps([[k.kind, k.namespace, k.name] for k in keys], separators=(",", ":"))
    result.inventory = set(keys)
    result.inventory_text = text
    if observed.inventory_text == text:
        return
    labels = {**names.AGENT_APP_LABELS, names.AGENT_LABEL: namespace}
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": names.INVENTORY_NAME, "namespace": namespace,
                                         "labels": labels}}
    if len(text) > _PLAIN_LIMIT:
        compressed = gzip.compress(text.encode(), 6)
        body["binaryData"] = {"objects.gz": base64.b64encode(compressed).decode()}
    else:
        body["data"] = {"objects": text}
    api.apply(body)


def _event(api: KubeApi, obj: dict[str, Any], new: dict[str, Any], old: dict[str, Any],
           revision: str | None) -> None:
    """An Event when a CR becomes Degraded (or its reason changes) or becomes Ready: transitions
    only, so that a commit costs events for what it changed."""
    conds = {c["type"]: c for c in new.get("conditions", [])}
    before = {c.get("type"): c for c in old.get("conditions") or []}
    degraded, ready = conds.get("Degraded", {}), conds.get("Ready", {})
    was_degraded, was_ready = before.get("Degraded", {}), before.get("Ready", {})
    if degraded.get("status") == "True":
        was = (was_degraded.get("status"), was_degraded.get("reason"))
        if was != ("True", degraded.get("reason")):
            events.emit_event(api, obj, "Warning", degraded.get("reason", "Degraded"),
                              degraded.get("message", ""))
    elif ready.get("status") == "True" and was_ready.get("status") != "True":
        events.emit_event(api, obj, "Normal", "Applied",
                          f"revision {revision}: {ready.get('message', '')}")


def write_statuses(api: KubeApi, todo: list[tuple[ObjectKey, dict[str, Any], dict[str, Any]]],
                   result: KubeResult, *, revision: str | None,
                   deadline: Deadline = UNBOUNDED) -> None:
    """Writes each CR status of `todo` (the CR, its new status, its live one: those that differ,
    agent/plan/statusdiff.to_write), with an Event when the CR became Degraded or Ready."""
    live = result.live

    def write(item: tuple[ObjectKey, dict[str, Any], dict[str, Any]]) -> None:
        key, new, old = item
        try:
            deadline.check(f"writing the status of {key}")
            api.apply_status(key.kind, key.namespace, key.name, new)
            result.statuses_written.append(key)
            # what the cluster now holds (memory of a long run)
            live[key] = {**live[key], "status": new}
        except ApplyError as exc:
            log.warning("status of %s not written: %s", key, exc)
            result.failed.setdefault(key, f"status not written: {exc}")
            return
        _event(api, live[key], new, old, revision)

    parallel(write, todo)
    result.statuses_written.sort(key=str)
