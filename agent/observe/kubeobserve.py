"""Reads the Kubernetes side of the world before planning.

The objects the agent manages, the same-named objects it must not touch, its inventory, which
namespaces exist, and Bindy's CRDs as installed (when the run installs them)."""

from __future__ import annotations

import base64
import gzip
import itertools
import json
import logging
from collections.abc import Iterable
from typing import Any

from agent.clients.kubeapi import KubeApi
from agent.desired.hierarchy import Desired
from agent.errors import KubeError
from agent.model import kinds, names
from agent.model.key import ObjectKey, key_of
from agent.model.observed import KubeObserved

log = logging.getLogger(__name__)

# what the agent creates and prunes (not: namespaces, CRDs, its Lease, Events; nor the
# PersistentVolumeClaims it creates, which it never prunes: one it wants is looked up by name)
MANAGED_KINDS = [*kinds.KINDS, "ServiceAccount", "Secret", "ConfigMap", "Service", "Deployment"]


def inventory_text(body: dict[str, Any] | None) -> str | None:
    """The inventory ConfigMap's list of objects (JSON), gzip-compressed in binaryData when
    large."""
    if not body:
        return None
    binary = body.get("binaryData") or {}
    if "objects.gz" in binary:
        return gzip.decompress(base64.b64decode(binary["objects.gz"])).decode()
    text = (body.get("data") or {}).get("objects")
    return str(text) if text is not None else None


def _inventory_keys(text: str | None) -> set[ObjectKey]:
    return {ObjectKey(k, n, name) for k, n, name in json.loads(text or "[]")}


def secret_labels(api: KubeApi,
                  wanted: set[tuple[str, str]]) -> dict[tuple[str, str], dict[str, str] | None]:
    """The live labels of each referenced Secret (None: it does not exist), read as metadata only so
    that no Secret value is ever fetched. One that cannot be read is left out: the policy then
    refuses the reference as not observed."""
    labels: dict[tuple[str, str], dict[str, str] | None] = {}
    for namespace, name in sorted(wanted):
        try:
            meta = api.get_metadata("Secret", namespace, name)
        except KubeError as exc:
            log.warning("cannot read Secret %s/%s to check the reference to it: %s", namespace,
                        name, exc)
            continue
        found = (meta or {}).get("metadata", {}).get("labels") or {}
        labels[(namespace, name)] = dict(found) if meta else None
    return labels


def _essence(pod: dict[str, Any]) -> dict[str, Any]:
    """What is kept of a listed pod: its name, namespace, labels and deletion, and its status (never
    its spec, environment included)."""
    meta = pod.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in ("name", "namespace", "labels", "deletionTimestamp")
                         if k in meta},
            "status": pod.get("status") or {}}


