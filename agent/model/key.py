"""ObjectKey: the identity of a Kubernetes object (kind, namespace, name) everywhere in the
agent."""

from __future__ import annotations

from typing import Any, NamedTuple

from agent.model import kinds


class ObjectKey(NamedTuple):
    """A tuple underneath, so hashing and comparing it is done in C: a revision of 100,000 records
    looks keys up millions of times."""

    kind: str
    namespace: str | None
    name: str

    def __str__(self) -> str:
        if self.namespace is None:
            return f"{self.kind}/{self.name}"
        return f"{self.kind}/{self.namespace}/{self.name}"

    def __repr__(self) -> str:
        return f"ObjectKey(kind={self.kind!r}, namespace={self.namespace!r}, name={self.name!r})"


def key_of(body: dict[str, Any]) -> ObjectKey:
    """The key of an object's body (a cluster-scoped CR's key has no namespace, whatever it
    says)."""
    meta = body["metadata"]
    namespace = meta.get("namespace")
    if body["kind"] in kinds.KINDS and not kinds.KINDS[body["kind"]].namespaced:
        namespace = None
    return ObjectKey(body["kind"], namespace, meta["name"])
