"""The Plan of a whole revision, and the Change records people and reports read.

A `Change` is Create / Update / Delete of a typed target: a Kubernetes object, a zone on one
instance, or an RRset in a zone. Offline (`bindy-agent plan DIR`) the observed world is empty, so
the plan shows everything the revision would create. Secret values never appear: they render as
`<secret>`.

JSON output (`--output json`), format version 1:
    {"formatVersion": 1, "revision": str|null,
     "summary": {"create": n, "update": n, "delete": n},
     "changes": [{"action": "create"|"update"|"delete",
                  "layer": "kubernetes"|"zones"|"records",
                  "target": {...},   # kubernetes: kind, namespace, name (also Bindy's CRDs and the
                                     #   namespaces a sync creates: kind CustomResourceDefinition or
                                     #   Namespace, namespace null; applied before the other
                                     # objects)
                                     # zones: zone, instance, role
                                     # records: zone, name, type
                  "before": {...}|null, "after": {...}|null,
                  "fields": [str],    # for updates: the changed field paths
                  "reason": str|null}],  # e.g. "drift: edited by hand"
     "conflicts": [str],  # objects with a desired name that the agent does not own
     "problems": [{"file", "line", "object", "path", "message", "severity"}]}

Optional keys, present only when they apply:
     "base": str,          # `plan --base/--base-dir`: the revision compared against; `revision` is
                           # then the head, and every problem carries "revision": "base"|"head"
     "refusals": [str],    # the safety gate would refuse this plan: a sync would apply nothing
     "unplanned": [str],   # zones on servers that could not be observed: nothing is planned there
     "invalid": [str],     # the inputs that did not validate ("revision", or "base"/"head"):
                           # nothing was planned; `problems` says why, `summary` is all zeros
"""

from __future__ import annotations

import dataclasses
import enum
from collections import Counter
from typing import Any

from agent.desired import workloads
from agent.desired.hierarchy import KubeObject
from agent.desired.rrsets import RRset
from agent.model.findings import Refusal
from agent.model.key import ObjectKey
from agent.model.problems import Problem
from agent.plan import kubechange, zoneplan

FORMAT_VERSION = 1
DRIFT = "drift:"  # how the reason of a change that repairs what someone else changed begins


class Action(enum.StrEnum):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"


SYMBOL = {Action.CREATE: "+", Action.UPDATE: "~", Action.DELETE: "-"}


@dataclasses.dataclass(frozen=True, slots=True)
class KubeTarget:
    kind: str
    namespace: str | None
    name: str
    layer = "kubernetes"

    def __str__(self) -> str:
        if self.namespace:
            return f"{self.kind} {self.namespace}/{self.name}"
        return f"{self.kind} {self.name}"


@dataclasses.dataclass(frozen=True, slots=True)
class ZoneTarget:
    zone: str
    instance: str  # "namespace/name"
    role: str
    layer = "zones"

    def __str__(self) -> str:
        return f"{self.zone} on {self.instance} ({self.role})"


@dataclasses.dataclass(frozen=True, slots=True)
class RRsetTarget:
    zone: str
    name: str
    rtype: str
    layer = "records"

    def __str__(self) -> str:
        return f"{self.name} {self.rtype}"


Target = KubeTarget | ZoneTarget | RRsetTarget
LAYERS = (("kubernetes", "Kubernetes objects"), ("zones", "Zones"), ("records", "Records"))


Shown = dict[str, Any] | RRset | KubeObject | None  # what a change's before/after is made from


@dataclasses.dataclass(frozen=True, slots=True)
class Change:
    """One line of the plan. `before` and `after` are made when read, from what the plan holds
    anyway (an RRset, a desired object): a plan of 100,000 creates keeps no second copy of them."""

    action: Action
    target: Target
    old: Shown = None  # what `before` shows
    new: Shown = None  # what `after` shows
    fields: tuple[str, ...] = ()
    reason: str = ""  # e.g. "drift: edited by hand"

    @property
    def before(self) -> dict[str, Any] | None:
        return _shown(self.old)

    @property
    def after(self) -> dict[str, Any] | None:
        return _shown(self.new)

    def as_dict(self) -> dict[str, Any]:
        target = dict(dataclasses.asdict(self.target).items())
        if isinstance(self.target, RRsetTarget):
            target["type"] = target.pop("rtype")
        return {"action": self.action.value, "layer": self.target.layer, "target": target,
                "before": self.before, "after": self.after, "fields": list(self.fields),
                "reason": self.reason or None}


