"""Shared building blocks of the CR models: the strict base class, metadata, selectors, conditions.

Every model forbids unknown fields and uses Bindy's exact camelCase names (Python attributes are
snake_case). A repository document is validated with `Resource.from_document`: strictly, as the API
server checks it against the CRD (an integer is an integer, not "3600", 3600.0 or true), and by
Bindy's spelling only (`volume_mounts` is an unknown field, not another way to write
`volumeMounts`). The agent's own code may still build models by attribute name.

Large embedded Kubernetes types (volumes, resources, service specs) are typed loosely as
`K8sObject`: any mapping is accepted and the generated CRD marks them
`x-kubernetes-preserve-unknown-fields`, like Bindy's own embedded types are accepted by the server.
"""

from __future__ import annotations

import sys
import types
from typing import Annotated, Any, Literal, Required, Self


def _without_pydantic_plugins() -> None:
    """The agent uses no pydantic plugin: pydantic's search for them (the entry points of every
    installed distribution, read through importlib.metadata when the first validator is built) would
    cost a pre-commit hook's `validate` a fifth of its start-up (bench/cli_startup_bench.py).
    pydantic reads its plugins from this one module, which is therefore given as one that finds
    none, unless already loaded."""
    name = "pydantic.plugin._loader"
    if name not in sys.modules:
        loader = types.ModuleType(name, "pydantic plugins: none (agent/model/base.py)")
        loader.get_plugins = tuple  # type: ignore[attr-defined]  # get_plugins() -> no plugins
        sys.modules[name] = loader


_without_pydantic_plugins()

from pydantic import BaseModel, ConfigDict, Field, with_config  # noqa: E402
from pydantic.alias_generators import to_camel  # noqa: E402
from typing_extensions import TypedDict  # noqa: E402  # the one pydantic accepts before Python 3.12

_FIELD_SETS: dict[frozenset[str], set[str]] = {}  # see Resource.share_field_sets
_LAST_FIELD_SET: dict[type, set[str]] = {}
_MAX_FIELD_SETS = 4096
_set_attribute = object.__setattr__
PRESERVE = {"x-kubernetes-preserve-unknown-fields": True}

K8sObject = Annotated[dict[str, Any], Field(json_schema_extra=PRESERVE)]
"""A loosely typed embedded Kubernetes object (ServiceSpec, ResourceRequirements, Volume ...)."""

Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
Ttl = Annotated[int, Field(ge=0, le=2**31 - 1)]
Port = Annotated[int, Field(ge=0, le=65535)]
RFC3339 = str

HmacAlgorithm = Literal["hmac-sha1", "hmac-sha224", "hmac-sha256", "hmac-sha384", "hmac-sha512"]
# a BIND dnssec-policy name
PolicyName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")]


class Model(BaseModel):
    """Strict base: camelCase aliases, unknown fields rejected; attribute names accepted too, but
    only from the agent's own code (a repository's documents go through
    `Resource.from_document`)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=True,
        extra="forbid",
        frozen=False,
        ser_json_timedelta="iso8601",
        # a model's validator is built when first used, not at import: `validate` of a one-file
        # repository builds the few kinds it holds (bench/cli_startup_bench.py)
        defer_build=True,
    )

    def __setattr__(self, name: str, value: Any) -> None:
        # pydantic notes an assigned field in the instance's fields set, in place: the set may be
        # shared (see `share_field_sets`), so the instance gets its own first
        object.__setattr__(self, "__pydantic_fields_set__", set(self.__pydantic_fields_set__))
        super().__setattr__(name, value)

    def dump(self) -> dict[str, Any]:
        """The object as Kubernetes would store it: camelCase, no unset/None fields."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class OwnerReference(Model):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


