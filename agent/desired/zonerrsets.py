"""A placed zone's RRsets from the records assigned to it and from the DNSZone itself (its apex NS
and glue: desired/nameservers.py, joined with records of the same name and type): one RRset per
owner name and type, the lowest TTL when its records disagree, and what a DNS server would refuse
found here, where the file and line are known: a CNAME at the apex, beside other data or with two
targets (RFC 1034 3.6.2, RFC 2181 10.1), an MX/SRV/NS target inside the zone without an address
(check-integrity), an RRset too big to send. A zone is rebuilt only when its placement or one of its
files' records changed.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Collection
from typing import Any

from agent.desired import nameservers, rrsets
from agent.desired.findings import Findings
from agent.desired.memo import Memo
from agent.desired.placement import Zone
from agent.load.loaded import Loaded
from agent.model import recordtypes
from agent.model.key import ObjectKey
from agent.model.problems import Problem, Severity

# recorddata.rendered, TTL
_Entry = tuple[Loaded, tuple[dict[str, Any], tuple[str, ...], tuple[Any, ...]], int]


def _grouped(zone: Zone, members: list[Loaded],
             out: Findings) -> dict[tuple[str, str], list[_Entry]]:
    """The zone's records by owner name and type, in their order, each with its values and TTL; the
    records whose name or values cannot be published are reported instead."""
    groups: dict[tuple[str, str], list[_Entry]] = {}
    if not members:
        return groups
    # with the first record, as rrsets.values does (once a zone, not a record)
    from agent.desired import recorddata

    for r in members:
        spec = r.model.spec  # type: ignore[attr-defined]
        try:
            owner = rrsets.owner_name(spec.name, zone.name)
            shown = recorddata.rendered(r.model)  # type: ignore[arg-type]
        except rrsets.RecordError as exc:
            out.add(r, exc.path, str(exc))
            continue
        key = (owner, rrsets.rtype_of(r.key.kind))
        entry = (r, shown, spec.ttl if spec.ttl is not None else zone.default_ttl)
        if (group := groups.get(key)) is None:
            groups[key] = [entry]
        else:
            group.append(entry)
        zone.records[r.key] = key
    return groups


def _add_rrsets(zone: Zone, members: list[Loaded], out: Findings) -> None:
    groups = _grouped(zone, members, out)
    apex_ns = groups.get((zone.name, "NS"))
    own = nameservers.zone_rrsets(zone, {t for _, (texts, _, _), _ in apex_ns for t in texts}
                                  if apex_ns else ())
    types_at: dict[str, set[str]] = defaultdict(set)
    for owner, rtype in [*groups, *own]:
        types_at[owner].add(rtype)
    _check_targets(zone, groups, types_at, out)
    for key in sorted(groups):
        owner, rtype = key
        group = groups[key]
        vals = _values(group)
        if rtype == "CNAME" and (problem := _cname_problem(zone.name, owner, types_at[owner],
                                                           vals)):
            _cname_conflict(zone, owner, group, groups, own, problem, out)
            continue
        # with the DNSZone's apex NS or glue, and records
        rrset = _rrset(zone, key, group, vals, own.pop(key, None), out)
        if too_big := rrsets.oversized(rrset):
            for r, _, _ in group:
                out.add(r, "spec", too_big)
            continue
        zone.rrsets[key] = rrset
    if own:  # the DNSZone's own RRsets no record joins, in order
        zone.rrsets = dict(sorted({**zone.rrsets, **own}.items()))


def _values(group: list[_Entry]) -> Collection[str]:
    """The values of an RRset's records: a single record's as they are (shared, not copied)."""
    if len(group) > 1:
        return set().union(*(texts for _, (texts, _, _), _ in group))
    return group[0][1][0].keys()


def _rrset(zone: Zone, key: tuple[str, str], group: list[_Entry], vals: Collection[str],
           declared: rrsets.RRset | None, out: Findings) -> rrsets.RRset:
    """The RRset of one owner name and type from its records (the lowest TTL when they disagree)
    and what the DNSZone declares there."""
    owner, rtype = key
    ttls = {ttl for _, _, ttl in group}
    if len(ttls) > 1:
        out.add(group[0][0], "spec.ttl", f"records of {owner} {rtype} disagree on TTL "
                f"({sorted(ttls)}); using the lowest", Severity.WARNING)
    ttl = min(ttls)
    # one record: its values as they are (shared, not copied)
    if declared is None and len(group) == 1:
        _, (_, texts, objects), _ = group[0]
        return rrsets.RRset(zone.name, owner, rtype, ttl, texts, objects)
    objects_of: dict[str, Any] = {}
    for _, (by_text, _, _), _ in group:
        objects_of.update(by_text)
    if declared is not None:
        vals, ttl = {*vals, *declared.rdatas}, min(ttl, declared.ttl)
        objects_of.update(zip(declared.rdatas, declared.objects, strict=True))
    return rrsets.build(zone.name, owner, rtype, ttl, vals, objects_of.values())


def _cname_problem(origin: str, owner: str, types: set[str], values: Collection[str]) -> str | None:
    """Why a CNAME RRset cannot be served (RFC 1034 3.6.2, RFC 2181 10.1), or None."""
    others = sorted(types - {"CNAME"})
    if owner == origin:
        return "a CNAME cannot be at the zone apex (it would hide the SOA and NS)"
    if others:
        return f"a CNAME cannot share its name with other records ({', '.join(others)})"
    if len(values) > 1:
        return (f"a name can have only one CNAME target, got {len(values)}: "
                f"{', '.join(sorted(values))}")
    return None


def _where(r: Loaded) -> str:
    return f"{r.key.kind} {r.key.namespace}/{r.key.name} at {r.origin_at('spec.name')}"


def _cname_conflict(zone: Zone, owner: str, group: list[_Entry],
                    groups: dict[tuple[str, str], list[_Entry]], own: dict[tuple[str, str], Any],
                    problem: str, out: Findings) -> None:
    """A CNAME that cannot be served, said at each CNAME record; beside other data, each says where
    the others are, and each of those records says where the CNAME is (the record just added may be
    either)."""
    beside = owner != zone.name  # at the apex, the zone itself is what it conflicts with
    others = [r for (name, rtype), entries in sorted(groups.items()) if beside and name == owner
              and rtype != "CNAME"
              for r, _, _ in entries]
    declared = [f"the nameServers of DNSZone {zone.key.namespace}/{zone.key.name} at {zone.origin}"
                for (name, rtype) in sorted(own) if beside and name == owner][:1]
    elsewhere = [_where(r) for r in others] + declared
    for r, _, _ in group:
        out.add(r, "spec.name", problem + (f": {'; '.join(elsewhere)}" if elsewhere else ""))
    cnames = "; ".join(_where(r) for r, _, _ in group)
    for r in others:
        out.add(r, "spec.name",
                f"{owner} also has a CNAME ({cnames}), and a CNAME cannot share its name with "
                "other records (RFC 1034 3.6.2): remove one of them, or give it another name")


def _check_targets(zone: Zone, groups: dict[tuple[str, str], list[_Entry]],
                   types_at: dict[str, set[str]], out: Findings) -> None:
    """BIND's check-integrity refuses a whole UPDATE whose MX, SRV or NS record points at a name
    inside the zone that has no A/AAAA record; catch it here, where the file and line are known."""
    for group in groups.values():
        field = recordtypes.of_kind(group[0][0].key.kind).integrity_field
        if field is None:
            continue
        for r, (_, texts, _), _ in group:
            for value in texts:  # sorted
                target = value.split()[-1]
                inside = target == zone.name or target.endswith("." + zone.name)
                if inside and target != "." and not types_at.get(target, set()) & {"A", "AAAA"}:
                    out.add(r, field, f"{target} is inside zone {zone.name} but has no A or AAAA "
                            "record; BIND refuses such an update (check-integrity). Add an ARecord "
                            "for it")


_ZoneInputs = tuple[Zone, list[list[Loaded]]]  # a placed zone, and its records: a list per file


def _with_rrsets(inputs: _ZoneInputs) -> tuple[Zone, list[Problem]]:
    """The placed zone with its RRsets, and the problems found building them."""
    placed, members = inputs
    # the placed zone is shared by revisions: never changed
    zone, scratch = placed.fresh(), Findings()
    _add_rrsets(zone, [r for found in members for r in found], scratch)
    zone.from_other_namespaces = [k for k in zone.records if k.namespace != zone.key.namespace]
    return zone, scratch.problems


def _same_inputs(a: _ZoneInputs, b: _ZoneInputs) -> bool:
    """The same placement (the same object while the DNSZone and the instances are) and the same
    list of each file's records (the same list while that file's assignment is reused)."""
    return a[0] is b[0] and len(a[1]) == len(b[1]) and all(map(operator.is_, a[1], b[1]))


def zones_rrsets(placed: list[Zone], members: dict[ObjectKey, list[list[Loaded]]], out: Findings,
                  memo: Memo, sources: dict[ObjectKey, Loaded] | None = None) -> list[Zone]:
    """Every placed zone with its RRsets; the very zone of the last revision when nothing it comes
    from changed. `sources`: each zone's DNSZone, where a name server without an address
    (nameservers.unaddressed, an error) and an address for a name that is no name server
    (nameservers.stray, a warning) are reported."""
    inputs = [(zone, members.get(zone.key, [])) for zone in placed]
    built = memo.each(("rrsets",), inputs, _with_rrsets, name=lambda i: i[0].name,
                      same=_same_inputs)
    for zone, problems in built:
        out.problems += problems
        if sources is not None and zone.key in sources:
            for path, message in nameservers.unaddressed(zone):
                out.add(sources[zone.key], path, message)
            for path, message in nameservers.stray(zone):
                out.add(sources[zone.key], path, message, Severity.WARNING)
    return [zone for zone, _ in built]
