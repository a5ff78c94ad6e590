"""Each record into one DNSZone (pure): the zones' `recordsFrom` selectors, the record's
`spec.zone`, and for a fully qualified `name`, adoption by the zone with the longest matching
suffix. Two zones is an error, and so is none: such a record would never be
published (its values are checked all the same). A file's assignment is reused while the file and
the zones are the same objects as in the last revision (desired/memo.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from agent.desired import hints, rrsets
from agent.desired.findings import Findings
from agent.desired.memo import Memo
from agent.desired.placement import Zone
from agent.load.loaded import Loaded
from agent.model import kinds
from agent.model.base import LabelSelector
from agent.model.key import ObjectKey
from agent.model.problems import Problem

RECORD_KIND_NAMES = {k.name for k in kinds.RECORD_KINDS}


class _ZoneSelectors:
    """The zones that may claim a record: recordsFrom selectors indexed by the label they need
    first, spec.zone and fully qualified names by zone name. Built once per set of zones."""

    def __init__(self, zones: list[Zone]) -> None:
        self.by_label: dict[tuple[str | None, str, str],
                            list[tuple[int, Zone, LabelSelector]]] = defaultdict(list)
        self.generic: dict[str | None, list[tuple[int, Zone, LabelSelector]]] = defaultdict(list)
        self.by_name: dict[str, list[Zone]] = defaultdict(list)
        self.origins = {z.key: z.origin for z in zones}
        self.in_namespace: dict[str | None, list[Zone]] = defaultdict(list)
        self._by_namespace: dict[str | None, list[tuple[str, LabelSelector]]] = {}
        self._labelled: dict[str | None, tuple[str, LabelSelector] | None] = {}
        for order, zone in enumerate(zones):
            self.by_name[zone.name].append(zone)
            self.in_namespace[zone.key.namespace].append(zone)
            for source in zone.spec.records_from or []:
                entry = (order, zone, source.selector)
                if source.selector.match_labels:
                    k, v = next(iter(source.selector.match_labels.items()))
                    self.by_label[(zone.key.namespace, k, v)].append(entry)
                else:
                    self.generic[zone.key.namespace].append(entry)

    def selecting(self, record: Loaded) -> list[Zone]:
        labels, ns = record.model.metadata.get("labels") or {}, record.key.namespace
        candidates = list(self.generic.get(ns, ()))
        for k, v in labels.items():
            candidates += self.by_label.get((ns, k, v), ())
        # most records: no zone, or the one whose selector names a label of theirs
        if len(candidates) < 2:
            return [zone for _, zone, sel in candidates if sel.matches(labels)]
        matched = {order: zone for order, zone, sel in candidates if sel.matches(labels)}
        return [matched[o] for o in sorted(matched)]

    def named(self, record: Loaded, already: list[Zone], out: Findings,
              budget: hints.Budget) -> list[Zone]:
        """spec.zone, else adoption of a fully qualified name by the zone with the longest
        suffix."""
        spec = record.model.spec  # type: ignore[attr-defined]
        if spec.zone:
            matches = self.by_name.get(rrsets.absolute(spec.zone), [])
            same_ns = [z for z in matches if z.key.namespace == record.key.namespace] or matches
            if not same_ns:
                hint = budget.hint("zone name",
                                   lambda: hints.name_meant(rrsets.absolute(spec.zone),
                                                            self.by_name))
                hint = hint if spec.zone.endswith(".") else hint.replace(".'?)", "'?)")
                out.add(record, "spec.zone", f"no DNSZone with zoneName {spec.zone!r}{hint}")
            return [z for z in same_ns[:1] if z not in already]
        if spec.name.endswith(".") and not already:
            labels = spec.name.lower().rstrip(".").split(".")
            for i in range(len(labels)):
                candidates = self.by_name.get(".".join(labels[i:]) + ".")
                if candidates:
                    return [candidates[0]]
        return []

    def _selectors(self, ns: str | None) -> list[tuple[str, LabelSelector]]:
        """(who, selector) of the recordsFrom of the zones of a namespace, made once per
        namespace."""
        if ns not in self._by_namespace:
            self._by_namespace[ns] = [(str(z.key), s.selector)
                                      for z in self.in_namespace.get(ns, [])
                                      for s in z.spec.records_from or []]
        return self._by_namespace[ns]

    def _first_labelled(self, ns: str | None) -> tuple[str, LabelSelector] | None:
        if ns not in self._labelled:
            self._labelled[ns] = next(((who, s) for who, s in self._selectors(ns)
                                       if s.match_labels), None)
        return self._labelled[ns]

    def homeless(self, record: Loaded, budget: hints.Budget) -> tuple[str, str]:
        """(field path, message) for a record no DNSZone takes: why, and the fix most likely
        meant."""
        spec, ns = record.model.spec, record.key.namespace  # type: ignore[attr-defined]
        labels = record.model.metadata.get("labels") or {}
        never = "belongs to no DNSZone, so it would never be published"
        if spec.name.endswith("."):
            hint = budget.hint("zone suffix", lambda: hints.zone_meant(spec.name, self.by_name))
            return "spec.name", (f"{never}: no DNSZone's zoneName is a suffix of "
                                 f"{spec.name}{hint}; add the zone's "
                                 "DNSZone, or correct the name")
        why = (f"{never} (no DNSZone's recordsFrom selects its labels, it has no spec.zone, its "
               f"name is relative)")
        zones = self.in_namespace.get(ns, [])
        selectors = self._selectors(ns)
        if hint := budget.hint("record label", lambda: hints.label_for(labels, selectors)):
            return "metadata.labels", why + hint
        path = "metadata.labels" if labels else ""
        if (first := self._first_labelled(ns)) is not None:
            who, selector = first
            key, value = next(iter((selector.match_labels or {}).items()))
            return path, f"{why}: add the label '{key}: {value}' that {who} selects"
        if zones:
            return path, (f"{why}: add a recordsFrom selector to {zones[0].key} and labels it "
                          f"selects")
        return path, (f"{why}: there is no DNSZone in namespace {ns}; add one, or give the record "
                      "the namespace of its DNSZone")


def _check_values(record: Loaded, out: Findings) -> None:
    """A record no zone takes is still checked as one in a zone would be: its name and its
    values."""
    from agent.desired import recorddata

    try:
        rrsets.check_name(record.model.spec.name)  # type: ignore[attr-defined]
        recorddata.rendered(record.model)  # type: ignore[arg-type]
    except rrsets.RecordError as exc:
        out.add(record, exc.path, str(exc))


def _assign_file(records: list[Loaded], zones: _ZoneSelectors,
                 budget: hints.Budget) -> tuple[dict[ObjectKey, list[Loaded]], list[Problem]]:
    """Which zone takes each record of one file (by zone key), and the problems found (with
    did-you-mean hints within the run's `budget`)."""
    out = Findings()
    by_zone: dict[ObjectKey, list[Loaded]] = defaultdict(list)
    for r in records:
        zs = zones.selecting(r)
        zs += zones.named(r, zs, out, budget)
        if len(zs) > 1:
            names = ", ".join(f"{z.key} ({zones.origins[z.key]})" for z in zs)
            out.add(r, "metadata.labels", f"selected by more than one zone: {names}")
            _check_values(r, out)
        elif not zs:
            if not out.failed(r.key):
                out.add(r, *zones.homeless(r, budget))
            _check_values(r, out)
        else:
            by_zone[zs[0].key].append(r)
    return dict(by_zone), out.problems


def assign_records(zones: list[Zone], sources: dict[ObjectKey, Loaded],
                   by_file: Sequence[Sequence[Loaded]],
                    out: Findings, memo: Memo) -> dict[ObjectKey, list[list[Loaded]]]:
    """Each zone's records, as one list per file that has some; a file's assignment (and so its
    lists) is reused while it and the zones are the same objects as in the last revision."""
    # the zones as written: a file re-read for another reason leaves them the same
    token = memo.token(("zone-set",),
                       tuple((z.key, sources[z.key].origin, sources[z.key].model) for z in zones))
    selectors = memo.get(("zone-selectors",), (token,), lambda: _ZoneSelectors(zones))
    budget = hints.Budget()  # this run's did-you-mean hints
    def assign(objects: Sequence[Loaded]) -> tuple[dict[ObjectKey, list[Loaded]], list[Problem]]:
        return _assign_file([o for o in objects if o.key.kind in RECORD_KIND_NAMES], selectors,
                            budget)

    # a cached file's list stays the same object
    files = [objects for objects in by_file if objects]
    per_file = memo.each(("assign",), files, assign, name=lambda objects: objects[0].origin.file,
                         shared=(token,))
    members: dict[ObjectKey, list[list[Loaded]]] = defaultdict(list)
    for by_zone, problems in per_file:
        out.problems += problems
        for key, found in by_zone.items():
            members[key].append(found)
    return members
