"""Records no server would ever answer with (pure), found where the file and line are known:

  * below an NS delegation of their zone (an NSRecord whose name is not the apex): a server answers
    a query there with a referral to the delegated name servers, never with the record. The
    delegation's own NS and DS, and the addresses of its name servers (glue), belong there;
  * inside another DNSZone that the same servers serve (a record of example.org. named
    www.sub.example.org. while sub.example.org. is a zone of its own on those servers): they answer
    from that zone. The parent's NS and DS at the child's apex are its delegation and belong there.

Only zones with such a cut are walked; desired/zoneset.py checks a zone again only when it, or a
zone below it, changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.desired.findings import Findings
from agent.desired.placement import Zone
from agent.load.loaded import Loaded

_AT_CUT = ("NS", "DS")  # what the parent holds at a delegation point
_GLUE = ("A", "AAAA")


def _cuts(zone: Zone, inner: list[Zone]) -> dict[str, str]:
    """Every name strictly below the apex where the zone's data stops, with why (words for a
    message). `inner`: the zones whose names are below this zone's."""
    cuts: dict[str, str] = {}
    for owner, rtype in zone.rrsets:
        if rtype == "NS" and owner != zone.name:
            cuts[owner] = (f"below the delegation of {owner} (the NS records at {owner} in "
                           f"{zone.name}): a server "
                           "answers a query there with a referral to the delegated name servers, "
                           f"never with this record; move it to the zone {owner} is delegated to, "
                           f"or remove it")
    servers = set(zone.instances)
    for other in inner:
        if servers & set(other.instances):
            cuts[other.name] = (f"inside zone {other.name} ({other.key}), which the same servers "
                                f"serve: they answer for it from that zone, never with this "
                                f"record; put it in {other.name} (a label its "
                                "recordsFrom selects, or spec.zone), or remove it")
    return cuts


def below(zones: Sequence[Zone]) -> dict[str, list[Zone]]:
    """Zone name -> the zones below it (each zone's ancestors looked up: no pair of zones
    compared)."""
    names = {z.name for z in zones}
    out: dict[str, list[Zone]] = {}
    for zone in zones:
        name = zone.name
        while "." in name[:-1]:
            name = name.split(".", 1)[1]
            if name in names:
                out.setdefault(name, []).append(zone)
    return out


def _glue(zone: Zone) -> set[str]:
    """The names the zone's NS records point at: addresses there are glue, wherever they are."""
    return {target.lower() for (_, rtype), rrset in zone.rrsets.items() if rtype == "NS"
            for target in rrset.rdatas}


def _cut_above(owner: str, apex: str, cuts: dict[str, str]) -> str | None:
    """The highest cut at or above `owner` (below the apex), or None."""
    found, name = None, owner
    while name != apex and name:
        if name in cuts:
            found = name
        name = name.split(".", 1)[1] if "." in name[:-1] else ""
    return found


def check(zone: Zone, inner: Sequence[Zone], members: Sequence[Sequence[Loaded]],
          out: Findings) -> None:
    """An error on each record of the zone (`members`: its records, by file) that a cut hides;
    `inner`: the zones below it (`below`)."""
    cuts = _cuts(zone, list(inner))
    if not cuts:
        return
    glue = _glue(zone)
    for found in members:
        for record in found:
            placed = zone.records.get(record.key)
            if placed is None:
                continue
            owner, rtype = placed
            cut = _cut_above(owner, zone.name, cuts)
            if (cut is None or (owner == cut and rtype in _AT_CUT)
                    or (rtype in _GLUE and owner in glue)):
                continue
            out.add(record, "spec.name", f"{owner} {rtype} is {cuts[cut]}")
