"""What the agent owns in DNS and remembers between runs, including what a run was about to write.

Two kinds of record, kept apart so that a run writes only what it touched:

- `ZoneOwnership`, one per zone: the instances it placed the zone on (and in which role), the
  RRsets it wrote (only those are ever changed or deleted), the gate annotations the zone had
  when last applied, and `pending`: the intent of a run that was writing this zone. The intent is
  stored *before* the first write to the zone goes out and cleared when the writes are settled,
  so after a kill at any instant the next run knows what may have reached the server.
- `RunState`, one per source: the revision last applied (what serves), the last one seen and
  its outcome, when the world was last fully reconciled, and whether a report still waits to be
  pushed.

Pure data and its JSON form; agent/clients/statestore.py reads and writes it. A record is read only
if it has the shape written here (JSON objects with these fields and types, finite numbers): any
other text is `Unreadable`, which says what was expected, never what was found, and never raises
anything else (a hand edit of a state ConfigMap must not stop every run).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from typing import Any, NotRequired

import pydantic
from typing_extensions import TypedDict

Key = tuple[str, str]  # (absolute owner name, type)
_STRICT = pydantic.ConfigDict(strict=True, allow_inf_nan=False)


class Unreadable(ValueError):
    """A state record that is not one the agent wrote: "unreadable: expected <what>; <where>:
    <why>"."""


@pydantic.with_config(_STRICT)
class _IntentDoc(TypedDict, total=False):
    writes: list[tuple[str, str, str]]
    deletes: list[tuple[str, str]]
    place: dict[str, str]
    unplace: list[str]


@pydantic.with_config(_STRICT)
class _ZoneDoc(TypedDict):
    zone: str
    placements: NotRequired[dict[str, str]]
    managed: NotRequired[list[tuple[str, str]]]
    annotations: NotRequired[dict[str, str]]
    pending: NotRequired[_IntentDoc | None]
    revision: NotRequired[str | None]
    notify: NotRequired[list[str] | None]
    transferFrom: NotRequired[list[str] | None]
    allowTransfer: NotRequired[list[str] | None]


@pydantic.with_config(_STRICT)
class _RunDoc(TypedDict, total=False):
    applied: str | None
    seen: str | None
    outcome: str | None
    reconciledAt: float
    notesPending: bool
    message: str
    writingAt: float


@pydantic.with_config(_STRICT)
class _LegacyDoc(TypedDict, total=False):
    zones: dict[str, dict[str, str]]
    records: dict[str, list[tuple[str, str]]]
    applied: str | None
    seen: str | None
    outcome: str | None
    reconciledAt: float


ZONE_SHAPE = ("a JSON object with zone (text), placements (instance -> role), managed ([name, "
              "type] pairs) and the optional annotations, pending, revision, notify, transferFrom, "
              "allowTransfer")
RUN_SHAPE = ("a JSON object with applied, seen, outcome (text or null), reconciledAt, writingAt "
             "(finite numbers), notesPending (true or false), message (text), or nothing at all")
LEGACY_SHAPE = ("a JSON object with zones (zone -> instance -> role) and records (zone -> [name, "
                "type] pairs)")
_ADAPTERS: dict[type, pydantic.TypeAdapter[Any]] = {}


def _parsed(shape: type, expected: str, text: str | bytes) -> Any:
    """`text` validated as `shape` (JSON), or Unreadable saying what was expected and where it is
    not."""
    adapter = _ADAPTERS.get(shape)
    if adapter is None:
        adapter = _ADAPTERS[shape] = pydantic.TypeAdapter(shape)
    try:
        return adapter.validate_json(text)
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "the record"
        raise Unreadable(f"unreadable: expected {expected}; {where}: {first['msg']}") from None


def digest(values: Iterable[str], ttl: int) -> str:
    """A short fingerprint of an RRset's data: what an intent says it is about to write."""
    text = f"{ttl}\n" + "\n".join(sorted(values))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclasses.dataclass
class Intent:
    """What a run is about to do to one zone; written before the first write, cleared after."""

    # RRset -> digest of the new data
    writes: dict[Key, str] = dataclasses.field(default_factory=dict)
    deletes: set[Key] = dataclasses.field(default_factory=set)
    # instance -> role, about to be created
    place: dict[str, str] = dataclasses.field(default_factory=dict)
    # instances the zone is about to leave
    unplace: set[str] = dataclasses.field(default_factory=set)

    def as_dict(self) -> dict[str, Any]:
        return {"writes": sorted([n, t, d] for (n, t), d in self.writes.items()),
                "deletes": sorted([n, t] for n, t in self.deletes),
                "place": dict(sorted(self.place.items())), "unplace": sorted(self.unplace)}

    @classmethod
    def from_dict(cls, doc: Any) -> Intent:
        return cls({(n, t): d for n, t, d in doc.get("writes", [])},
                   {(n, t) for n, t in doc.get("deletes", [])}, dict(doc.get("place", {})),
                   set(doc.get("unplace", [])))


