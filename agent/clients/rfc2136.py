"""Records on BIND9 over DNS: RFC 2136 UPDATE sent to change, queries that confirm what is served
(`confirm_served`; AXFR: agent/clients/axfr.py).

Each batch of changes to a zone is ONE UPDATE message over TCP, TSIG-signed, carrying
prerequisites (the messages and their batches: agent/clients/updatewire.py). BIND applies a
message all or nothing. The rcode is always checked: NXRRSET / YXRRSET mean a prerequisite failed
(someone changed the zone meanwhile).
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import random
import select
import socket
import struct
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

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

from agent.clients.endpoints import Endpoint, TsigKey
from agent.errors import DnsUpdateError
from agent.model import calls
from agent.model.ownership import Key
from agent.model.rrchange import RRChange

PREREQUISITE_FAILED = {dns.rcode.NXRRSET, dns.rcode.YXRRSET, dns.rcode.NXDOMAIN, dns.rcode.YXDOMAIN}
# what dnspython raises when the server is gone: its own errors, socket errors, and EOFError when
# the server closes the TCP connection before it answers (e.g. named killed mid-UPDATE)
NETWORK_ERRORS = (dns.exception.DNSException, OSError, EOFError)
T = TypeVar("T")


class PrerequisiteFailed(DnsUpdateError):
    """The zone changed between observe and apply; re-observe and re-plan."""


Keyring = tuple[dict[dns.name.Name, dns.tsig.Key] | None, dns.name.Name | None, str]


def tsig_keyring(tsig: TsigKey | None) -> Keyring:
    if tsig is None:
        return None, None, "hmac-sha256"
    keyring = dns.tsigkeyring.from_text({tsig.name: (tsig.algorithm, tsig.secret)})
    return keyring, dns.name.from_text(tsig.name), tsig.algorithm


def name_wire(name: str) -> bytes:
    """An absolute domain name in (uncompressed) wire form."""
    if "\\" in name or name == ".":  # escapes: let dnspython read them
        return dns.name.from_text(name).to_wire() or b"\0"
    return b"".join(bytes((len(label),)) + label for label in name.rstrip(".").encode().split(b".")) + b"\0"




@calls.measured("dns_update", "update")
def send(endpoint: Endpoint, update: dns.update.UpdateMessage, *, timeout: float = 10) -> None:
    try:
        response = dns.query.tcp(update, _address(endpoint.dns_host), port=endpoint.dns_port, timeout=timeout)
    except NETWORK_ERRORS as exc:
        raise DnsUpdateError(f"{endpoint.instance}: UPDATE not delivered (no answer; it may or may not have been "
                             f"applied): {why(exc)}", retryable=True) from exc
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


def _values(response: dns.message.Message, name: str, rtype: str) -> tuple[str, ...]:
    qname = dns.name.from_text(name)
    # a delegation (NS below the apex) and its glue come back as a referral, not as an answer
    for section in (response.answer, response.authority, response.additional):
        for rrset in section:
            if rrset.name == qname and dns.rdatatype.to_text(rrset.rdtype) == rtype:
                return tuple(sorted(r.to_text(origin=dns.name.root, relativize=False) for r in rrset))
    return ()


def _address(host: str) -> str:
    """dnspython takes addresses only; a name (an instance's Service, while none of its pods is ready
    yet) is looked up first - a name that does not resolve is an OSError, like an unreachable server."""
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        return str(socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)[0][4][0])


def query(endpoint: Endpoint, name: str, rtype: str, *, timeout: float = 2) -> tuple[str, ...] | None:
    """The sorted values a server answers for name/type (UDP, like dig); None if unreachable."""
    q = dns.message.make_query(name, rtype)
    try:
        response = dns.query.udp(q, _address(endpoint.dns_host), port=endpoint.dns_port, timeout=timeout)
    except NETWORK_ERRORS:
        return None
    return _values(response, name, rtype)


# Types whose rdata never holds a compressible name (RFC 3597 section 4): their bytes can be compared
# as they come off the wire, without a full parse (verification sends thousands of queries).
_RAW_TYPES = {"A", "AAAA", "TXT", "CAA", "SRV", "CNAME", "NS", "PTR", "MX"}
# types whose rdata holds a domain name after a fixed prefix: the name is expanded (it may be
# compressed) and lower-cased, as in the canonical (digestable) form it is compared with
_NAME_AT: dict[int, int] = {dns.rdatatype.CNAME: 0, dns.rdatatype.NS: 0, dns.rdatatype.PTR: 0, dns.rdatatype.MX: 2,
            dns.rdatatype.SRV: 6}


def _skip_name(wire: bytes, pos: int) -> int:
    while True:
        length = wire[pos]
        if length == 0:
            return pos + 1
        if length >= 0xC0:  # compression pointer
            return pos + 2
        pos += length + 1


def _expanded_name(wire: bytes, pos: int) -> bytes:
    """The (possibly compressed) name at `pos`, uncompressed and lower-cased."""
    out, hops = bytearray(), 0
    while True:
        length = wire[pos]
        if length == 0:
            return bytes(out + b"\0").lower()
        if length >= 0xC0:
            hops += 1
            if hops > 127:
                raise IndexError("compression loop")
            pos = ((length & 0x3F) << 8) | wire[pos + 1]
            continue
        out += wire[pos:pos + length + 1]
        pos += length + 1


def _raw_rdatas(wire: bytes, qtype: int) -> list[bytes] | None:
    """Canonical rdata bytes of the RRs of `qtype` owned by the question's name, from the first
    section that has any (the answer, or the authority of a referral: like `_values`): as sent, or
    with the domain name in it expanded and lower-cased (_NAME_AT); None if malformed. Records of
    other names - the glue a server without `minimal-responses` adds, a CNAME's target - are not
    the question's RRset."""
    at = _NAME_AT.get(qtype)
    try:
        counts = struct.unpack_from("!HHHH", wire, 4)
        qname = _expanded_name(wire, 12)
        pos = _skip_name(wire, 12) + 4
        out: list[bytes] = []
        ends = (counts[1], counts[1] + counts[2], counts[1] + counts[2] + counts[3])
        for i in range(ends[2]):
            if out and i in ends:
                break  # the RRset was in an earlier section
            owner = pos
            pos = _skip_name(wire, pos)
            rtype, _cls, _ttl, length = struct.unpack_from("!HHIH", wire, pos)
            pos += 10
            if rtype == qtype and (wire[owner:owner + 2] == b"\xc0\x0c" or _expanded_name(wire, owner) == qname):
                rdata = wire[pos:pos + length]
                out.append(rdata if at is None else rdata[:at] + _expanded_name(wire, pos + at))
            pos += length
        return out
    except (struct.error, IndexError):
        return None


