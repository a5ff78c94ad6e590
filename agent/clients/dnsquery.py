"""Pipelined DNS queries over UDP: many questions to one server over one socket (`query_many`,
the SOA `serials`, `holds` and `soa` of many zones), with the raw wire readers that compare answers
without a full parse (verification and observe send thousands of queries a run). Single queries
and UPDATE: agent/clients/rfc2136.py.
"""

from __future__ import annotations

import functools
import random
import select
import socket
import struct
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import dns.exception
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype

from agent.clients.endpoints import Endpoint
from agent.model import calls

T = TypeVar("T")


def name_wire(name: str) -> bytes:
    """An absolute domain name in (uncompressed) wire form."""
    if "\\" in name or name == ".":  # escapes: let dnspython read them
        return dns.name.from_text(name).to_wire() or b"\0"
    labels = name.rstrip(".").encode().split(b".")
    return b"".join(bytes((len(label),)) + label for label in labels) + b"\0"


def answer_values(response: dns.message.Message, name: str, rtype: str) -> tuple[str, ...]:
    """The sorted values of name/type in a response, in presentation form (() if it has none)."""
    qname = dns.name.from_text(name)
    # a delegation (NS below the apex) and its glue come back as a referral, not as an answer
    for section in (response.answer, response.authority, response.additional):
        for rrset in section:
            if rrset.name == qname and dns.rdatatype.to_text(rrset.rdtype) == rtype:
                return tuple(sorted(r.to_text(origin=dns.name.root, relativize=False)
                                    for r in rrset))
    return ()


# Types whose rdata never holds a compressible name (RFC 3597 section 4): their bytes can be
# compared as they come off the wire, without a full parse (verification sends thousands of
# queries).
_RAW_TYPES = {"A", "AAAA", "TXT", "CAA", "SRV", "CNAME", "NS", "PTR", "MX"}
# types whose rdata holds a domain name after a fixed prefix: the name is expanded (it may be
# compressed) and lower-cased, as in the canonical (digestable) form it is compared with
_NAME_AT: dict[int, int] = {dns.rdatatype.CNAME: 0, dns.rdatatype.NS: 0, dns.rdatatype.PTR: 0,
                            dns.rdatatype.MX: 2, dns.rdatatype.SRV: 6}


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
    section that has any (the answer, or the authority of a referral: like `answer_values`): as
    sent, or with the domain name in it expanded and lower-cased (_NAME_AT); None if malformed.
    Records of other names - the glue a server without `minimal-responses` adds, a CNAME's target -
    are not the question's RRset."""
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
            pointed = wire[owner:owner + 2] == b"\xc0\x0c"  # the question's name, compressed
            if rtype == qtype and (pointed or _expanded_name(wire, owner) == qname):
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
# queries in flight: named drops UDP queries beyond a few dozen at once (seen: 63 of 1,000 at 256)
WINDOW = 32


def _send_all(sock: socket.socket, pending: list[Question], in_flight: dict[int, Question],
              window: int) -> None:
    while pending and len(in_flight) < window:
        question = pending.pop()
        qid = random.randrange(65536)
        while qid in in_flight:
            qid = random.randrange(65536)
        in_flight[qid] = question
        sock.send(_query_wire(qid, *question))


def _exchange(endpoint: Endpoint, questions: Sequence[Question],
              decode: Callable[[bytes, Question], T], *, timeout: float,
              window: int) -> dict[Question, T | None]:
    """Asks every question over one UDP socket with `window` in flight; each answer goes through
    `decode`. A question without an answer within `timeout` of the last answer is asked once
    more."""
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
                asked = (in_flight.pop(struct.unpack_from("!H", wire)[0], None)
                         if len(wire) >= 12 else None)
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
def query_many(endpoint: Endpoint, questions: Sequence[Question], *, timeout: float = 2,
               window: int = WINDOW, expect: dict[Question, frozenset[bytes]] | None = None,
               ) -> dict[Question, tuple[str, ...] | bool | None]:
    """Like rfc2136.query for many questions, pipelined over one UDP socket.

    With `expect` (question -> set of rdata wire forms) the answer for a question of a
    raw-comparable type is just True/False (matches or not); otherwise the sorted presentation
    values. A question without an answer maps to None."""
    def decode(wire: bytes, asked: Question) -> tuple[str, ...] | bool | None:
        if expect is not None and asked in expect and asked[1] in _RAW_TYPES:
            raw = _raw_rdatas(wire, dns.rdatatype.from_text(asked[1]))
            if raw is not None:
                return len(raw) == len(expect[asked]) and set(raw) == expect[asked]
        try:
            return answer_values(dns.message.from_wire(wire), *asked)
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
                # past the SOA's two names (mname, rname)
                at = _skip_name(wire, _skip_name(wire, pos))
                serial: int = struct.unpack_from("!I", wire, at)[0]
                return serial
            pos += length
    except (struct.error, IndexError):
        pass
    return None


@calls.measured("soa_query", "soa")
def serials(endpoint: Endpoint, zones: Sequence[str], *,
            timeout: float = 2) -> dict[str, int | None]:
    """Each zone's SOA serial on `endpoint`, asked all at once (None: no answer, or no such
    zone)."""
    answers = _exchange(endpoint, [(z, "SOA") for z in zones], _raw_serial, timeout=timeout,
                        window=WINDOW)
    return {z: s for (z, _), s in answers.items()}


def _holds(wire: bytes, question: Question) -> bool | None:
    if _raw_serial(wire, question) is not None:
        return True
    rcode = struct.unpack_from("!H", wire, 2)[0] & 0xF if len(wire) >= 4 else dns.rcode.SERVFAIL
    return None if rcode == dns.rcode.SERVFAIL else False  # SERVFAIL: held, but not loaded (yet)


@calls.measured("soa_query", "soa")
def holds(endpoint: Endpoint, zones: Sequence[str], *,
          timeout: float = 2) -> dict[str, bool | None]:
    """Whether `endpoint` serves each zone: True (it answers its SOA), False (it answers without
    one: no such zone, REFUSED), None (no answer: down or too slow; or SERVFAIL: a zone it holds but
    has not loaded, e.g. still transferring or expired)."""
    answers = _exchange(endpoint, [(z, "SOA") for z in zones], _holds, timeout=timeout,
                        window=WINDOW)
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
    answers without the zone, None without an answer (down, too slow; or SERVFAIL: held, not
    loaded)."""
    answers = _exchange(endpoint, [(z, "SOA") for z in zones], _soa, timeout=timeout, window=WINDOW)
    return {z: s for (z, _), s in answers.items()}
