"""Where each change of a plan comes from in the repository (pure): the file and line of the CR it
was written in, for a pull-request comment that links every line to its source.

    RRset                the first record CR of that name and type in its zone (or its DNSZone, for
                         the apex NS and glue the DNSZone declares)
    zone on a server     its DNSZone
    CR                   itself
    generated object     the CR it is made from (a Deployment: its Bind9Instance's cluster, ...)

What a change removes is found in the base (it is no longer in the head). Indexes are built on the
first question and only for what is asked: a plan of 100,000 creates renders a few hundred rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from agent.model import kinds, names
from agent.model.key import ObjectKey
from agent.plan.changes import Action, Change, KubeTarget, RRsetTarget, ZoneTarget

if TYPE_CHECKING:
    from agent.desired.hierarchy import Desired, KubeObject
    from agent.desired.placement import Zone

HEAD, BASE = "head", "base"


@dataclasses.dataclass(frozen=True)
class Located:
    side: str  # HEAD, or BASE for what the change removes
    file: str  # relative to the revision's root
    line: int
    # a generated object: the CR it is made from ("Bind9Cluster dns-system/dns")
    made_from: str = ""


class _Side:
    """One revision's objects and zones, indexed when first asked."""

    def __init__(self, name: str, desired: Desired) -> None:
        self.name, self.desired = name, desired
        self._objects: dict[ObjectKey, KubeObject] | None = None
        self._zones: dict[str, Zone] | None = None
        self._owners: dict[str, dict[tuple[str, str], list[ObjectKey]]] = {}

    def object(self, key: ObjectKey) -> KubeObject | None:
        if self._objects is None:
            self._objects = {o.key: o for o in self.desired.objects}
        return self._objects.get(key)

    def zone(self, name: str) -> Zone | None:
        if self._zones is None:
            self._zones = {z.name: z for z in self.desired.zones}
        return self._zones.get(name)

    def records(self, zone: Zone, owner: str, rtype: str) -> list[ObjectKey]:
        """The record CRs of the zone that make the RRset (owner, rtype), in the revision's
        order."""
        if zone.name not in self._owners:
            index: dict[tuple[str, str], list[ObjectKey]] = {}
            for key, placed in zone.records.items():
                index.setdefault(placed, []).append(key)
            self._owners[zone.name] = index
        return self._owners[zone.name].get((owner, rtype), [])


class Locator:
    """Answers where a change comes from (`__call__`) and whether a Kubernetes object is a CR
    written in the repository (`written`); `base`: the revision a delta compares against (None: a
    single revision)."""

    def __init__(self, head: Desired, base: Desired | None = None) -> None:
        self.head = _Side(HEAD, head)
        self.base = _Side(BASE, base) if base is not None else None

    def _side(self, change: Change) -> _Side | None:
        return self.base if change.action is Action.DELETE else self.head

    def written(self, change: Change) -> bool:
        """A Kubernetes object written in the repository (a CR), as opposed to one the agent
        generates."""
        target = change.target
        if not isinstance(target, KubeTarget):
            return False
        side = self._side(change)
        if side is None:
            return target.kind in kinds.KINDS
        obj = side.object(ObjectKey(target.kind, target.namespace, target.name))
        return obj is not None and obj.origin is not None

    def __call__(self, change: Change) -> Located | None:
        side, target = self._side(change), change.target
        if side is None:
            return None
        if isinstance(target, KubeTarget):
            return self._kube(side, ObjectKey(target.kind, target.namespace, target.name))
        zone = side.zone(target.zone)
        if zone is None:
            return None
        if isinstance(target, ZoneTarget):
            return Located(side.name, zone.origin.file, zone.origin.line)
        assert isinstance(target, RRsetTarget)
        record = self._edited(side, side.records(zone, target.name, target.rtype))
        obj = side.object(record) if record is not None else None
        origin = obj.origin if obj is not None and obj.origin is not None else zone.origin
        return Located(side.name, origin.file, origin.line)

    def _edited(self, side: _Side, keys: list[ObjectKey]) -> ObjectKey | None:
        """Of the records making an RRset, the first the change edited (added, or changed since the
        base): an edit of one record of an RRset links to that record; the first one otherwise."""
        other = self.base if side is self.head else None
        for key in keys if other is not None and len(keys) > 1 else ():
            now, before = side.object(key), other.object(key)  # type: ignore[union-attr]
            if before is None or now is None or _document(now) != _document(before):
                return key
        return keys[0] if keys else None

    @staticmethod
    def _kube(side: _Side, key: ObjectKey) -> Located | None:
        obj = side.object(key)
        if obj is None:
            return None
        if obj.origin is not None:
            return Located(side.name, obj.origin.file, obj.origin.line)
        source = side.object(obj.source) if obj.source is not None else None
        if source is None or source.origin is None:
            return None
        made_from = (f"{source.key.kind} "
                     f"{source.key.namespace}/{source.key.name}") if source.key.namespace \
            else f"{source.key.kind} {source.key.name}"
        return Located(side.name, source.origin.file, source.origin.line, made_from)


def _document(obj: KubeObject) -> object:
    """What a CR of the repository says (its validated model), to tell an edited one."""
    content = obj.content
    return content if isinstance(content, dict) else content.model


# a file:line as a URL (the CLI's --link-base), None: not linked
Link = Callable[[Located], "str | None"]


@dataclasses.dataclass(frozen=True)
class Sources:
    """What a pull-request comment knows of the repository: where changes come from, and how to link
    there."""

    locator: Locator | None = None
    link: Link | None = None

    def where(self, change: Change) -> Located | None:
        return self.locator(change) if self.locator is not None else None

    def written(self, change: Change) -> bool:
        """A CR of the repository; without a locator, a Bindy kind the agent did not generate (its
        label says)."""
        if self.locator is not None:
            return self.locator.written(change)
        if not isinstance(change.target, KubeTarget) or change.target.kind not in kinds.KINDS:
            return False
        body = change.after or change.before or {}
        return names.PARENT_KIND_LABEL not in ((body.get("metadata") or {}).get("labels") or {})


NOWHERE = Sources()
