"""The zone's SOA follows the DNSZone's `soaRecord` after the zone was created (pure).

The zone API writes the SOA when it creates the zone; afterwards a change of `soaRecord` - above all
of `primaryNs` when the zone's name servers move - is one RRset change on each primary that serves
the zone: the served SOA with the DNSZone's primary name server, mailbox and timers, and the served
serial plus one (named takes an SOA only with a greater serial, and counts on from it). The serial
itself stays the server's: `soaRecord.serial` is only the first one. The change never makes the SOA
one of the agent's managed RRsets (it is the zone's own), is not part of a run's intent (it cannot
be mistaken for the agent's data), and is not confirmed by value afterwards (the serial moves on
with every later UPDATE); the next run's comparison is what confirms it.
"""

from __future__ import annotations

from agent.desired import rrsets
from agent.desired.placement import Zone
from agent.desired.rrsets import RRset
from agent.model.ownership import Key
from agent.model.rrchange import RRChange

SERIAL_SPACE = 2**32


def key(zone: str) -> Key:
    return (zone, "SOA")


def change(zone: Zone, have: dict[Key, RRset]) -> RRChange | None:
    """The SOA update a primary that serves `have` needs, or None when its SOA says what the DNSZone
    says."""
    before = have.get(key(zone.name))
    if before is None or len(before.rdatas) != 1:
        return None
    fields = before.rdatas[0].split()
    if len(fields) != 7 or not all(f.isdigit() for f in fields[2:]):
        return None
    spec = zone.spec.soa_record
    wanted = [rrsets.absolute(spec.primary_ns), rrsets.absolute(spec.admin_email),
              str(spec.refresh), str(spec.retry), str(spec.expire), str(spec.negative_ttl)]
    served = [fields[0].lower(), fields[1].lower(), *fields[3:]]
    if served == wanted:
        return None
    serial = (int(fields[2]) + 1) % SERIAL_SPACE
    value = " ".join([*wanted[:2], str(serial), *wanted[2:]])
    return RRChange("update", before,
                    rrsets.build(zone.name, zone.name, "SOA", before.ttl, [value]))


def is_soa(change: RRChange) -> bool:
    return change.key[1] == "SOA"
