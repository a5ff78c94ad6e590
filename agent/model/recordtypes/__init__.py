"""The record types: one module per DNS type in this package (a.py, aaaa.py, cname.py, mx.py,
txt.py, ns.py, srv.py, caa.py), each holding everything the agent knows of its kind, as a
`RecordType`:

    kind, rtype, short   "MXRecord", "MX", "mx": the CR kind, its DNS type and its kubectl short
                         name
    model                the CR's model class (its spec model with it)
    columns              its printer columns, between Name/Zone and TTL/Ready
    targets              the host fields Bindy's target rules read (load/admission.py)
    integrity_field      the host field BIND's check-integrity wants an address for, inside the zone
    shorthand            the seeds' older field names, rewritten to Bindy's (load/shorthand.py)
    rdatas(spec)         the spec's values as dnspython rdata, each checked (desired/recorddata.py)
    identity(spec)       its DNS type and everything `rdatas` reads, as a hashable key (its values
                         are rendered once)
    from_rdata(rdatas)   the specs of the CRs that say what a live RRset says (`import`:
                         desired/adopt.py)

Everything else about records is derived from these: the kinds table (model/kinds.py), the import
table, the admission targets, the schemas and CRDs, and the RBAC lists of deploy/ (model/rbac.py).

A module registers its type when imported, and is imported when its kind is first needed: the models
of a kind cost milliseconds to define and dnspython's record types as much to import, and `validate`
of a repository without records loads none of them (bench/cli_startup_bench.py). `BUILT_IN` names
the modules, in the order the kinds are listed (CRDs, RBAC, plans); a module `x` is the type "X" of
kind "XRecord". A test registers a type of its own with `registered`.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import dns.rdata

    from agent.model.base import Resource

BUILT_IN = ("a", "aaaa", "cname", "mx", "txt", "ns", "srv", "caa")
SUFFIX = "Record"
Column = tuple[str, str, str]  # printer column: name, type, JSON path


class RecordType:
    """What one DNS record type is to the agent (the table above). A module defines a subclass and
    registers one instance of it."""

    kind: ClassVar[str]
    rtype: ClassVar[str]
    short: ClassVar[str]
    model: ClassVar[type[Resource]]
    columns: ClassVar[tuple[Column, ...]] = ()
    targets: ClassVar[tuple[str, ...]] = ()
    integrity_field: ClassVar[str | None] = None
    # (old field, Bindy's field holding a list)
    shorthand: ClassVar[tuple[tuple[str, str], ...]] = ()

    def rdatas(self, spec: Any) -> list[dns.rdata.Rdata]:
        """The values of `spec`, checked (RecordError names the field at fault)."""
        raise NotImplementedError

    def identity(self, spec: Any) -> tuple[object, ...]:
        """The type's `rtype`, then everything `rdatas` reads from `spec`: hashable, and no other
        type's."""
        raise NotImplementedError

    def from_rdata(self, values: list[Any]) -> list[dict[str, Any]]:
        """The spec fields (without name and ttl) of the CRs that together hold `values` (one
        RRset)."""
        raise NotImplementedError


# by kind: the types imported or registered so far (`of_kind`: any)
REGISTRY: dict[str, RecordType] = {}
_ADDED: dict[str, RecordType] = {}  # by kind: types registered by `registered`, not in BUILT_IN


def kind_of(module: str) -> str:
    """The kind of a built-in type's module ("mx" -> "MXRecord")."""
    return module.upper() + SUFFIX


def register(record_type: RecordType) -> RecordType:
    """Called by a type's module once it is defined. A built-in type follows the naming of
    BUILT_IN."""
    kind = record_type.kind
    if kind != record_type.rtype + SUFFIX:
        raise ValueError(f"record type {record_type.rtype}: its kind must be "
                         f"{record_type.rtype + SUFFIX}, not {kind}")
    REGISTRY[kind] = record_type
    return record_type


def of_kind(kind: str) -> RecordType:
    """The type of a record kind, its module imported when first asked for; KeyError for another
    kind."""
    found = REGISTRY.get(kind)
    if found is None:
        module = kind.removesuffix(SUFFIX).lower()
        if kind_of(module) != kind or module not in BUILT_IN:
            raise KeyError(kind)
        importlib.import_module(f"{__name__}.{module}")
        found = REGISTRY[kind]
    return found


def of_rtype(rtype: str) -> RecordType | None:
    """The type of a DNS type, None when no kind holds it."""
    try:
        return of_kind(rtype + SUFFIX)
    except KeyError:
        return None


def every() -> tuple[RecordType, ...]:
    """Every type (each module imported), the built-in ones in their order, then those
    registered."""
    return (*(of_kind(kind_of(m)) for m in BUILT_IN), *_ADDED.values())


@contextlib.contextmanager
def registered(record_type: RecordType) -> Iterator[RecordType]:
    """A type of the caller's (a test's) registered while the block runs: it is a kind of
    model/kinds.py (schemas, CRDs, RBAC) and has its place in the import table and in rendering."""
    from agent.model import kinds  # below this package's import: kinds reads BUILT_IN

    register(record_type)
    _ADDED[record_type.kind] = record_type
    kinds.KINDS[record_type.kind] = kinds.record_kind(record_type.kind, record_type.short)
    try:
        yield record_type
    finally:
        del kinds.KINDS[record_type.kind], _ADDED[record_type.kind], REGISTRY[record_type.kind]
