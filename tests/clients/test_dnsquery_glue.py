"""Verification against a named without `minimal-responses` (Bindy's generated named.conf, BIND's
default): an answer carries the zone's NS in its authority section and their addresses as glue in
the additional section. Only the question's own RRset counts - found on the e2e node, where every
new A record of a zone was reported "does not answer the new ... A" and every run ended partial."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import dns.message
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import pytest

from agent.clients import dnsquery
from agent.clients.endpoints import Endpoint

Responder = Callable[[dns.message.Message], dns.message.Message]


@pytest.fixture
def server() -> Iterator[Callable[[Responder], Endpoint]]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    answer: list[Responder] = []
    stop = threading.Event()

    def serve() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                data, peer = sock.recvfrom(65535)
            except OSError:
                continue
            sock.sendto(answer[0](dns.message.from_wire(data)).to_wire(), peer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    def start(responder: Responder) -> Endpoint:
        answer.append(responder)
        return Endpoint("dns-system/dns-primary-0", "127.0.0.1", sock.getsockname()[1], "http://127.0.0.1:1")

    yield start
    stop.set()
    thread.join(2)
    sock.close()


def _rrset(name: str, rtype: str, *values: str) -> dns.rrset.RRset:
    return dns.rrset.from_text_list(name, 300, "IN", rtype, list(values))


def _with_glue(query: dns.message.Message) -> dns.message.Message:
    """What named 9.18 answers a non-recursive query with its default `minimal-responses no-auth-recursive`."""
    reply = dns.message.make_response(query)
    qname = query.question[0].name.to_text()
    rtype = dns.rdatatype.to_text(query.question[0].rdtype)
    if qname == "www.example.com." and rtype == "A":
        reply.answer.append(_rrset(qname, "A", "192.0.2.10", "192.0.2.11"))
    if qname == "alias.example.com.":
        reply.answer.append(_rrset(qname, "CNAME", "www.example.com."))
        reply.answer.append(_rrset("www.example.com.", "A", "192.0.2.10", "192.0.2.11"))
    if qname == "sub.example.com." and rtype == "NS":  # a delegation: a referral, NS in the authority
        reply.authority.append(_rrset(qname, "NS", "ns.sub.example.com."))
        reply.additional.append(_rrset("ns.sub.example.com.", "A", "192.0.2.53"))
        return reply
    reply.authority.append(_rrset("example.com.", "NS", "ns1.example.com.", "ns2.example.com."))
    reply.additional.append(_rrset("ns1.example.com.", "A", "192.0.2.1"))
    reply.additional.append(_rrset("ns2.example.com.", "A", "192.0.2.2"))
    return reply


def _wire(rtype: str, *values: str) -> frozenset[bytes]:
    return frozenset(dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.from_text(rtype), v).to_digestable()
                     for v in values)


def test_an_a_rrset_answered_with_glue_in_the_additional_section_is_confirmed(
        server: Callable[[Responder], Endpoint]) -> None:
    endpoint = server(_with_glue)
    key = ("www.example.com.", "A")
    got = dnsquery.query_many(endpoint, [key], expect={key: _wire("A", "192.0.2.10", "192.0.2.11")})
    assert got[key] is True


def test_the_glue_is_not_taken_for_the_rrset_asked(server: Callable[[Responder], Endpoint]) -> None:
    endpoint = server(_with_glue)
    key = ("www.example.com.", "A")
    got = dnsquery.query_many(endpoint, [key], expect={key: _wire("A", "192.0.2.10", "192.0.2.11", "192.0.2.1")})
    assert got[key] is False
    missing = ("nothing.example.com.", "A")  # no answer at all: the glue is not it
    got = dnsquery.query_many(endpoint, [missing], expect={missing: _wire("A", "192.0.2.1", "192.0.2.2")})
    assert got[missing] is False


def test_a_cname_target_is_not_the_rrset_of_the_alias(server: Callable[[Responder], Endpoint]) -> None:
    endpoint = server(_with_glue)
    key = ("alias.example.com.", "A")
    got = dnsquery.query_many(endpoint, [key], expect={key: _wire("A", "192.0.2.10", "192.0.2.11")})
    assert got[key] is False


def test_a_delegation_is_confirmed_from_the_referral(server: Callable[[Responder], Endpoint]) -> None:
    endpoint = server(_with_glue)
    key = ("sub.example.com.", "NS")
    got = dnsquery.query_many(endpoint, [key], expect={key: _wire("NS", "ns.sub.example.com.")})
    assert got[key] is True
