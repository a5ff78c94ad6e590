"""Records on BIND9 over DNS: AXFR to observe, RFC 2136 UPDATE to change, queries to verify.

Each batch of changes to a zone is ONE UPDATE message over TCP, TSIG-signed, carrying
prerequisites (RFC 2136 section 2.4) so it only applies if every RRset still holds what the agent
observed: an update or delete requires the exact observed RRset, a create requires that no RRset
of that name and type exists. BIND applies a message all or nothing. The rcode is always checked:
NXRRSET / YXRRSET mean a prerequisite failed (someone changed the zone meanwhile).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable

import dns.exception
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdataclass
import dns.rdataset
import dns.rdatatype
import dns.tsig
import dns.tsigkeyring
import dns.update
import dns.xfr
import dns.zone

from agent import rrsets
from agent.config import Endpoint, TsigKey
from agent.errors import DnsUpdateError
from agent.recordplan import Key, RRChange

PREREQUISITE_FAILED = {dns.rcode.NXRRSET, dns.rcode.YXRRSET, dns.rcode.NXDOMAIN, dns.rcode.YXDOMAIN}
DEFAULT_BATCH = 1000


class PrerequisiteFailed(DnsUpdateError):
    """The zone changed between observe and apply; re-observe and re-plan."""


def _keyring(tsig: TsigKey | None) -> tuple[dict[dns.name.Name, dns.tsig.Key] | None, dns.name.Name | None, str]:
    if tsig is None:
        return None, None, "hmac-sha256"
    keyring = dns.tsigkeyring.from_text({tsig.name: (tsig.algorithm, tsig.secret)})
    return keyring, dns.name.from_text(tsig.name), tsig.algorithm


def observe(endpoint: Endpoint, zone: str, *, timeout: float = 10) -> dict[Key, rrsets.RRset]:
    """The zone's RRsets, read with a TSIG-signed AXFR from `endpoint`."""
    keyring, keyname, algorithm = _keyring(endpoint.tsig)
    xfr = dns.zone.Zone(zone)
    request, _ = dns.xfr.make_query(xfr)
    if keyring is not None:
        request.use_tsig(keyring, keyname, algorithm=algorithm)
    try:
        dns.query.inbound_xfr(endpoint.dns_host, xfr, request, port=endpoint.dns_port, timeout=timeout,
                              lifetime=timeout * 3)
    except (dns.exception.DNSException, OSError) as exc:
        raise DnsUpdateError(f"{endpoint.instance}: AXFR of {zone} failed: {exc}", retryable=True) from exc
    out: dict[Key, rrsets.RRset] = {}
    origin = xfr.origin or dns.name.from_text(zone)
    for name, node in xfr.nodes.items():
        owner = rrsets.absolute(name.derelativize(origin).to_text())
        for rdataset in node.rdatasets:
            rtype = dns.rdatatype.to_text(rdataset.rdtype)
            # the zone stores names relative to its origin: render them absolute again
            out[(owner, rtype)] = rrsets.build(zone, owner, rtype, rdataset.ttl,
                                               (r.to_text(origin=origin, relativize=False) for r in rdataset))
    return out


def _rdataset(rr: rrsets.RRset, *, ttl: int | None = None) -> dns.rdataset.Rdataset:
    return dns.rdataset.from_text_list(dns.rdataclass.IN, rr.rtype, rr.ttl if ttl is None else ttl, list(rr.rdatas))


def build_updates(zone: str, changes: list[RRChange], tsig: TsigKey | None, *,
                  batch: int = DEFAULT_BATCH) -> list[dns.update.UpdateMessage]:
    """One UPDATE per `batch` changes, each change guarded by its prerequisite."""
    keyring, keyname, algorithm = _keyring(tsig)
    messages = []
    for start in range(0, len(changes), batch):
        update = dns.update.UpdateMessage(zone, keyring=keyring, keyname=keyname, keyalgorithm=algorithm)
        for change in changes[start:start + batch]:
            name = dns.name.from_text(change.key[0])
            if change.before is None:
                update.absent(name, change.key[1])
            else:
                update.present(name, _rdataset(change.before, ttl=0))  # RFC 2136 2.4.2: TTL zero
            if change.after is None:
                update.delete(name, change.key[1])
            else:
                update.replace(name, _rdataset(change.after))
        messages.append(update)
    return messages


def send(endpoint: Endpoint, update: dns.update.UpdateMessage, *, timeout: float = 10) -> None:
    try:
        response = dns.query.tcp(update, endpoint.dns_host, port=endpoint.dns_port, timeout=timeout)
    except (dns.exception.DNSException, OSError) as exc:
        raise DnsUpdateError(f"{endpoint.instance}: UPDATE not delivered: {exc}", retryable=True) from exc
    rcode = response.rcode()
    if rcode == dns.rcode.NOERROR:
        return
    text = dns.rcode.to_text(rcode)
    if rcode in PREREQUISITE_FAILED:
        raise PrerequisiteFailed(f"{endpoint.instance}: UPDATE refused with {text}: the zone changed since it "
                                 "was observed")
    hint = (" (the TSIG key may not update this zone, or named's integrity checks rejected the data; "
            "named's log has the reason)") if text in ("REFUSED", "NOTAUTH") else ""
    raise DnsUpdateError(f"{endpoint.instance}: UPDATE refused with {text}{hint}")


@dataclasses.dataclass(frozen=True)
class Check:
    server: str  # "namespace/name"
    name: str
    rtype: str
    ok: bool
    answer: tuple[str, ...]


def query(endpoint: Endpoint, name: str, rtype: str, *, timeout: float = 2) -> tuple[str, ...] | None:
    """The sorted values a server answers for name/type (UDP, like dig); None if unreachable."""
    q = dns.message.make_query(name, rtype)
    try:
        response = dns.query.udp(q, endpoint.dns_host, port=endpoint.dns_port, timeout=timeout)
    except (dns.exception.DNSException, OSError):
        return None
    qname = dns.name.from_text(name)
    # a delegation (NS below the apex) and its glue come back as a referral, not as an answer
    for section in (response.answer, response.authority, response.additional):
        for rrset in section:
            if rrset.name == qname and dns.rdatatype.to_text(rrset.rdtype) == rtype:
                return tuple(sorted(r.to_text(origin=dns.name.root, relativize=False) for r in rrset))
    return ()


def verify(servers: Iterable[Endpoint], changes: list[RRChange], *, wait: float = 10) -> list[Check]:
    """Asks every server for every changed RRset until it answers the new data or `wait` runs out."""
    pending = [(s, c) for s in servers for c in changes]
    done: list[Check] = []
    deadline = time.monotonic() + wait
    while pending:
        still = []
        for server, change in pending:
            want = change.after.rdatas if change.after else ()
            got = query(server, change.key[0], change.key[1])
            if got == want:
                done.append(Check(server.instance, change.key[0], change.key[1], True, got))
            else:
                still.append((server, change, got))
        if not still or time.monotonic() > deadline:
            done += [Check(s.instance, c.key[0], c.key[1], False, got or ()) for s, c, got in still]
            break
        pending = [(s, c) for s, c, _ in still]
        time.sleep(0.2)
    return done