@with_config(ConfigDict(extra="forbid"))
class ObjectMeta(TypedDict, total=False):
    """Kubernetes ObjectMeta. Server-populated fields are accepted (an exported object loads)."""

    # A TypedDict, so it is kept as the plain dict of the keys a document sets: every record has
    # one, and a model of all 15 fields cost 0.5 KB (50 MB at 100,000 records) where that dict costs
    # 0.2 KB.

    name: Required[Annotated[str, Field(min_length=1, max_length=253)]]
    namespace: Annotated[str, Field(min_length=1, max_length=63)] | None
    labels: dict[str, str] | None
    annotations: dict[str, str] | None
    generateName: str | None
    uid: str | None
    resourceVersion: str | None
    generation: int | None
    creationTimestamp: RFC3339 | None
    deletionTimestamp: RFC3339 | None
    deletionGracePeriodSeconds: int | None
    finalizers: list[str] | None
    ownerReferences: list[OwnerReference] | None
    managedFields: list[K8sObject] | None
    selfLink: str | None


class LabelSelectorRequirement(Model):
    key: str = Field(description="The label key that the selector applies to.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"] = Field(
        description="Operator represents a key's relationship to a set of values."
    )
    values: list[str] | None = Field(
        None, description="For In and NotIn: must be non-empty. For Exists and DoesNotExist: empty."
    )


class LabelSelector(Model):
    """Kubernetes label selector: matchLabels AND every matchExpressions requirement."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None

    def matches(self, labels: dict[str, str] | None) -> bool:
        labels = labels or {}
        for key, value in (self.match_labels or {}).items():
            if labels.get(key) != value:
                return False
        for req in self.match_expressions or []:
            present = req.key in labels
            values = req.values or []
            if req.operator == "In" and not (present and labels[req.key] in values):
                return False
            if req.operator == "NotIn" and present and labels[req.key] in values:
                return False
            if req.operator == "Exists" and not present:
                return False
            if req.operator == "DoesNotExist" and present:
                return False
        return True


class Condition(Model):
    type: str = Field(description="Ready, Progressing or Degraded.")
    status: Literal["True", "False", "Unknown"]
    reason: str | None = None
    message: str | None = None
    last_transition_time: RFC3339 | None = None


class ZoneReference(Model):
    """A DNSZone as seen from an instance's or a record's status."""

    api_version: str
    kind: str
    name: str
    namespace: str
    zone_name: str
    last_reconciled_at: RFC3339 | None = None


class Status(Model):
    """Fields every status has. `lastAppliedRevision` is the agent's: the Git commit applied."""

    conditions: list[Condition] = Field(default_factory=list)
    observed_generation: int | None = None
    last_applied_revision: str | None = Field(
        None, description="Git revision last applied by bindy-agent (agent extension)."
    )


class Resource(Model):
    """Common envelope of every Bindy kind."""

    api_version: Literal["bindy.firestoned.io/v1beta1"]
    kind: str
    metadata: ObjectMeta

    @classmethod
    def from_document(cls, data: dict[str, Any]) -> Self:
        """The object a repository document describes, checked as the API server checks a CR against
        its CRD: fields only by Bindy's camelCase names, and types strictly (no string, float or
        boolean taken for an integer, no number for a string). Raises pydantic.ValidationError."""
        # model_validate without its Python frame (one per document): the validator itself, built on
        # first use
        model: Self = cls.__pydantic_validator__.validate_python(data, strict=True, by_alias=True,
                                                                 by_name=False)
        return model

    def share_field_sets(self) -> None:
        """Makes this object and its spec share their fields sets with every object whose set
        fields are the same. pydantic keeps a set of names per model instance (216 bytes, two per
        record: 43 MB at 100,000 records); few combinations occur in a repository."""
        spec = self.__dict__.get("spec")
        for model in (self, spec) if isinstance(spec, Model) else (self,):
            fields = model.__pydantic_fields_set__
            # most often the same as the last of its class
            shared = _LAST_FIELD_SET.get(type(model))
            if shared != fields:
                shared = _FIELD_SETS.get(key := frozenset(fields))
                if shared is None:
                    if len(_FIELD_SETS) >= _MAX_FIELD_SETS:  # a hostile number of combinations
                        continue
                    shared = _FIELD_SETS[key] = fields
                _LAST_FIELD_SET[type(model)] = shared
            _set_attribute(model, "__pydantic_fields_set__", shared)
