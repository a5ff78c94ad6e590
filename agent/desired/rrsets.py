"""Record CRs -> normalised RRsets (pure).

Values are rendered by dnspython's rdata classes, so Git and an AXFR of the live zone compare equal
when they mean the same thing (case, trailing dots, TXT quoting and 255-byte splitting, IPv6 forms).

Whatever a DNS server or the wire format would refuse is a RecordError here, with the field at
fault: labels over 63 octets, names over 255 octets on the wire (owners and every target), TXT
data over what one record holds. A long TXT string is split into 255-octet strings, as BIND and
every DNS provider do, not refused.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Iterable

import dns.exception
import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.CAA
import dns.rdtypes.ANY.CNAME
import dns.rdtypes.ANY.MX
import dns.rdtypes.ANY.NS
import dns.rdtypes.ANY.TXT
import dns.rdtypes.IN.A
import dns.rdtypes.IN.AAAA
import dns.rdtypes.IN.SRV

from agent.model import records, syntax

IN = dns.rdataclass.IN
DEFAULT_TTL = 300  # Bindy's DEFAULT_DNS_RECORD_TTL_SECS: a record (or zone) without `ttl`
_LABEL = re.compile(r"\*|[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
_CAA_TAG = re.compile(r"[A-Za-z0-9]{1,15}")
MAX_RDATA = 65535  # octets of one record's data (RDLENGTH is 16 bits)
# An UPDATE changing an RRset carries the old one (prerequisite) and the new one in one DNS message of
# at most 65,535 octets: an RRset of at most half that always fits.
MAX_RRSET_OCTETS = 32_000
CONFIG_UNSAFE = re.compile(r'["{};]')
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class RecordError(ValueError):
    """A record value that cannot be published; `path` is the spec field at fault."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


@dataclasses.dataclass(frozen=True, slots=True)
class RRset:
    zone: str  # "example.com." (lowercase, absolute)
    name: str  # owner, absolute and lowercase: "www.example.com."
    rtype: str
    ttl: int
    rdatas: tuple[str, ...]  # sorted presentation forms
    # the parsed values, when known, so an UPDATE needs no second parse (not part of equality)
    objects: tuple[dns.rdata.Rdata, ...] = dataclasses.field(default=(), compare=False, repr=False)

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.rtype)

    def relative_name(self) -> str:
        if self.name == self.zone:
            return "@"
        return self.name[: -len(self.zone) - 1]


def absolute(name: str) -> str:
    """Lowercase absolute form of a domain name, with the trailing dot."""
    name = name.lower()
    return name if name.endswith(".") else name + "."


def check_hostname(value: str, path: str, *, require_fqdn: bool) -> dns.name.Name:
    """A host name target (CNAME, MX, NS, SRV): valid labels, and absolute when Bindy needs it."""
    if CONTROL.search(value) or CONFIG_UNSAFE.search(value) or " " in value:
        raise RecordError(path, f"{value!r} contains a character not allowed in a host name")
    if value == ".":
        return dns.name.root
    if require_fqdn and not value.endswith("."):
        raise RecordError(path, f"{value!r} must be fully qualified with a trailing dot "
                          f"(write '{value}.'); without it a DNS server appends the zone name")
    labels = value.rstrip(".").split(".")
    for label in labels:
        if not _LABEL.fullmatch(label) or label == "*":
            too_long = " is longer than 63 octets" if len(label) > 63 else ""
            raise RecordError(path, f"{value!r} is not a valid host name (label {label[:63]!r}{too_long})")
    if error := syntax.dns_name_error(value):
        raise RecordError(path, f"{syntax.brief(value)} {error}")
    try:
        return dns.name.from_text(absolute(value))
    except dns.exception.DNSException as exc:
        raise RecordError(path, f"{value!r} is not a valid host name: {exc}") from exc


