"""Record CRs -> normalised RRsets (pure).

Values are rendered by dnspython's rdata classes, so Git and an AXFR of the live zone compare equal
when they mean the same thing (case, trailing dots, TXT quoting and 255-byte splitting, IPv6 forms).

Whatever a DNS server or the wire format would refuse is a RecordError here, with the field at
fault: labels over 63 octets, names over 255 octets on the wire (owners and every target), TXT
data over what one record holds. A long TXT string is split into 255-octet strings, as BIND and
every DNS provider do, not refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from agent.model import syntax
from agent.model.recordtypes.values import CONFIG_UNSAFE as CONFIG_UNSAFE
from agent.model.recordtypes.values import CONTROL as CONTROL
from agent.model.recordtypes.values import LABEL as _LABEL
from agent.model.recordtypes.values import MAX_RDATA as MAX_RDATA
from agent.model.recordtypes.values import RecordError as RecordError
from agent.model.recordtypes.values import absolute as absolute
from agent.model.recordtypes.values import check_hostname as check_hostname
from agent.model.rrset import RRset as RRset  # defined below observe/ and plan/, which hold RRsets

if TYPE_CHECKING:
    # dnspython and the record models are imported by the first record (desired/recorddata.py) or
    # host name checked: `validate` of a repository without records loads neither
    # (bench/cli_startup_bench.py)
    import dns.name
    import dns.rdata

    from agent.model import records

DEFAULT_TTL = 300  # Bindy's DEFAULT_DNS_RECORD_TTL_SECS: a record (or zone) without `ttl`
# An UPDATE changing an RRset carries the old one (prerequisite) and the new one in one DNS message
# of at most 65,535 octets: an RRset of at most half that always fits.
MAX_RRSET_OCTETS = 32_000


def owner_name(name: str, zone: str) -> str:
    """`name` ("www", "@", "_sip._tcp" or a FQDN) as an absolute owner inside `zone`."""
    if name == "@":
        return zone
    if name.endswith("."):
        fqdn = absolute(name)
    else:
        _check_not_doubled(name, zone)
        fqdn = absolute(f"{name}.{zone}")
    # else every check below passes
    if len(fqdn) > _PLAIN_OWNER_MAX or not _PLAIN_OWNER.fullmatch(fqdn):
        _check_owner(name, zone, fqdn)
    if fqdn != zone and not fqdn.endswith("." + zone):
        raise RecordError("spec.name", f"{name!r} is outside its zone {zone}")
    return fqdn


def check_name(name: str) -> None:
    """`name` checked as an owner name without its zone (a record no zone takes): its labels and
    length."""
    if name == "@":
        return
    fqdn = absolute(name)
    if len(fqdn) > _PLAIN_OWNER_MAX or not _PLAIN_OWNER.fullmatch(fqdn):
        _check_owner(name, ".", fqdn)


def _check_not_doubled(name: str, zone: str) -> None:
    """A relative name that ends with its zone's name (`www.example.org` in example.org.) names
    `www.example.org.example.org.`: always a mistake (DNSControl refuses it too), refused with the
    fix."""
    apex = zone[:-1]
    tail = name[-len(apex):] if len(name) >= len(apex) else ""
    if tail.lower() != apex or not (len(name) == len(apex) or name[-len(apex) - 1] == "."):
        return
    inner = name[: -len(apex) - 1]
    fix = f"name: {inner!r}" if inner else "name: '@' (the zone apex)"
    raise RecordError("spec.name",
                      f"{name!r} is relative to the zone, so it names {name}.{zone}, with the "
                      f"zone's name twice: write {fix}, or the fully qualified {name + '.'!r}")


# An owner name every check of `_check_owner` passes: ASCII labels of 1-63 letters, digits, '-' or
# '_' (not starting or ending with '-'), '*' only first, and at most 255 octets on the wire (254
# characters with the final dot). A name it does not match is checked one rule at a time, which
# words the message.
_PLAIN_OWNER = re.compile(r"(?:\*\.)?(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.)+")
_PLAIN_OWNER_MAX = 254


def _check_owner(name: str, zone: str, fqdn: str) -> None:
    if CONTROL.search(name) or CONFIG_UNSAFE.search(name) or " " in name:
        raise RecordError("spec.name", f"{name!r} contains a character not allowed in a DNS name")
    labels = fqdn[:-1].split(".")
    for i, label in enumerate(labels):
        if not _LABEL.fullmatch(label) or (label == "*" and i != 0):
            raise RecordError("spec.name",
                              f"{name!r} is not a valid DNS name (label {label[:63]!r}: "
                              "1-63 letters, digits, '-' or '_'; '*' only as the first label)")
    if error := syntax.dns_name_error(fqdn):
        raise RecordError("spec.name",
                          f"{syntax.brief(name)} in zone {syntax.brief(zone)} makes the owner name "
                          f"{syntax.brief(fqdn)}, which {error}")


def rdatas(record: records.AnyRecord) -> list[dns.rdata.Rdata]:
    """The rdata values of a record CR (raises RecordError on a bad value):
    desired/recorddata.py."""
    from agent.desired import recorddata

    return recorddata.rdatas(record)


def values(record: records.AnyRecord) -> dict[str, dns.rdata.Rdata]:
    """The record's rdata by presentation form (raises RecordError on a bad value):
    desired/recorddata.py."""
    from agent.desired import recorddata

    return recorddata.values(record)


_RTYPES: dict[str, str] = {}  # one string per type, not one per record (4 MB at 100,000 records)


def rtype_of(kind: str) -> str:
    rtype = _RTYPES.get(kind)
    if rtype is None:
        rtype = kind[: -len("Record")]
        if len(_RTYPES) < 64:  # the record kinds, and whatever else asks
            _RTYPES[kind] = rtype
    return rtype


def build(zone: str, name: str, rtype: str, ttl: int, values: Iterable[str],
          objects: Iterable[dns.rdata.Rdata] = ()) -> RRset:
    return RRset(zone, name, rtype, ttl, tuple(sorted(set(values))), tuple(objects))


def oversized(rrset: RRset) -> str | None:
    """Why an RRset cannot travel in a DNS UPDATE, or None. A bound from the presentation forms
    first (never smaller than the wire form but for short addresses), the wire form when near."""
    per_record = 12  # compressed owner, type, class, TTL, RDLENGTH
    # a bound of that bound first, without a call per value: an owner of at most 4 octets per
    # character
    if 4 * len(rrset.name) + 2 + sum(map(len, rrset.rdatas)) + (per_record
                                                                + 17) * len(rrset.rdatas) \
            <= MAX_RRSET_OCTETS:
        return None
    bound = syntax.wire_octets(rrset.name) + sum(per_record + max(len(t) + 1, 16)
                                                 for t in rrset.rdatas)
    if bound <= MAX_RRSET_OCTETS:
        return None
    octets = syntax.wire_octets(rrset.name) + sum(per_record + len(r.to_wire() or b"")
                                                  for r in rrset.objects)
    if octets <= MAX_RRSET_OCTETS:
        return None
    return (f"the RRset {syntax.brief(rrset.name)} {rrset.rtype} is {octets:,} octets on the wire; "
            f"at most {MAX_RRSET_OCTETS:,} fit in a DNS UPDATE next to the RRset it replaces - "
            "spread the values over more names")


def addresses(rrset: RRset) -> str:
    """The printer-column summary of a record's values, like Bindy's `status.addresses`."""
    return ",".join(rrset.rdatas)
