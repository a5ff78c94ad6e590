"""What the agent remembers between runs.

- DNS ownership: which zones it placed on which instance, and which RRsets it wrote. Only what is
  listed here is ever deleted.
- The revision last applied (the last good one keeps serving), the last one seen and its outcome,
  and when the world was last fully reconciled - so an unchanged revision is a cheap no-op.

Kept in a local JSON file for runs without a cluster, or in a ConfigMap in the agent's namespace
(written only when it changed).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
from typing import Any, Protocol

from agent.errors import ConfigError
from agent.model import names
from agent.plan.rrsetdiff import Key
from agent.reconcile.kubeapi import KubeApi


@dataclasses.dataclass
class AgentState:
    zones: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)  # zone -> {instance: role}
    records: dict[str, set[Key]] = dataclasses.field(default_factory=dict)  # zone -> managed RRsets
    applied: str | None = None  # the last revision applied (fully or partly): what is serving
    seen: str | None = None  # the last revision a run looked at
    outcome: str | None = None  # that run's outcome: applied / partial / rejected
    reconciled_at: float = 0.0  # when the last full reconcile (observe + apply) finished (epoch s)

    def to_json(self) -> str:
        return json.dumps({"zones": self.zones,
                           "records": {z: sorted(list(k) for k in keys) for z, keys in sorted(self.records.items())},
                           "applied": self.applied, "seen": self.seen, "outcome": self.outcome,
                           "reconciledAt": self.reconciled_at},
                          sort_keys=True, indent=1)

    @classmethod
    def from_json(cls, text: str) -> AgentState:
        doc: dict[str, Any] = json.loads(text) if text.strip() else {}
        return cls({z: dict(v) for z, v in doc.get("zones", {}).items()},
                   {z: {(n, t) for n, t in v} for z, v in doc.get("records", {}).items()},
                   doc.get("applied"), doc.get("seen"), doc.get("outcome"), float(doc.get("reconciledAt", 0.0)))


class Store(Protocol):
    def load(self) -> AgentState: ...
    def save(self, state: AgentState) -> None: ...


class FileStore:
    def __init__(self, path: pathlib.Path) -> None:
        self.path = path

    def load(self) -> AgentState:
        try:
            return AgentState.from_json(self.path.read_text()) if self.path.exists() else AgentState()
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{self.path}: unreadable DNS state file ({exc}); move it away to start over (the "
                              "agent then manages only what Git says and deletes nothing it did not write)") from exc

    def save(self, state: AgentState) -> None:
        text = state.to_json()
        if self.path.exists() and self.path.read_text() == text:
            return
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, self.path)  # atomic: an interrupted run never leaves half a file


class ConfigMapStore:
    """The state as a ConfigMap `bindy-agent-state` in the agent's namespace."""

    NAME = names.STATE_NAME

    def __init__(self, api: KubeApi, namespace: str) -> None:
        self.api, self.namespace = api, namespace
        self._saved: str | None = None

    def load(self) -> AgentState:
        body = self.api.get("ConfigMap", self.namespace, self.NAME)
        self._saved = ((body or {}).get("data") or {}).get("state")
        return AgentState.from_json(self._saved or "")

    def save(self, state: AgentState) -> None:
        text = state.to_json()
        if text == self._saved:
            return
        self.api.apply({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": self.NAME, "namespace": self.namespace,
                                     "labels": dict(names.AGENT_APP_LABELS)},
                        "data": {"state": text}})
        self._saved = text
