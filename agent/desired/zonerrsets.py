"""A placed zone's RRsets from the records assigned to it and from the DNSZone itself (its apex NS and
glue: desired/nameservers.py, joined with records of the same name and type): one RRset per owner
name and type, the lowest TTL when its records disagree, and what a DNS server would refuse found here, where the
file and line are known: a CNAME at the apex, beside other data or with two targets (RFC 1034 3.6.2,
RFC 2181 10.1), an MX/SRV/NS target inside the zone without an address (check-integrity), an RRset
too big to send. A zone is rebuilt only when its placement or one of its files' records changed.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from typing import Any

from agent.desired import nameservers, rrsets
from agent.desired.findings import Findings
from agent.desired.memo import Memo
from agent.desired.placement import Zone
from agent.load.loaded import Loaded
from agent.model.key import ObjectKey
from agent.model.problems import Problem, Severity


def _add_rrsets(zone: Zone, members: list[Loaded], out: Findings) -> None:
    sources: dict[tuple[str, str], list[Loaded]] = defaultdict(list)
    values: dict[tuple[str, str], set[str]] = defaultdict(set)
    objects: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
    own_values: dict[ObjectKey, set[str]] = {}
    ttls: dict[tuple[str, str], set[int]] = defaultdict(set)
    for r in members:
        spec = r.model.spec  # type: ignore[attr-defined]
        try:
            owner = rrsets.owner_name(spec.name, zone.name)
            texts = rrsets.values(r.model)  # type: ignore[arg-type]
        except rrsets.RecordError as exc:
            out.add(r, exc.path, str(exc))
            continue
        rtype = rrsets.rtype_of(r.key.kind)
        key = (owner, rtype)
        sources[key].append(r)
        own_values[r.key] = set(texts)
        values[key].update(texts)
        objects[key].update(texts)
        ttls[key].add(spec.ttl if spec.ttl is not None else zone.default_ttl)
        zone.records[r.key] = key
    own = nameservers.zone_rrsets(zone, values.get((zone.name, "NS"), ()))
    types_at: dict[str, set[str]] = defaultdict(set)
    for owner, rtype in [*values, *own]:
        types_at[owner].add(rtype)
    _check_targets(zone, sources, own_values, types_at, out)
    for key, vals in sorted(values.items()):
        owner, rtype = key
        if rtype == "CNAME" and (problem := _cname_problem(zone.name, owner, types_at[owner], vals)):
            for r in sources[key]:
                out.add(r, "spec.name", problem)
            continue
        if len(ttls[key]) > 1:
            first = sources[key][0]
            out.add(first, "spec.ttl", f"records of {owner} {rtype} disagree on TTL "
                    f"({sorted(ttls[key])}); using the lowest", Severity.WARNING)
        ttl = min(ttls[key])
        if (declared := own.pop(key, None)) is not None:  # the DNSZone's apex NS or glue, and records
            vals, ttl = vals | set(declared.rdatas), min(ttl, declared.ttl)
            objects[key].update(zip(declared.rdatas, declared.objects, strict=True))
        rrset = rrsets.build(zone.name, owner, rtype, ttl, vals, objects[key].values())
        if too_big := rrsets.oversized(rrset):
            for r in sources[key]:
                out.add(r, "spec", too_big)
            continue
        zone.rrsets[key] = rrset
    if own:  # the DNSZone's own RRsets no record joins, in order
        zone.rrsets = dict(sorted({**zone.rrsets, **own}.items()))


def _cname_problem(origin: str, owner: str, types: set[str], values: set[str]) -> str | None:
    """Why a CNAME RRset cannot be served (RFC 1034 3.6.2, RFC 2181 10.1), or None."""
    others = sorted(types - {"CNAME"})
    if owner == origin:
        return "a CNAME cannot be at the zone apex (it would hide the SOA and NS)"
    if others:
        return f"a CNAME cannot share its name with other records ({', '.join(others)})"
    if len(values) > 1:
        return f"a name can have only one CNAME target, got {len(values)}: {', '.join(sorted(values))}"
    return None


_TARGET_FIELD = {"MX": "spec.mailServer", "SRV": "spec.target", "NS": "spec.nameserver"}


def _check_targets(zone: Zone, sources: dict[tuple[str, str], list[Loaded]], own_values: dict[ObjectKey, set[str]],
                   types_at: dict[str, set[str]], out: Findings) -> None:
    """BIND's check-integrity refuses a whole UPDATE whose MX, SRV or NS record points at a name
    inside the zone that has no A/AAAA record; catch it here, where the file and line are known."""
    for (_, rtype), records in sources.items():
        if rtype not in _TARGET_FIELD:
            continue
        for r in records:
            for value in sorted(own_values[r.key]):
                target = value.split()[-1]
                inside = target == zone.name or target.endswith("." + zone.name)
                if inside and target != "." and not types_at.get(target, set()) & {"A", "AAAA"}:
                    out.add(r, _TARGET_FIELD[rtype], f"{target} is inside zone {zone.name} but has no A or AAAA "
                            "record; BIND refuses such an update (check-integrity). Add an ARecord for it")


_ZoneInputs = tuple[Zone, list[list[Loaded]]]  # a placed zone, and its records: a list per file


def _with_rrsets(inputs: _ZoneInputs) -> tuple[Zone, list[Problem]]:
    """The placed zone with its RRsets, and the problems found building them."""
    placed, members = inputs
    zone, scratch = placed.fresh(), Findings()  # the placed zone is shared by revisions: never changed
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
    (nameservers.unaddressed) and an address for a name that is no name server (nameservers.stray)
    are warned about."""
    inputs = [(zone, members.get(zone.key, [])) for zone in placed]
    built = memo.each(("rrsets",), inputs, _with_rrsets, name=lambda i: i[0].name, same=_same_inputs)
    for zone, problems in built:
        out.problems += problems
        if sources is not None and zone.key in sources:
            for path, message in nameservers.unaddressed(zone) + nameservers.stray(zone):
                out.add(sources[zone.key], path, message, Severity.WARNING)
    return [zone for zone, _ in built]
