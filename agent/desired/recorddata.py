"""A record CR's values as dnspython rdata (pure): what desired/rrsets.py renders and checks a record's
data with. A module of its own so that dnspython's record types are imported with the first record,
not by every command that imports rrsets (`validate` of a repository of zones: bench/cli_startup_bench.py)."""

from __future__ import annotations

import functools
import ipaddress
import re

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

from agent.desired import rrsets
from agent.desired.rrsets import CONTROL, MAX_RDATA, RecordError
from agent.model import records

IN = dns.rdataclass.IN
_CAA_TAG = re.compile(r"[A-Za-z0-9]{1,15}")


def _txt_chunks(text: str) -> list[bytes]:
    data = text.encode()
    return [data[i:i + 255] for i in range(0, len(data), 255)] or [b""]


def _not_an_address(addr: str, family: type[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> str:
    """Why `addr` is refused, naming the record kind that takes it when it is an address of the other family."""
    version, other, kind, field = (("IPv4", ipaddress.IPv6Address, "AAAARecord", "ipv6Addresses")
                                   if family is ipaddress.IPv4Address else
                                   ("IPv6", ipaddress.IPv4Address, "ARecord", "ipv4Addresses"))
    try:
        other(addr)
    except ValueError:
        return f"{addr!r} is not an {version} address"
    return (f"{addr!r} is an {'IPv6' if version == 'IPv4' else 'IPv4'} address, not an {version} one: "
            f"publish it with an {kind} (spec.{field})")


def _addresses(values: list[str], field: str, family: type[ipaddress.IPv4Address | ipaddress.IPv6Address]
               ) -> list[str | ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The addresses checked, as what dnspython is given: the parsed address (its bytes are what
    parsing the text again would give; dnspython renders them the same), or the text itself when
    it names a scope (`fe80::1%eth0`), which only ipaddress accepts: dnspython refuses it as before."""
    out: list[str | ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for i, addr in enumerate(values):
        try:
            parsed = family(addr)
        except ValueError:
            raise RecordError(f"spec.{field}[{i}]", _not_an_address(addr, family)) from None
        out.append(addr if "%" in addr else parsed)
    return out


@functools.lru_cache(maxsize=16_384)
def _host(value: str, path: str) -> dns.name.Name:
    """rrsets.check_hostname of a target, fully qualified, once per distinct target: mail servers, SRV
    and CNAME targets recur across records (the checked name is immutable; a refused one is checked,
    and refused with the same words, every time)."""
    return rrsets.check_hostname(value, path, require_fqdn=True)


def _rdatas(spec: records.RecordSpec) -> list[dns.rdata.Rdata]:
    if isinstance(spec, records.ARecordSpec):
        return [dns.rdtypes.IN.A.A(IN, dns.rdatatype.A, a)
                for a in _addresses(spec.ipv4_addresses, "ipv4Addresses", ipaddress.IPv4Address)]
    if isinstance(spec, records.AAAARecordSpec):
        return [dns.rdtypes.IN.AAAA.AAAA(IN, dns.rdatatype.AAAA, a)
                for a in _addresses(spec.ipv6_addresses, "ipv6Addresses", ipaddress.IPv6Address)]
    if isinstance(spec, records.CNAMERecordSpec):
        target = _host(spec.target, "spec.target")
        return [dns.rdtypes.ANY.CNAME.CNAME(IN, dns.rdatatype.CNAME, target)]
    if isinstance(spec, records.MXRecordSpec):
        exchange = _host(spec.mail_server, "spec.mailServer")
        return [dns.rdtypes.ANY.MX.MX(IN, dns.rdatatype.MX, spec.priority, exchange)]
    if isinstance(spec, records.NSRecordSpec):
        ns = _host(spec.nameserver, "spec.nameserver")
        return [dns.rdtypes.ANY.NS.NS(IN, dns.rdatatype.NS, ns)]
    if isinstance(spec, records.SRVRecordSpec):
        target = _host(spec.target, "spec.target")
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


Rendered = tuple[dict[str, dns.rdata.Rdata], tuple[str, ...], tuple[dns.rdata.Rdata, ...]]
_VALUES: dict[tuple[object, ...], Rendered] = {}
_VALUES_MAX = 100_000  # entries; the cache is emptied when it is full


def rendered(record: records.AnyRecord) -> Rendered:
    """The record's rdata by presentation form (raises RecordError on a bad value), and what an RRset
    of this record alone holds: the forms sorted, the rdata in the mapping's order. Rdata are
    immutable and the same values recur across records (targets, SPF texts, CAA), so they are
    built and rendered once per distinct value, and such RRsets share their tuples."""
    key = _spec_key(record.spec)
    found = _VALUES.get(key) if key is not None else None
    if found is None:
        by_text = {d.to_text(): d for d in rdatas(record)}
        found = (by_text, tuple(sorted(by_text)), tuple(by_text.values()))
        if key is not None:
            if len(_VALUES) >= _VALUES_MAX:
                _VALUES.clear()
            _VALUES[key] = found
    return found


def values(record: records.AnyRecord) -> dict[str, dns.rdata.Rdata]:
    """The record's rdata by presentation form (raises RecordError on a bad value): `rendered`."""
    return rendered(record)[0]