def owner_name(name: str, zone: str) -> str:
    """`name` ("www", "@", "_sip._tcp" or a FQDN) as an absolute owner inside `zone`."""
    if CONTROL.search(name) or CONFIG_UNSAFE.search(name) or " " in name:
        raise RecordError("spec.name", f"{name!r} contains a character not allowed in a DNS name")
    if name == "@":
        return zone
    fqdn = absolute(name) if name.endswith(".") else absolute(f"{name}.{zone}")
    labels = fqdn[:-1].split(".")
    for i, label in enumerate(labels):
        if not _LABEL.fullmatch(label) or (label == "*" and i != 0):
            raise RecordError("spec.name", f"{name!r} is not a valid DNS name (label {label[:63]!r}: "
                              "1-63 letters, digits, '-' or '_'; '*' only as the first label)")
    if error := syntax.dns_name_error(fqdn):
        raise RecordError("spec.name", f"{syntax.brief(name)} in zone {syntax.brief(zone)} makes the owner name "
                          f"{syntax.brief(fqdn)}, which {error}")
    if fqdn != zone and not fqdn.endswith("." + zone):
        raise RecordError("spec.name", f"{name!r} is outside its zone {zone}")
    return fqdn


def _txt_chunks(text: str) -> list[bytes]:
    data = text.encode()
    return [data[i:i + 255] for i in range(0, len(data), 255)] or [b""]