def drifted(change: Change) -> bool:
    """Whether a change of a plan of the revision already applied repairs what someone else changed:
    a Kubernetes object edited or deleted by hand, a zone gone from a server that had it (reason
    "drift: ..."), or an RRset changed on a server that had the zone. The agent's own work is not: a
    new or replaced pod's zones and records, secondaries repointed to moved primaries, the transfers
    told to moved pods, an interrupted run finished (each says so in its reason)."""
    return change.reason.startswith(DRIFT) or (change.target.layer == "records"
                                               and not change.reason)


def _shown(what: Shown) -> dict[str, Any] | None:
    if isinstance(what, RRset):
        return {"ttl": what.ttl, "values": list(what.rdatas)}
    if isinstance(what, KubeObject):
        return mask_secrets(what.body)
    return what


@dataclasses.dataclass(frozen=True)
class Plan:
    """Everything a revision will do, decided before the first write, and never edited once made:
    `plan/build.py` makes it whole, the gate (`agent/gate/verdict.py approve`) returns a copy with
    its refusals, a delta a copy with its base and labels (`dataclasses.replace`).

    `kube` and `zones` are what apply executes (None: that layer was not observed, so nothing is
    done there); `changes` is the same plan as a flat list for people and reports; `refused` are
    the gate's decisions (any refusal: nothing is applied), `refusals` their texts."""

    changes: list[Change]
    problems: list[Problem] = dataclasses.field(default_factory=list)
    revision: str | None = None
    conflicts: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    kube: list[kubechange.KubeChange] | None = None
    zones: list[zoneplan.ZonePlan] | None = None
    # the gate's (agent/gate/verdict.py): only `approve` sets them
    refused: tuple[Refusal, ...] = ()
    # objects the agent made and may prune, before this revision (counted when it prunes)
    kube_managed: int = 0
    # zones on servers that could not be observed
    unplanned: list[str] = dataclasses.field(default_factory=list)
    base: str | None = None  # a delta (`plan --base`): the revision `revision` is compared against
    base_problems: list[Problem] = dataclasses.field(default_factory=list)
    # inputs that did not validate ("revision", "base", "head"): nothing planned
    invalid: tuple[str, ...] = ()
    # revision -> how people name it ("main (1a2b)")
    labels: dict[str, str] = dataclasses.field(default_factory=dict)
    # Kubernetes beyond the objects' changes: the missing namespaces apply creates first (allowed by
    # --create-namespaces) and Bindy's CRDs it creates or updates before them (when the run installs
    # them: the setting install_crds), both also lines of `changes`; the objects it does not apply
    # and why (their namespace is missing), and what the inventory lists once applied (None: not
    # written, the agent's namespace is missing)
    namespaces: list[str] = dataclasses.field(default_factory=list)
    # Bindy's CRDs, applied before all
    crds: list[kubechange.CrdChange] = dataclasses.field(default_factory=list)
    blocked: dict[ObjectKey, str] = dataclasses.field(default_factory=dict)
    inventory: list[ObjectKey] | None = None
    # where its changes come from in the repository, and how to link there (plan/locate.Sources):
    # what the Markdown plan links each change to; None: nowhere known
    sources: Any = None

    @property
    def refusals(self) -> list[str]:
        """What the gate refuses, as people read it (plans, reports, notes, alerts)."""
        return [r.text for r in self.refused]

    @property
    def summary(self) -> dict[str, int]:
        counts = Counter(c.action for c in self.changes)
        return {a.value: counts.get(a, 0) for a in Action}

    @property
    def empty(self) -> bool:
        return not self.changes


def mask_secrets(body: dict[str, Any]) -> dict[str, Any]:
    """A copy of a Kubernetes object with every Secret value replaced by `<secret>`."""
    if body.get("kind") != "Secret":
        return body
    masked = dict(body)
    for field in ("data", "stringData"):
        if isinstance(body.get(field), dict):
            masked[field] = {k: workloads.SECRET_PLACEHOLDER for k in body[field]}
    return masked
