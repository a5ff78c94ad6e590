"""A DNSZone's own name servers as RRsets (pure): the apex NS and the glue of name servers inside
the zone.

    apex NS   spec.nameServers[].hostname, or spec.soaRecord.primaryNs when there are none
    A glue    spec.nameServers[].ipv4Address, spec.nameServerIps values that are IPv4 addresses
    AAAA glue spec.nameServers[].ipv6Address, spec.nameServerIps values that are IPv6 addresses

Glue is kept only for the zone's name servers inside the zone: names the apex NS names (the
DNSZone's `nameServers`, or its SOA's primary name server, and NSRecords at the apex). A server
elsewhere is found through its own zone; a `nameServerIps` entry for any other name has no effect
and warns at validate (`stray`), so a repository cannot make an arbitrary name of the zone the
DNSZone's. All of them carry the zone's TTL and are part of the zone's desired RRsets
(desired/zonerrsets.py, merged with the records Git declares at the same name and type), so they are
kept by DNS UPDATE on every run and an edit of `nameServers` after the zone was created takes
effect. The zone API's create body carries the apex NS and the IPv4 glue too (`created`): bindcar
writes every `nameServerIps` entry as an A record, so IPv6 glue is written by UPDATE right after the
create.
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from agent.desired import rrsets
from agent.desired.placement import Zone
from agent.desired.rrsets import RRset

if TYPE_CHECKING:
    import dns.rdata

    from agent.model.ownership import Key


def hosts(zone: Zone) -> list[str]:
    """The apex NS targets (absolute, lowercase): `nameServers`, else the SOA's primary name
    server."""
    named = [rrsets.absolute(ns.hostname) for ns in zone.spec.name_servers or []]
    return list(dict.fromkeys(named)) or [rrsets.absolute(zone.spec.soa_record.primary_ns)]


def inside(host: str, zone: str) -> bool:
    return host == zone or host.endswith("." + zone)


def _address(text: str) -> dns.rdata.Rdata | None:
    """An A or AAAA rdata for an address; None for what is not one (placement reports it)."""
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    import dns.rdata
    from dns.rdataclass import IN
    from dns.rdatatype import RdataType

    return dns.rdata.from_text(IN, RdataType.A if ip.version == 4 else RdataType.AAAA, str(ip))


def apex_hosts(zone: Zone, records: Iterable[str] = ()) -> set[str]:
    """Every name the apex NS names: the DNSZone's (`hosts`) and those of NSRecords at the apex
    (`records`, their targets, while the zone's RRsets are built; read from its apex NS after)."""
    built = zone.rrsets.get((zone.name, "NS"))
    return {*hosts(zone),
            *(rrsets.absolute(v) for v in (*records, *(built.rdatas if built else ())))}


def glue(zone: Zone, records: Iterable[str] = ()) -> dict[Key, list[dns.rdata.Rdata]]:
    """(host, "A"/"AAAA") -> the addresses the DNSZone gives its name servers inside the zone (the
    names its apex NS names: `apex_hosts`); an address for any other name is no glue (`stray`)."""
    pairs = [(ns.hostname, ip) for ns in zone.spec.name_servers or []
             for ip in (ns.ipv4_address, ns.ipv6_address) if ip]
    pairs += list((zone.spec.name_server_ips or {}).items())
    servers = apex_hosts(zone, records)
    out: dict[Key, dict[str, dns.rdata.Rdata]] = defaultdict(dict)
    for host, ip in pairs:
        name, rdata = rrsets.absolute(host), _address(ip)
        if rdata is not None and name in servers and inside(name, zone.name):
            out[(name, rdata.rdtype.name)][rdata.to_text()] = rdata
    return {key: list(found.values()) for key, found in sorted(out.items())}


def stray(zone: Zone) -> list[tuple[str, str]]:
    """(field path, message) for each `nameServerIps` entry whose name the apex NS does not name: it
    is no glue and has no effect (glue at any other name would make that name the DNSZone's)."""
    servers = apex_hosts(zone)
    return [(f"spec.nameServerIps.{host}", (
        f"{rrsets.absolute(host)} is not a name server of the zone {zone.name} (not in its apex "
        "NS): add it to nameServers or remove the entry; it has no effect"))
        for host, ip in (zone.spec.name_server_ips or {}).items()
        if _address(ip) is not None and rrsets.absolute(host) not in servers]


def _ns(zone: Zone) -> RRset | None:
    import dns.exception
    import dns.rdata
    from dns.rdataclass import IN
    from dns.rdatatype import RdataType

    try:
        objects = [dns.rdata.from_text(IN, RdataType.NS, h) for h in hosts(zone)]
    except dns.exception.DNSException:
        return None  # not a host name: placement reports it
    return rrsets.build(zone.name, zone.name, "NS", zone.default_ttl,
                        (o.to_text() for o in objects), objects)


def zone_rrsets(zone: Zone, records: Iterable[str] = ()) -> dict[Key, RRset]:
    """The apex NS and the glue the DNSZone declares, with the zone's TTL (`records`: the targets of
    the NSRecords at the apex, whose names get glue too)."""
    out: dict[Key, RRset] = {}
    if (apex := _ns(zone)) is not None:
        out[apex.key] = apex
    for (name, rtype), objects in glue(zone, records).items():
        out[(name, rtype)] = rrsets.build(zone.name, name, rtype, zone.default_ttl,
                                          (o.to_text() for o in objects), objects)
    return out


def body_glue(zone: Zone) -> dict[str, str]:
    """`nameServerIps` of the create body: one IPv4 address per name server inside the zone (bindcar
    writes each entry as `<host> IN A <ip>`, so no IPv6 address may go there)."""
    out: dict[str, str] = {}
    for (name, rtype), objects in glue(zone).items():
        if rtype == "A":
            out[name] = objects[0].to_text()
    return out


def created(zone: Zone) -> dict[Key, RRset]:
    """What the zone API's create writes besides the SOA: the apex NS and the IPv4 glue of the body
    (the first address of each name server). What a primary holds right after the create, and so
    what the RRsets are planned against on a server that does not have the zone yet."""
    out: dict[Key, RRset] = {}
    if (apex := _ns(zone)) is not None:
        out[apex.key] = apex
    for name, ip in body_glue(zone).items():
        out[(name, "A")] = rrsets.build(zone.name, name, "A", zone.default_ttl, [ip])
    return out


def keys(zone: Zone) -> set[Key]:
    """The RRsets the DNSZone declares: its apex NS and its glue. Only the apex NS is kept as the
    DNSZone says whoever wrote it; glue is the agent's where the create wrote it or the agent
    manages it, and foreign data at a glue name stays a conflict (plan/zonediff.py)."""
    return {(zone.name, "NS"), *glue(zone)}


def unaddressed(zone: Zone) -> list[tuple[str, str]]:
    """(field path, message) for each name server of `nameServers` inside the zone without an
    address in the zone's RRsets, neither from the DNSZone nor from a record: BIND refuses to load
    such a zone and refuses an UPDATE of its apex NS (check-integrity)."""
    out: list[tuple[str, str]] = []
    for i, ns in enumerate(zone.spec.name_servers or []):
        host = rrsets.absolute(ns.hostname)
        if (inside(host, zone.name) and (host, "A") not in zone.rrsets
            and (host, "AAAA") not in zone.rrsets):
            out.append((f"spec.nameServers[{i}].hostname", (
                f"name server {host} is inside zone {zone.name} but has no address: BIND refuses "
                "to load the zone and to update its NS (check-integrity); give it an ipv4Address "
                "or ipv6Address, or add an ARecord for it")))
    return out