def _addresses(values: list[str], field: str, family: type[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> list[str]:
    for i, addr in enumerate(values):
        try:
            family(addr)
        except ValueError:
            version = "IPv4" if family is ipaddress.IPv4Address else "IPv6"
            raise RecordError(f"spec.{field}[{i}]", f"{addr!r} is not an {version} address") from None
    return values


def _rdatas(spec: records.RecordSpec) -> list[dns.rdata.Rdata]:
    if isinstance(spec, records.ARecordSpec):
        return [dns.rdtypes.IN.A.A(IN, dns.rdatatype.A, a)
                for a in _addresses(spec.ipv4_addresses, "ipv4Addresses", ipaddress.IPv4Address)]
    if isinstance(spec, records.AAAARecordSpec):
        return [dns.rdtypes.IN.AAAA.AAAA(IN, dns.rdatatype.AAAA, a)
                for a in _addresses(spec.ipv6_addresses, "ipv6Addresses", ipaddress.IPv6Address)]
    if isinstance(spec, records.CNAMERecordSpec):
        target = check_hostname(spec.target, "spec.target", require_fqdn=True)
        return [dns.rdtypes.ANY.CNAME.CNAME(IN, dns.rdatatype.CNAME, target)]
    if isinstance(spec, records.MXRecordSpec):
        exchange = check_hostname(spec.mail_server, "spec.mailServer", require_fqdn=True)
        return [dns.rdtypes.ANY.MX.MX(IN, dns.rdatatype.MX, spec.priority, exchange)]
    if isinstance(spec, records.NSRecordSpec):
        ns = check_hostname(spec.nameserver, "spec.nameserver", require_fqdn=True)
        return [dns.rdtypes.ANY.NS.NS(IN, dns.rdatatype.NS, ns)]
    if isinstance(spec, records.SRVRecordSpec):
        target = check_hostname(spec.target, "spec.target", require_fqdn=True)
        return [dns.rdtypes.IN.SRV.SRV(IN, dns.rdatatype.SRV, spec.priority, spec.weight, spec.port, target)]
    if isinstance(spec, records.TXTRecordSpec):
        chunks: list[bytes] = []
        for i, text in enumerate(spec.text):
            if CONTROL.search(text):
                raise RecordError(f"spec.text[{i}]", "contains a control character")
            chunks += _txt_chunks(text)
        if not chunks:
            raise RecordError("spec.text", "needs at least one string")
        octets = sum(len(c) + 1 for c in chunks)
        if octets > MAX_RDATA:
            raise RecordError("spec.text", f"is {octets:,} octets as TXT data (strings split at 255); one "
                              f"record holds at most {MAX_RDATA:,} - publish less, or split it across names")
        return [dns.rdtypes.ANY.TXT.TXT(IN, dns.rdatatype.TXT, chunks)]
    if isinstance(spec, records.CAARecordSpec):
        if not _CAA_TAG.fullmatch(spec.tag):
            raise RecordError("spec.tag", f"{spec.tag!r} is not a CAA tag (1-15 letters or digits, "
                              "such as issue, issuewild, iodef)")
        if CONTROL.search(spec.value):
            raise RecordError("spec.value", "contains a control character")
        if len(spec.value.encode()) + len(spec.tag) + 2 > MAX_RDATA:
            raise RecordError("spec.value", f"is longer than the {MAX_RDATA:,} octets one record holds")
        return [dns.rdtypes.ANY.CAA.CAA(IN, dns.rdatatype.CAA, spec.flags, spec.tag.encode(),
                                        spec.value.encode())]
    raise RecordError("spec", f"not a record spec: {type(spec).__name__}")


def rdatas(record: records.AnyRecord) -> list[dns.rdata.Rdata]:
    """The rdata values of a record CR (raises RecordError on a bad value)."""
    try:
        return _rdatas(record.spec)
    except (dns.exception.DNSException, ValueError) as exc:
        if isinstance(exc, RecordError):
            raise
        raise RecordError("spec", f"invalid record data: {exc}") from exc


def _spec_key(spec: records.RecordSpec) -> tuple[object, ...] | None:
    """Everything `_rdatas` reads from a spec, as a hashable key (None: not cached)."""
    if isinstance(spec, records.ARecordSpec):
        return ("A", *spec.ipv4_addresses)
    if isinstance(spec, records.AAAARecordSpec):
        return ("AAAA", *spec.ipv6_addresses)
    if isinstance(spec, records.CNAMERecordSpec):
        return ("CNAME", spec.target)
    if isinstance(spec, records.MXRecordSpec):
        return ("MX", spec.priority, spec.mail_server)
    if isinstance(spec, records.NSRecordSpec):
        return ("NS", spec.nameserver)
    if isinstance(spec, records.SRVRecordSpec):
        return ("SRV", spec.priority, spec.weight, spec.port, spec.target)
    if isinstance(spec, records.TXTRecordSpec):
        return ("TXT", *spec.text)
    if isinstance(spec, records.CAARecordSpec):
        return ("CAA", spec.flags, spec.tag, spec.value)
    return None


_VALUES: dict[tuple[object, ...], dict[str, dns.rdata.Rdata]] = {}
_VALUES_MAX = 100_000  # entries; the cache is emptied when it is full


def values(record: records.AnyRecord) -> dict[str, dns.rdata.Rdata]:
    """The record's rdata by presentation form (raises RecordError on a bad value). Rdata are
    immutable and the same values recur across records (targets, SPF texts, CAA), so they are
    built and rendered once per distinct value."""
    key = _spec_key(record.spec)
    found = _VALUES.get(key) if key is not None else None
    if found is None:
        found = {d.to_text(): d for d in rdatas(record)}
        if key is not None:
            if len(_VALUES) >= _VALUES_MAX:
                _VALUES.clear()
            _VALUES[key] = found
    return found


def rtype_of(kind: str) -> str:
    return kind[: -len("Record")]


def build(zone: str, name: str, rtype: str, ttl: int, values: Iterable[str],
          objects: Iterable[dns.rdata.Rdata] = ()) -> RRset:
    return RRset(zone, name, rtype, ttl, tuple(sorted(set(values))), tuple(objects))


def oversized(rrset: RRset) -> str | None:
    """Why an RRset cannot travel in a DNS UPDATE, or None. A bound from the presentation forms
    first (never smaller than the wire form but for short addresses), the wire form when near."""
    per_record = 12  # compressed owner, type, class, TTL, RDLENGTH
    bound = syntax.wire_octets(rrset.name) + sum(per_record + max(len(t) + 1, 16) for t in rrset.rdatas)
    if bound <= MAX_RRSET_OCTETS:
        return None
    octets = syntax.wire_octets(rrset.name) + sum(per_record + len(r.to_wire() or b"") for r in rrset.objects)
    if octets <= MAX_RRSET_OCTETS:
        return None
    return (f"the RRset {syntax.brief(rrset.name)} {rrset.rtype} is {octets:,} octets on the wire; at most "
            f"{MAX_RRSET_OCTETS:,} fit in a DNS UPDATE next to the RRset it replaces - spread the values over "
            "more names")


def addresses(rrset: RRset) -> str:
    """The printer-column summary of a record's values, like Bindy's `status.addresses`."""
    return ",".join(rrset.rdatas)
