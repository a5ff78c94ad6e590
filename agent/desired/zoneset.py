"""The zones of a revision (pure): every DNSZone placed on its instances (desired/placement.py),
each zone name declared once, each record in its zone (desired/assignment.py), each zone's RRsets
(desired/zonerrsets.py), and the records no server would answer with (desired/occlusion.py). With a
long-running agent's memo, a zone's placement, a file's assignment and a zone's RRsets are reused
while what they come from is the same (desired/memo.py).
"""

from __future__ import annotations

import operator

from agent.desired import assignment, nameservers, occlusion, placement, rrsets, zonerrsets
from agent.desired.findings import Findings
from agent.desired.memo import NO_MEMO, Memo
from agent.desired.placement import ClusterView, InstanceView, Zone
from agent.load.loaded import Loaded
from agent.load.manifest import Manifest
from agent.model.key import ObjectKey
from agent.model.problems import Problem, Severity
from agent.model.zone import DNSZone


def place(manifest: Manifest, clusters: dict[ObjectKey, ClusterView],
          instances: list[InstanceView], memo: Memo = NO_MEMO) -> tuple[list[Zone], list[Problem]]:
    """Every DNSZone of the revision placed, with its records and RRsets (file order; the first of
    a zone name), and the problems found."""
    out = Findings()
    fleet = placement.Fleet.of(clusters, instances)
    fleet_token = memo.token(("fleet",), (list(clusters.values()), instances))
    def place_one(obj: Loaded) -> tuple[Zone, list[Problem]]:
        assert isinstance(obj.model, DNSZone)
        return placement.placed(obj, rrsets.absolute(obj.model.spec.zone_name), fleet)

    found = manifest.of_kind("DNSZone")
    # a zone's placement is reused while its DNSZone is the same object and the instances say the
    # same
    each = memo.each(("placed",), found, place_one, name=lambda obj: obj.key, shared=(fleet_token,))
    placed_zones: list[Zone] = []  # placed, without RRsets
    sources: dict[ObjectKey, Loaded] = {}
    first_seen: dict[str, Zone] = {}
    for obj, (placed, problems) in zip(found, each, strict=True):
        if placed.name in first_seen:
            first = first_seen[placed.name]
            out.add(obj, "spec.zoneName", f"zone {obj.model.spec.zone_name} is already "  # type: ignore[attr-defined]
                    f"declared by {first.key} at {first.origin}")
            continue
        out.problems += problems
        first_seen[placed.name] = placed
        sources[placed.key] = obj
        placed_zones.append(placed)
    members = assignment.assign_records(placed_zones, sources,
                                        manifest.by_file or [manifest.objects], out, memo)
    zones = zonerrsets.zones_rrsets(placed_zones, members, out, memo)
    # a zone built again is checked again; a reused one's findings are the ones it had (the same
    # zone object holds the same records: zonerrsets reuses it only then)
    inner = occlusion.below(zones)
    checked = [(z, sources[z.key], tuple(inner.get(z.name, ())), members.get(z.key, []))
               for z in zones]
    for problems in memo.each(("zone-checks",), checked, _zone_problems,
                              name=lambda item: item[0].name, same=_same_zone):
        out.problems += problems
    return zones, out.problems


# zone, DNSZone, zones below, records
_Checked = tuple[Zone, Loaded, tuple[Zone, ...], list[list[Loaded]]]


def _zone_problems(item: _Checked) -> list[Problem]:
    """On the zone's DNSZone: a name server inside the zone without an address
    (nameservers.unaddressed: BIND would not load the zone, an error) and an address for a name that
    is no name server (nameservers.stray: no effect, a warning); on its records: those no server
    would answer with (desired/occlusion.py)."""
    zone, source, inner, records = item
    out = Findings()
    for path, message in nameservers.unaddressed(zone):
        out.add(source, path, message)
    for path, message in nameservers.stray(zone):
        out.add(source, path, message, Severity.WARNING)
    occlusion.check(zone, inner, records, out)
    return out.problems


def _same_zone(a: _Checked, b: _Checked) -> bool:
    return (a[0] is b[0] and a[1] is b[1] and len(a[2]) == len(b[2])
            and all(map(operator.is_, a[2], b[2])))
