"""A desired object that is live but being deleted (a finalizer holds it) is planned as a create, by
the plain diff and by the list-by-list one alike, and never deleted again; the prune gate's base
leaves it out (it is already going). Pure: no cluster."""

from __future__ import annotations

from typing import Any

from agent.desired import hierarchy
from agent.plan import kubechange, kubediff
from tests.conftest import SAMPLE, load_dir

AGENT = "bindy-agent"


def _held(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "metadata": {**body["metadata"], "deletionTimestamp": "2026-11-27T00:00:00Z",
                                 "finalizers": ["example.com/hold"], "uid": "u"}}


def test_a_desired_object_being_deleted_is_created_again_not_deleted() -> None:
    objects = list(hierarchy.build(load_dir(SAMPLE)).objects)
    live = {o.key: kubechange.manifest(o, AGENT) for o in objects}
    deployment = next(o.key for o in objects if o.key.kind == "Deployment")
    live[deployment] = _held(live[deployment])
    plain = [(c.action, c.key, c.reason) for c in kubediff.diff(objects, live, set(live), agent=AGENT)
             if c.key.kind != "Secret"]  # (a manifest has no key data: the key Secrets differ)
    parts = [(c.action, c.key, c.reason) for c in kubediff.diff_parts([objects], live, set(live), agent=AGENT)
             if c.key.kind != "Secret"]
    assert plain == parts == [("create", deployment,
                               "being deleted (held by a finalizer): created again once it is gone")], plain


def test_an_object_already_being_deleted_is_neither_pruned_nor_counted() -> None:
    objects = list(hierarchy.build(load_dir(SAMPLE)).objects)
    live = {o.key: kubechange.manifest(o, AGENT) for o in objects}
    gone = [o.key for o in objects if o.key.kind == "ARecord"][:2]
    for key in gone:
        live[key] = _held(live[key])
    kept = [o for o in objects if o.key not in gone]
    assert [c for c in kubediff.diff(kept, live, set(live), agent=AGENT) if c.key.kind != "Secret"] == []
    assert sum(kubediff.prunable(k, b, AGENT) for k, b in live.items()) == len(live) - len(gone)
