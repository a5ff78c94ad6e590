"""Records on BIND9 over DNS: RFC 2136 UPDATE sent to change, queries that confirm what is served
(`confirm_served`, pipelined by agent/clients/dnsquery.py; AXFR: agent/clients/axfr.py).

Each batch of changes to a zone is ONE UPDATE message over TCP, TSIG-signed, carrying
prerequisites (the messages and their batches: agent/clients/updatewire.py). BIND applies a
message all or nothing. The rcode is always checked: NXRRSET / YXRRSET mean a prerequisite failed
(someone changed the zone meanwhile).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
import time
from collections.abc import Callable, Iterable

import dns.exception
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdataset
import dns.rdatatype
import dns.tsig
import dns.tsigkeyring
import dns.update
import dns.xfr
import dns.zone

from agent.clients import dnsquery
from agent.clients.endpoints import Endpoint, TsigKey
from agent.errors import DnsUpdateError
from agent.model import calls
from agent.model.ownership import Key
from agent.model.rrchange import RRChange

PREREQUISITE_FAILED = {dns.rcode.NXRRSET, dns.rcode.YXRRSET, dns.rcode.NXDOMAIN, dns.rcode.YXDOMAIN}
# what dnspython raises when the server is gone: its own errors, socket errors, and EOFError when
# the server closes the TCP connection before it answers (e.g. named killed mid-UPDATE)
NETWORK_ERRORS = (dns.exception.DNSException, OSError, EOFError)


class PrerequisiteFailed(DnsUpdateError):
    """The zone changed between observe and apply; re-observe and re-plan."""


Keyring = tuple[dict[dns.name.Name, dns.tsig.Key] | None, dns.name.Name | None, str]


def tsig_keyring(tsig: TsigKey | None) -> Keyring:
    if tsig is None:
        return None, None, "hmac-sha256"
    keyring = dns.tsigkeyring.from_text({tsig.name: (tsig.algorithm, tsig.secret)})
    return keyring, dns.name.from_text(tsig.name), tsig.algorithm


@calls.measured("dns_update", "update")
def send(endpoint: Endpoint, update: dns.update.UpdateMessage, *, timeout: float = 10) -> None:
    try:
        response = dns.query.tcp(update, _address(endpoint.dns_host), port=endpoint.dns_port,
                                 timeout=timeout)
    except NETWORK_ERRORS as exc:
        raise DnsUpdateError(f"{endpoint.instance}: UPDATE not delivered (no answer; it may or may "
                             f"not have been applied): {why(exc)}", retryable=True) from exc
    rcode = response.rcode()
    if rcode == dns.rcode.NOERROR:
        return
    text = dns.rcode.to_text(rcode)
    if rcode in PREREQUISITE_FAILED:
        raise PrerequisiteFailed(f"{endpoint.instance}: UPDATE refused with {text}: the zone "
                                 "changed since it was observed")
    hint = (" (the TSIG key may not update this zone, or named's integrity checks rejected the "
            "data; named's log has the reason)") if text in ("REFUSED", "NOTAUTH") else ""
    raise DnsUpdateError(f"{endpoint.instance}: UPDATE refused with {text}{hint}")


def why(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return "the server closed the connection"
    return str(exc) or type(exc).__name__


@dataclasses.dataclass(frozen=True)
class Check:
    server: str  # "namespace/name"
    name: str
    rtype: str
    ok: bool
    answer: tuple[str, ...]


def _address(host: str) -> str:
    """dnspython takes addresses only; a name (an instance's Service, while none of its pods is
    ready yet) is looked up first - a name that does not resolve is an OSError, like an unreachable
    server."""
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        return str(socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)[0][4][0])


def query(endpoint: Endpoint, name: str, rtype: str, *,
          timeout: float = 2) -> tuple[str, ...] | None:
    """The sorted values a server answers for name/type (UDP, like dig); None if unreachable."""
    q = dns.message.make_query(name, rtype)
    try:
        response = dns.query.udp(q, _address(endpoint.dns_host), port=endpoint.dns_port,
                                 timeout=timeout)
    except NETWORK_ERRORS:
        return None
    return dnsquery.answer_values(response, name, rtype)


def serial_of(values: Iterable[str]) -> int | None:
    """The serial of an SOA in presentation form ("mname rname serial refresh ...")."""
    for value in values:
        fields = value.split()
        if len(fields) >= 3 and fields[2].isdigit():
            return int(fields[2])
    return None


def confirm_served(servers: Iterable[Endpoint], changes: list[RRChange], *, wait: float = 10,
                   nudge: Callable[[list[str]], None] | None = None) -> list[Check]:
    """Asks every server for every changed RRset until it answers the new data or `wait` runs out.
    After the first pass, `nudge` gets the servers that are behind (e.g. to send a NOTIFY)."""
    want = {c.key: (c.after.rdatas if c.after else ()) for c in changes}
    wire = {c.key: frozenset(o.to_digestable() for o in c.after.objects) if c.after else frozenset()
            for c in changes if not c.after or c.after.objects}
    pending = {s.instance: (s, list(want)) for s in servers}
    done: list[Check] = []
    deadline = time.monotonic() + wait
    first = True
    while pending:
        behind: dict[str, tuple[Endpoint, list[Key]]] = {}
        last: dict[tuple[str, Key], tuple[str, ...]] = {}
        for instance, (server, keys) in pending.items():
            got = dnsquery.query_many(server, keys, expect=wire)
            for key in keys:
                answer = got[key]
                if answer is True or answer == want[key]:
                    done.append(Check(instance, key[0], key[1], True, want[key]))
                else:
                    behind.setdefault(instance, (server, []))[1].append(key)
                    last[(instance, key)] = answer if isinstance(answer, tuple) else ()
        if not behind or time.monotonic() > deadline:
            done += [Check(i, k[0], k[1], False, last[(i, k)])
                     for i, (_, keys) in behind.items() for k in keys]
            break
        if first and nudge is not None:
            nudge(sorted(behind))
        first = False
        pending = behind
        time.sleep(0.1)
    return done