def pods(api: KubeApi, deployments: list[dict[str, Any]]) -> dict[ObjectKey, list[dict[str, Any]]]:
    """The pods of each Deployment (by its selector's labels), metadata and status only, keyed by
    the Deployment: one list per Deployment, asked only for those that are not ready. A list the
    agent may not make (its Role without `list pods`, a namespace not allowed) is logged and left
    out: the status then says only what the Deployment says."""
    out: dict[ObjectKey, list[dict[str, Any]]] = {}
    for body in deployments:
        key = key_of(body)
        labels = ((body.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        allowed = api.namespaces is None or key.namespace in api.namespaces
        if not labels or key.namespace is None or not allowed:
            continue
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        try:
            listed = api.list("Pod", label_selector=selector, namespace=key.namespace)
            out[key] = [_essence(p) for p in listed]
        except KubeError as exc:
            log.warning("cannot list the pods of %s to say why they are not ready: %s", key, exc)
    return out


def served_crs(api: KubeApi, agent_namespace: str) -> list[dict[str, Any]]:
    """Every Bindy CR this agent manages, as it is live (with its status)."""
    selector = names.selector(agent_namespace)
    return [{"kind": kind.name, **live} for kind in kinds.KINDS.values()
            for live in api.list(kind.name, label_selector=selector)]


def _managed(api: KubeApi, agent_namespace: str, namespaces: set[str] | None,
             of: list[str] = MANAGED_KINDS) -> dict[ObjectKey, dict[str, Any]]:
    """Everything of the kinds `of` carrying the agent's labels: cluster-wide, or only in
    `namespaces` when the agent may only see those (cluster-scoped kinds are always listed)."""
    live: dict[ObjectKey, dict[str, Any]] = {}
    selector = names.selector(agent_namespace)
    for kind in of:
        namespaced = kind not in kinds.KINDS or kinds.KINDS[kind].namespaced
        scopes: list[str | None] = ([*sorted(namespaces)] if namespaces is not None and namespaced
                                    else [None])
        for scope in scopes:
            for item in api.list(kind, label_selector=selector, namespace=scope):
                if item["metadata"]["name"] != names.INVENTORY_NAME or kind != "ConfigMap":
                    live[key_of(item)] = item
    return live


def _conflicts(api: KubeApi, desired: Desired, live: dict[ObjectKey, dict[str, Any]],
               existing: set[str]) -> None:
    """Same-named objects the agent does not manage are conflicts: one list per kind and
    namespace."""
    unseen = {o.key for o in desired.objects if o.key not in live}
    for kind, ns in sorted({(k.kind, k.namespace) for k in unseen}, key=str):
        if ns is None:
            for key in [k for k in unseen if k.kind == kind]:
                found = api.get(kind, None, key.name)
                if found is not None:
                    live[key] = found
        elif ns in existing:
            for item in api.list(kind, namespace=ns):
                key = key_of(item)
                if key in unseen:
                    live[key] = item


def crds(api: KubeApi) -> dict[str, dict[str, Any] | None]:
    """Each of Bindy's 12 CRDs by name, as installed (None: not installed)."""
    return {kind.crd_name: api.get("CustomResourceDefinition", None, kind.crd_name)
            for kind in kinds.KINDS.values()}


def observe(api: KubeApi, desired: Desired, *, agent_namespace: str = names.DEFAULT_AGENT_NAMESPACE,
            namespaces: set[str] | None = None, with_crds: bool = False) -> KubeObserved:
    """The live objects for `plan.build`; `namespaces` limits the lists to the allowed namespaces;
    `with_crds`: Bindy's CRDs are read too (the run installs them: the plan creates or updates
    them)."""
    live = _managed(api, agent_namespace, namespaces)
    wanted = {o.key.namespace for o in desired.objects if o.key.namespace} | {agent_namespace}
    existing = {ns for ns in wanted if api.get("Namespace", None, ns) is not None}
    _conflicts(api, desired, live, existing)
    text = inventory_text(api.get("ConfigMap", agent_namespace, names.INVENTORY_NAME)
                          if agent_namespace in existing else None)
    return KubeObserved(live, _inventory_keys(text), existing, text,
                        crds(api) if with_crds else None)


def recall(api: KubeApi, desired: Desired, remembered: KubeObserved, *,
           agent_namespace: str = names.DEFAULT_AGENT_NAMESPACE,
           recheck: Iterable[ObjectKey] = ()) -> KubeObserved:
    """What the last run left in the cluster, without listing it again (a long-running agent between
    full observes): only objects and namespaces new to this revision are looked up, what the last
    run failed on is read again (`recheck`, see `_read_again`), and the agent's Deployments are
    listed again: their status is the cluster's (pods ready or crashing, a rollout done), which the
    instances' statuses and the RNDC key rotation read; one deleted by hand is made again. Other
    hand edits are found by the next full observe."""
    live, namespaces = dict(remembered.live), set(remembered.namespaces)
    if recheck:
        live = _read_again(api, live, namespaces, recheck)
    live.update(_deployments(api, desired, live, agent_namespace))
    wanted = {o.key.namespace for o in desired.objects if o.key.namespace} | {agent_namespace}
    for ns in sorted(wanted - namespaces):
        if api.get("Namespace", None, ns) is not None:
            namespaces.add(ns)
    for obj in desired.objects:
        if obj.key not in live and obj.key.namespace in namespaces | {None}:
            found = api.get(obj.key.kind, obj.key.namespace, obj.key.name)
            if found is not None:
                live[obj.key] = found
    # a new one: `remembered` is never changed in place
    return KubeObserved(live, remembered.inventory, namespaces, remembered.inventory_text)


def _deployments(api: KubeApi, desired: Desired, live: dict[ObjectKey, dict[str, Any]],
                 agent_namespace: str) -> dict[ObjectKey, dict[str, Any]]:
    """The revision's Deployments as the cluster has them now: one list in each namespace that has
    one (and the connection may read); one that is gone, or not the agent's, leaves `live` (and is
    looked up again as new)."""
    wanted = [o.key for o in itertools.islice(desired.objects, desired.infra)
              if o.key.kind == "Deployment"]
    scopes = {k.namespace for k in wanted if k.namespace}
    if api.namespaces is not None:
        scopes.intersection_update(api.namespaces)
    now = _managed(api, agent_namespace, scopes, ["Deployment"]) if scopes else {}
    for key in wanted:
        if key not in now:
            live.pop(key, None)
    return now


def _read_again(api: KubeApi, live: dict[ObjectKey, dict[str, Any]], namespaces: set[str],
                recheck: Iterable[ObjectKey]) -> dict[ObjectKey, dict[str, Any]]:
    """Each object of `recheck` as it is now (what a run failed to delete: gone since, or made again
    by someone else), and each namespace in it (where a write failed): one that is gone takes every
    remembered object in it along (`namespaces` is updated)."""
    gone: set[str] = set()
    for key in recheck:
        if key.kind == "Namespace":
            if api.get("Namespace", None, key.name) is None:
                gone.add(key.name)
            continue
        found = api.get(key.kind, key.namespace, key.name)
        if found is None:
            live.pop(key, None)
        else:
            live[key] = found
    if not gone:
        return live
    namespaces.difference_update(gone)
    return {k: v for k, v in live.items() if k.namespace not in gone}