def _query_wire(qid: int, name: str, rtype: str) -> bytes:
    return struct.pack("!HHHHHH", qid, 0, 1, 0, 0, 0) + _question_wire(name, rtype)


@functools.lru_cache(maxsize=65_536)
def _question_wire(name: str, rtype: str) -> bytes:
    """A question's name, type and class on the wire: the same zones are asked on every run."""
    qname = name_wire(name if name.endswith(".") else name + ".")
    return qname + struct.pack("!HH", dns.rdatatype.from_text(rtype), dns.rdataclass.IN)


Question = tuple[str, str]
WINDOW = 32  # queries in flight: named drops UDP queries beyond a few dozen at once (seen: 63 of 1,000 at 256)


def _send_all(sock: socket.socket, pending: list[Question], in_flight: dict[int, Question], window: int) -> None:
    while pending and len(in_flight) < window:
        question = pending.pop()
        qid = random.randrange(65536)
        while qid in in_flight:
            qid = random.randrange(65536)
        in_flight[qid] = question
        sock.send(_query_wire(qid, *question))


def _exchange(endpoint: Endpoint, questions: Sequence[Question], decode: Callable[[bytes, Question], T], *,
              timeout: float, window: int) -> dict[Question, T | None]:
    """Asks every question over one UDP socket with `window` in flight; each answer goes through
    `decode`. A question without an answer within `timeout` of the last answer is asked once more."""
    answers: dict[Question, T | None] = {q: None for q in questions}
    family = socket.AF_INET6 if ":" in endpoint.dns_host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect((endpoint.dns_host, endpoint.dns_port))
            _rounds(sock, questions, answers, decode, timeout=timeout, window=window)
        except OSError:  # nothing listens there (named down: ICMP port unreachable), or no route
            pass
    return answers


