"""The registry of Bindy kinds: model class, CRD names, scope and printer columns (like Bindy's).

A kind's model is imported when first asked for (`Kind.model`): the models of a kind cost a few
milliseconds each to define, and `validate` of a repository holding only zones defines only the
zone's (bench/cli_startup_bench.py). The record kinds are those of model/recordtypes/: their names
are known from its list of modules, their models and columns from their type once it is imported."""

from __future__ import annotations

import dataclasses
import functools
import importlib
from typing import TYPE_CHECKING

from agent.model import recordtypes

if TYPE_CHECKING:
    from agent.model.base import Resource

GROUP = "bindy.firestoned.io"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
READY_COLUMN = ("Ready", "string", ".status.conditions[?(@.type=='Ready')].status")


@dataclasses.dataclass(frozen=True)
class Kind:
    name: str
    # the module under agent/model/ defining the model class, which is named as the kind
    module: str
    plural: str
    short_names: tuple[str, ...]
    namespaced: bool
    own_columns: tuple[recordtypes.Column, ...]  # a record kind's are its type's: `columns`
    record_type: str | None = None  # DNS type for record kinds

    @functools.cached_property
    def model(self) -> type[Resource]:
        if self.record_type is not None:
            return recordtypes.of_kind(self.name).model
        model: type[Resource] = getattr(importlib.import_module(f"agent.model.{self.module}"),
                                        self.name)
        return model

    @functools.cached_property
    def columns(self) -> tuple[recordtypes.Column, ...]:
        """Printer columns; a record's: its name and zone, its type's own, its TTL and readiness."""
        if self.record_type is None:
            return self.own_columns
        return (("Name", "string", ".spec.name"), ("Zone", "string", ".status.zoneRef.zoneName"),
                *recordtypes.of_kind(self.name).columns, ("TTL", "integer", ".spec.ttl"),
                READY_COLUMN)

    @property
    def singular(self) -> str:
        return self.name.lower()

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{GROUP}"


# The Git revision a cluster serves, and the one that last changed a zone (agent/outcome/status.py).
REVISION_COLUMN = ("Revision", "string", ".status.lastAppliedRevision")

_CLUSTER_COLUMNS = (
    ("Version", "string", ".spec.version"),
    ("Primary", "integer", ".spec.primary.replicas"),
    ("Secondary", "integer", ".spec.secondary.replicas"),
    READY_COLUMN,
    REVISION_COLUMN,
)


def record_kind(name: str, short: str) -> Kind:
    """The kind of a record type (model/recordtypes/)."""
    return Kind(name, f"recordtypes.{short}", name.lower() + "s", (short,), True, (),
                name.removesuffix(recordtypes.SUFFIX))


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("ClusterBind9Provider", "infra", "clusterbind9providers",
             ("cb9p", "cb9ps"), False, _CLUSTER_COLUMNS),
        Kind("Bind9Cluster", "infra", "bind9clusters", ("b9c", "b9cs"), True,
             _CLUSTER_COLUMNS),
        Kind("Bind9Instance", "infra", "bind9instances", ("b9", "b9s"), True, (
            ("Cluster", "string", ".spec.clusterRef"),
            ("Role", "string", ".spec.role"),
            ("Replicas", "integer", ".spec.replicas"),
            ("Zones", "integer", ".status.zonesCount"),
            READY_COLUMN,
        )),
        Kind("DNSZone", "zone", "dnszones", ("zone", "zones", "dz", "dzs"), True, (
            ("Zone", "string", ".spec.zoneName"),
            ("Provider", "string", ".spec.clusterProviderRef"),
            ("Records", "integer", ".status.recordsCount"),
            ("Instances", "integer", ".status.bind9InstancesCount"),
            ("TTL", "integer", ".spec.ttl"),
            ("Hash", "string", ".status.zoneHash"),
            ("InSync", "string", ".status.conditions[?(@.type=='InSync')].status"),
            READY_COLUMN,
            REVISION_COLUMN,
        )),
    )
}
KINDS.update((k.name, k)
             for k in (record_kind(recordtypes.kind_of(m), m) for m in recordtypes.BUILT_IN))

RECORD_KINDS = tuple(k for k in KINDS.values() if k.record_type)
