"""ObjectKey: the identity of a Kubernetes object (kind, namespace, name) everywhere in the agent."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, order=True)
class ObjectKey:
    kind: str
    namespace: str | None
    name: str

    def __str__(self) -> str:
        if self.namespace is None:
            return f"{self.kind}/{self.name}"
        return f"{self.kind}/{self.namespace}/{self.name}"