def _rounds(sock: socket.socket, questions: Sequence[Question], answers: dict[Question, T | None],
            decode: Callable[[bytes, Question], T], *, timeout: float, window: int) -> None:
    for pending in (list(questions), None):
        if pending is None:  # the second round: what got no answer (a dropped query or reply)
            pending = [q for q, a in answers.items() if a is None]
        in_flight: dict[int, Question] = {}
        deadline = time.monotonic() + timeout
        while (pending or in_flight) and time.monotonic() < deadline:
            _send_all(sock, pending, in_flight, window)
            ready, _, _ = select.select([sock], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            for wire in _drain(sock):  # every answer already there, before the window is refilled
                asked = in_flight.pop(struct.unpack_from("!H", wire)[0], None) if len(wire) >= 12 else None
                if asked is not None:
                    deadline = time.monotonic() + timeout
                    answers[asked] = decode(wire, asked)


def _drain(sock: socket.socket) -> list[bytes]:
    """The datagrams waiting on a socket that select() found readable (at least one)."""
    out = [sock.recv(65535)]
    while True:
        try:
            out.append(sock.recv(65535, socket.MSG_DONTWAIT))
        except BlockingIOError:
            return out


@calls.measured("dns_query", "query")
def query_many(endpoint: Endpoint, questions: Sequence[Question], *, timeout: float = 2, window: int = WINDOW,
               expect: dict[Question, frozenset[bytes]] | None = None) -> dict[Question, tuple[str, ...] | bool | None]:
    """Like `query` for many questions, pipelined over one UDP socket.

    With `expect` (question -> set of rdata wire forms) the answer for a question of a raw-comparable
    type is just True/False (matches or not); otherwise the sorted presentation values. A question
    without an answer maps to None."""
    def decode(wire: bytes, asked: Question) -> tuple[str, ...] | bool | None:
        if expect is not None and asked in expect and asked[1] in _RAW_TYPES:
            raw = _raw_rdatas(wire, dns.rdatatype.from_text(asked[1]))
            if raw is not None:
                return len(raw) == len(expect[asked]) and set(raw) == expect[asked]
        try:
            return _values(dns.message.from_wire(wire), *asked)
        except dns.exception.DNSException:
            return None

    return _exchange(endpoint, questions, decode, timeout=timeout, window=window)


def _raw_serial(wire: bytes, _: Question) -> int | None:
    """The serial of the SOA in an answer, read off the wire (no full parse: thousands per run)."""
    try:
        counts = struct.unpack_from("!HHHH", wire, 4)
        pos = _skip_name(wire, 12) + 4
        for _n in range(counts[1]):
            pos = _skip_name(wire, pos)
            rtype, _cls, _ttl, length = struct.unpack_from("!HHIH", wire, pos)
            pos += 10
            if rtype == dns.rdatatype.SOA:
                serial: int = struct.unpack_from("!I", wire, _skip_name(wire, _skip_name(wire, pos)))[0]
                return serial
            pos += length
    except (struct.error, IndexError):
        pass
    return None


@calls.measured("soa_query", "soa")
def serials(endpoint: Endpoint, zones: Sequence[str], *, timeout: float = 2) -> dict[str, int | None]:
    """Each zone's SOA serial on `endpoint`, asked all at once (None: no answer, or no such zone)."""
    answers = _exchange(endpoint, [(z, "SOA") for z in zones], _raw_serial, timeout=timeout, window=WINDOW)
    return {z: s for (z, _), s in answers.items()}


def _holds(wire: bytes, question: Question) -> bool | None:
    if _raw_serial(wire, question) is not None:
        return True
    rcode = struct.unpack_from("!H", wire, 2)[0] & 0xF if len(wire) >= 4 else dns.rcode.SERVFAIL
    return None if rcode == dns.rcode.SERVFAIL else False  # SERVFAIL: held, but not loaded (yet)


@calls.measured("soa_query", "soa")
def holds(endpoint: Endpoint, zones: Sequence[str], *, timeout: float = 2) -> dict[str, bool | None]:
    """Whether `endpoint` serves each zone: True (it answers its SOA), False (it answers without one:
    no such zone, REFUSED), None (no answer: down or too slow; or SERVFAIL: a zone it holds but has
    not loaded, e.g. still transferring or expired)."""
    answers = _exchange(endpoint, [(z, "SOA") for z in zones], _holds, timeout=timeout, window=WINDOW)
    return {z: held for (z, _), held in answers.items()}


NOT_HELD = -1  # `soa`: the server answered without the zone (no such zone, REFUSED, NOTAUTH)


def _soa(wire: bytes, question: Question) -> int | None:
    serial = _raw_serial(wire, question)
    if serial is not None:
        return serial
    return None if _holds(wire, question) is None else NOT_HELD


@calls.measured("soa_query", "soa")
def soa(endpoint: Endpoint, zones: Sequence[str], *, timeout: float = 2) -> dict[str, int | None]:
    """`serials` and `holds` in one exchange: each zone's SOA serial on `endpoint`, NOT_HELD when it
    answers without the zone, None without an answer (down, too slow; or SERVFAIL: held, not loaded)."""
    answers = _exchange(endpoint, [(z, "SOA") for z in zones], _soa, timeout=timeout, window=WINDOW)
    return {z: s for (z, _), s in answers.items()}


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
            got = query_many(server, keys, expect=wire)
            for key in keys:
                answer = got[key]
                if answer is True or answer == want[key]:
                    done.append(Check(instance, key[0], key[1], True, want[key]))
                else:
                    behind.setdefault(instance, (server, []))[1].append(key)
                    last[(instance, key)] = answer if isinstance(answer, tuple) else ()
        if not behind or time.monotonic() > deadline:
            done += [Check(i, k[0], k[1], False, last[(i, k)]) for i, (_, keys) in behind.items() for k in keys]
            break
        if first and nudge is not None:
            nudge(sorted(behind))
        first = False
        pending = behind
        time.sleep(0.1)
    return done
