"""Verification reads answers off the wire: what it compares must equal dnspython's canonical form
for every type it reads raw, whatever case and name compression the server used."""

from __future__ import annotations

import dns.message
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import pytest

from agent.clients import dnsquery, rfc2136
from agent.plan.zoneplan import ZonePlan
from agent.reconcile import dnsapply, dnsverify

CASES = [
    ("A", "192.0.2.1"), ("AAAA", "2001:db8::1"), ("TXT", '"Case Matters" "two"'),
    ("CAA", '0 issue "letsencrypt.org"'), ("CNAME", "Target.Example.COM."), ("NS", "NS1.example.com."),
    ("PTR", "Host.Example.com."), ("MX", "10 Mail.EXAMPLE.com."), ("SRV", "10 5 5060 SIP.Example.com."),
]


@pytest.mark.parametrize("rtype, value", CASES)
def test_raw_rdata_equals_the_canonical_form_even_compressed_and_mixed_case(rtype: str, value: str) -> None:
    query = dns.message.make_query("www.example.com.", rtype)
    response = dns.message.make_response(query)
    rrset = dns.rrset.from_text("www.example.com.", 300, "IN", rtype, value)
    response.answer.append(rrset)
    wire = response.to_wire()  # dnspython compresses names in rdata against the question, as named does
    expected = dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.from_text(rtype), value).to_digestable()
    assert dnsquery._raw_rdatas(wire, dns.rdatatype.from_text(rtype)) == [expected]


def test_a_compression_loop_is_malformed_not_a_hang() -> None:
    query = dns.message.make_query("www.example.com.", "CNAME")
    head = dns.message.make_response(query).to_wire()
    head = head[:6] + b"\x00\x01" + head[8:]  # one answer
    at = len(head) + 12  # where the answer's rdata starts
    record = b"\xc0\x0c\x00\x05\x00\x01\x00\x00\x01\x2c\x00\x02" + bytes([0xC0 | at >> 8, at & 0xFF])
    assert dnsquery._raw_rdatas(head + record, dns.rdatatype.CNAME) is None  # the name points at itself


@pytest.mark.parametrize("serial, target, ok", [(5, 5, True), (6, 5, True), (4, 5, False), (None, 5, False),
                                                (2, 2**32 - 3, True), (2**32 - 3, 2, False)])
def test_a_secondary_reaches_a_serial_in_serial_arithmetic(serial: int | None, target: int, ok: bool) -> None:
    assert dnsverify.reached(serial, target) is ok


def test_each_name_means_one_thing() -> None:
    """Reading served data back, confirming a run's zones, the queued zones of an apply and a zone
    already in sync each have their own name; the old ones that meant several things are gone."""
    assert callable(rfc2136.confirm_served) and callable(dnsverify.confirm_zones)
    assert callable(dnsapply.DnsApply.confirm_queued)
    assert not hasattr(rfc2136, "verify") and not hasattr(dnsverify, "verify")
    assert not hasattr(dnsapply.DnsApply, "verify")
    fields = {f.name for f in ZonePlan.__dataclass_fields__.values()}
    assert "in_sync" in fields and "settled" not in fields
    assert hasattr(ZonePlan, "ownership_after") and not hasattr(ZonePlan, "settled_ownership")
