"""The desired state's objects (pure): what agent/desired/hierarchy.py builds from a revision - the
Kubernetes objects to make true (`KubeObject`, in apply tiers), the clusters and instances they
come from, and the whole `Desired` state of a revision."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agent.desired import placement
from agent.load.loaded import Loaded
from agent.model.key import ObjectKey
from agent.model.problems import Origin, Problem

if TYPE_CHECKING:
    from agent.model.infra import Bind9InstanceSpec, ClusterCommonSpec, ZoneSource

# the CRs objects are generated from
INFRA_KINDS = ("ClusterBind9Provider", "Bind9Cluster", "Bind9Instance")

# Apply order (parents before children); prune runs it backwards.
TIER_PROVIDER, TIER_CLUSTER, TIER_INSTANCE, TIER_CHILD, TIER_ZONE, TIER_RECORD = range(6)
# Within an instance's children, what a Deployment uses comes before it.
CHILD_ORDER = {"ServiceAccount": 0, "Secret": 1, "ConfigMap": 2, "PersistentVolumeClaim": 3,
               "Service": 3, "Deployment": 4}
# A CR written in Git as it is applied (KubeObject.body; the JSON plan writes it with these:
# plan/render_json.py).
CR_DUMP: dict[str, Any] = {"by_alias": True, "exclude_unset": True, "exclude_none": True,
                           "exclude": {"status"}}


@dataclasses.dataclass(slots=True)
class KubeObject:
    """An object to make true in the cluster. A CR written in Git keeps its loaded document, not a
    body: the body is made again when asked (a record's costs 0.7 KB, 68 MB at 100,000 records),
    and a run asks for it only for what it creates or updates, or when the cluster was read in
    full."""

    key: ObjectKey
    content: dict[str, Any] | Loaded  # the body, or the Git document it is made from
    tier: int
    owner: ObjectKey | None = None
    origin: Origin | None = None  # set for objects written in Git
    source: ObjectKey | None = None  # the Git object it was generated from
    _hash: str = dataclasses.field(default="", init=False, repr=False, compare=False)

    @property
    def body(self) -> dict[str, Any]:
        """The object as it is applied, before the agent's labels and annotations (a CR written in
        Git: a new dict on every call)."""
        content = self.content
        return content if type(content) is dict else _cr_body(content)  # type: ignore[arg-type]

    def body_copy(self) -> dict[str, Any]:
        """The body as a dict the caller may change: a Git CR's is made anew anyway, a generated
        object's is copied."""
        content = self.content
        return json.loads(json.dumps(content)) if type(content) is dict else _cr_body(content)  # type: ignore[arg-type]

    @property
    def hash(self) -> str:
        """A fingerprint of the body (the applied-hash annotation), computed once per object."""
        if not self._hash:
            text = json.dumps(self.body, sort_keys=True, separators=(",", ":"))
            self._hash = hashlib.sha256(text.encode()).hexdigest()[:16]
        return self._hash


@dataclasses.dataclass
class Cluster:
    key: ObjectKey
    spec: ClusterCommonSpec
    provider: str | None
    origin: Origin | None
    source: ObjectKey


@dataclasses.dataclass
class Instance:
    key: ObjectKey
    cluster: str
    role: str
    labels: dict[str, str]
    spec: Bind9InstanceSpec
    zones_from: list[ZoneSource]
    provider: str | None
    origin: Origin | None
    source: ObjectKey


@dataclasses.dataclass
class Desired:
    # in apply order: the infrastructure first, then DNSZones, then records
    objects: Sequence[KubeObject]
    instances: dict[ObjectKey, Instance]
    zones: list[placement.Zone]
    problems: list[Problem]
    # how many of `objects` come first: providers, clusters, instances and what they make
    infra: int = 0

    @property
    def infrastructure(self) -> list[KubeObject]:
        """The objects before the DNSZone and record CRs (a few, where the rest may be 100,000)."""
        return list(itertools.islice(self.objects, self.infra))

    def object(self, kind: str, namespace: str | None, name: str) -> KubeObject | None:
        key = ObjectKey(kind, namespace, name)
        return next((o for o in self.objects if o.key == key), None)


def _cr_body(obj: Loaded) -> dict[str, Any]:
    return obj.model.model_dump(**CR_DUMP, mode="json")
