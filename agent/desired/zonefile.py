"""Zone files (RFC 1035 master files) in and out (pure), for users who come from a zone file or go
to one.

    parse(text, zone)  a master file -> the zone's RRsets, exactly as an AXFR of the zone served
                       from that file gives them (`rrsets_of`, shared with clients/axfr.py), so that
                       `bindy-agent import --zone-file` writes the CRs the AXFR import writes.
                       $ORIGIN, $TTL and $GENERATE are read as BIND reads them; $INCLUDE is refused
                       (a file names no other file the agent would read); the records are bounded: a
                       $GENERATE range is summed up front where it is written on one line, and every
                       record is counted as it is made, so no form of $GENERATE (in parentheses,
                       over several lines) makes more than twice the limit before the read stops.
    render(zone)       a placed zone -> the master file named would load: $ORIGIN, $TTL, the SOA of
                       the DNSZone, its apex NS and glue, and every RRset of its records.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import dns.exception
import dns.name
import dns.rdatatype
import dns.zone

from agent.desired import rrsets

if TYPE_CHECKING:
    from agent.desired.placement import Zone
    from agent.model.ownership import Key

DIRECTIVES = ("$ORIGIN", "$TTL", "$GENERATE")  # what BIND reads that a single file may hold
_GENERATE = re.compile(r"^\$GENERATE\s+(\d+)-(\d+)(?:/(\d+))?", re.IGNORECASE | re.MULTILINE)
_STEP_ZERO = re.compile(r"^\$GENERATE[\s(]+\d+-\d+/0+\b", re.IGNORECASE | re.MULTILINE)


class ZoneFileError(ValueError):
    """A master file that cannot be imported: the message starts with `file:line:` where one is
    known."""


def rrsets_of(zone_obj: dns.zone.Zone, zone: str) -> dict[Key, rrsets.RRset]:
    """A dnspython zone's RRsets, owners and names in the data absolute (the zone stores them
    relative)."""
    out: dict[Key, rrsets.RRset] = {}
    origin = zone_obj.origin or dns.name.from_text(zone)
    for name, node in zone_obj.nodes.items():
        owner = rrsets.absolute(name.derelativize(origin).to_text())
        for rdataset in node.rdatasets:
            rtype = dns.rdatatype.to_text(rdataset.rdtype)
            out[(owner, rtype)] = rrsets.build(zone, owner, rtype, rdataset.ttl,
                                               (r.to_text(origin=origin, relativize=False)
                                                for r in rdataset))
    return out


def parse(text: str, zone: str, *, filename: str, max_records: int) -> dict[Key, rrsets.RRset]:
    """The RRsets of a master file for `zone` (absolute), at most `max_records` records;
    ZoneFileError saying where and why otherwise."""
    generated = sum((int(stop) - int(start)) // int(step or 1) + 1
                    for start, stop, step in _GENERATE.findall(text)
                    if int(stop) >= int(start) and int(step or 1) > 0)
    if generated > max_records:
        raise ZoneFileError(f"{filename}: its $GENERATE lines make {generated:,} records, more "
                            f"than the {max_records:,} an import reads (--max-transfer-records)")
    try:
        found = dns.zone.from_text(text, origin=zone, relativize=True, filename=filename,
                                   allow_include=False, check_origin=True,
                                   allow_directives=DIRECTIVES,
                                   transaction_setup=_counted(filename, max_records))
    except dns.zone.NoSOA:
        raise ZoneFileError(f"{filename}: no SOA record at the zone's origin {zone}: is this the "
                            f"file of {zone}? (its $ORIGIN, or --zone)") from None
    except dns.zone.NoNS:
        raise ZoneFileError(f"{filename}: no NS records at the zone's origin {zone}") from None
    except dns.exception.DNSException as exc:
        message = str(exc)
        if message.endswith("Text input is malformed.") and _STEP_ZERO.search(text):
            message = (message.rpartition(" Text input")[0] + " a $GENERATE range with a step of 0 "
                       "(start-stop/step): give a step of 1 or more")
        if "$INCLUDE" in message.upper():
            message = (message.split(": zone file directive")[0] + ": $INCLUDE is refused: "
                       "an import reads one file; write what it includes into it")
        raise ZoneFileError(message if message.startswith(filename)
                            else f"{filename}: {message}") from None
    out = rrsets_of(found, zone)
    records = sum(len(rr.rdatas) for rr in out.values())
    if records > max_records:
        raise ZoneFileError(f"{filename}: {records:,} records, more than the {max_records:,} an "
                            "import reads (--max-transfer-records)")
    return out


def _counted(filename: str, max_records: int) -> Callable[[Any], None]:
    """A transaction_setup counting every record as dnspython stores it: past twice `max_records`
    the read stops (below that, the file is read whole and refused with the number of records it
    holds)."""
    made, stop = [0], 2 * max_records + 1000

    def count(txn: Any, name: Any, rdataset: Any) -> None:
        made[0] += 1
        if made[0] > stop:
            raise ZoneFileError(f"{filename}: more than {stop:,} records (with what its $GENERATE "
                                f"lines make), more than the {max_records:,} an import reads "
                                f"(--max-transfer-records)")

    return lambda txn: txn.check_put_rdataset(count)


def _soa(zone: Zone) -> str:
    soa = zone.spec.soa_record
    return (f"@ {zone.default_ttl} IN SOA {rrsets.absolute(soa.primary_ns)} "
            f"{rrsets.absolute(soa.admin_email)} {soa.serial} {soa.refresh} {soa.retry} "
            f"{soa.expire} {soa.negative_ttl}")


def render(zone: Zone, header: str = "") -> str:
    """The zone as a master file named loads: its SOA and TTL from the DNSZone, then every RRset
    (the apex first, then by name), names relative to the zone, data as the agent writes it."""
    lines = [header.rstrip("\n")] if header else []
    lines += [f"$ORIGIN {zone.name}", f"$TTL {zone.default_ttl}", _soa(zone)]
    for (name, rtype), rrset in sorted(zone.rrsets.items(),
                                       key=lambda kv: (kv[0][0] != zone.name, kv[0])):
        owner = "@" if name == zone.name else rrset.relative_name()
        lines += [f"{owner} {rrset.ttl} IN {rtype} {value}" for value in rrset.rdatas]
    return "\n".join(lines) + "\n"