@dataclasses.dataclass
class ZoneOwnership:
    zone: str  # absolute, lowercase
    # instance -> "primary" | "secondary"
    placements: dict[str, str] = dataclasses.field(default_factory=dict)
    managed: set[Key] = dataclasses.field(default_factory=set)
    # the gate annotations last applied
    annotations: dict[str, str] = dataclasses.field(default_factory=dict)
    pending: Intent | None = None
    revision: str | None = None  # the revision whose writes to this zone were last settled
    # the secondaries' addresses its primaries were last told to NOTIFY (None: not known, an older
    # record)
    notify: list[str] | None = None
    # the primaries' addresses its secondaries were last created with, to transfer from (None: not
    # known, an older record): when the primaries' pods move, the secondaries are created again
    transfer_from: list[str] | None = None
    # the per-zone allow-transfer its primaries were last given (None: not known, an older record):
    # when it changes (a replica of the agent at a new address), the primaries are given it again
    allow_transfer: list[str] | None = None

    def to_json(self) -> str:
        doc: dict[str, Any] = {"zone": self.zone,
                               "placements": dict(sorted(self.placements.items())),
                               "managed": sorted([n, t] for n, t in self.managed)}
        if self.annotations:
            doc["annotations"] = dict(sorted(self.annotations.items()))
        if self.pending is not None:
            doc["pending"] = self.pending.as_dict()
        if self.revision:
            doc["revision"] = self.revision
        if self.notify is not None:
            doc["notify"] = self.notify
        if self.transfer_from is not None:
            doc["transferFrom"] = self.transfer_from
        if self.allow_transfer is not None:
            doc["allowTransfer"] = self.allow_transfer
        return json.dumps(doc, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> ZoneOwnership:
        """A zone's record; Unreadable when it is not one (see ZONE_SHAPE)."""
        doc: Any = _parsed(_ZoneDoc, ZONE_SHAPE, text)
        pending = doc.get("pending")
        return cls(doc["zone"], dict(doc.get("placements", {})),
                   {(n, t) for n, t in doc.get("managed", [])}, dict(doc.get("annotations", {})),
                   Intent.from_dict(pending) if pending is not None else None, doc.get("revision"),
                   doc.get("notify"), doc.get("transferFrom"), doc.get("allowTransfer"))

    @property
    def empty(self) -> bool:
        """Nothing placed, nothing owned, nothing in flight: the record can be dropped."""
        return not (self.placements or self.managed or self.pending)


@dataclasses.dataclass
class RunState:
    applied: str | None = None  # the last revision applied (fully or partly): what is serving
    seen: str | None = None  # the last revision a run looked at
    outcome: str | None = None  # that run's outcome: applied / partial / rejected / refused
    reconciled_at: float = 0.0  # when the last full reconcile (observe + apply) finished (epoch s)
    # a report could not be pushed: the next run pushes it, even with nothing to do
    notes_pending: bool = False
    message: str = ""  # that run's outcome in a line, for people (the status object shows it)
    suspended: bool = False  # read from the store's suspend mark (not part of the record itself)
    # saved before a run's first Kubernetes write, cleared by its end (0.0): while set, a run is
    # writing or its leader died before its end was saved, and no list of the cluster made before it
    # is complete
    writing_at: float = 0.0

    @property
    def wrote_at(self) -> float:
        """When the cluster last changed by a run's writes, as far as the state knows (epoch s); inf
        while a run writes (or died writing), and before any run's end was ever saved (a first run
        that creates the state's namespace cannot mark its writes): a list of the cluster may miss
        some."""
        return float("inf") if self.writing_at or not self.reconciled_at else self.reconciled_at

    def to_json(self) -> str:
        doc: dict[str, Any] = {"applied": self.applied, "seen": self.seen, "outcome": self.outcome,
                               "reconciledAt": self.reconciled_at}
        if self.notes_pending:
            doc["notesPending"] = True
        if self.message:
            doc["message"] = self.message
        if self.writing_at:
            doc["writingAt"] = self.writing_at
        return json.dumps(doc, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> RunState:
        """The run's record (nothing at all: a fresh one); Unreadable when it is not one (see
        RUN_SHAPE)."""
        doc: Any = _parsed(_RunDoc, RUN_SHAPE, text) if text.strip() else {}
        return cls(doc.get("applied"), doc.get("seen"), doc.get("outcome"),
                   float(doc.get("reconciledAt", 0.0)), bool(doc.get("notesPending", False)),
                   str(doc.get("message", "")), writing_at=float(doc.get("writingAt", 0.0)))


def from_legacy(text: str | bytes) -> tuple[RunState, dict[str, ZoneOwnership]]:
    """Reads the single-document state of earlier versions ({zones, records, applied, ...});
    Unreadable when it is not one (see LEGACY_SHAPE)."""
    doc: Any = _parsed(_LegacyDoc, LEGACY_SHAPE, text) if text.strip() else {}
    zones: dict[str, ZoneOwnership] = {}
    for name, placed in doc.get("zones", {}).items():
        zones[name] = ZoneOwnership(name, dict(placed))
    for name, keys in doc.get("records", {}).items():
        zones.setdefault(name, ZoneOwnership(name)).managed = {(n, t) for n, t in keys}
    run = RunState(doc.get("applied"), doc.get("seen"), doc.get("outcome"),
                   float(doc.get("reconciledAt", 0.0)))
    return run, zones
