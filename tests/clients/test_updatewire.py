"""UPDATE messages are rendered straight to wire form: they must say exactly what dnspython's own
UpdateMessage says for the same changes (RFC 2136 prerequisites and updates), signed the same way."""

from __future__ import annotations

import dns.message
import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdataset
import dns.rdatatype
import dns.tsig
import dns.tsigkeyring
import dns.update

from agent.clients import updatewire
from agent.clients.endpoints import TsigKey
from agent.desired import rrsets
from agent.model.rrchange import RRChange

ZONE = "example.com."
SECRET = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0IQ=="


def _rrset(name: str, rtype: str, ttl: int, *values: str, parsed: bool = True) -> rrsets.RRset:
    objects = [dns.rdata.from_text(dns.rdataclass.IN, rtype, v) for v in values] if parsed else []
    return rrsets.build(ZONE, name, rtype, ttl, values, objects)


CHANGES = [
    RRChange("create", None, _rrset("www.example.com.", "A", 300, "192.0.2.1", "192.0.2.2")),
    RRChange("update", _rrset("mail.example.com.", "MX", 300, "10 mx1.example.com.", parsed=False),
             _rrset("mail.example.com.", "MX", 600, "10 mx1.example.com.", "20 MX2.Example.com.")),
    RRChange("delete", _rrset("old.example.com.", "TXT", 60, '"bye" "now"', parsed=False), None),
    RRChange("create", None, _rrset("_sip._tcp.example.com.", "SRV", 60, "10 5 5060 sip.example.net.")),
    RRChange("create", None, _rrset("alias.example.com.", "CNAME", 60, "www.example.com.")),
    RRChange("create", None, _rrset("example.com.", "CAA", 60, '0 issue "letsencrypt.org"')),
]


def _reference(changes: list[RRChange]) -> dns.update.UpdateMessage:
    """The same changes through dnspython's UpdateMessage (what the agent used to build)."""
    update = dns.update.UpdateMessage(ZONE)
    for change in changes:
        name = dns.name.from_text(change.key[0])
        if change.before is None:
            update.absent(name, change.key[1])
        else:
            update.present(name, dns.rdataset.from_text_list("IN", change.key[1], 0, list(change.before.rdatas)))
        if change.after is None:
            update.delete(name, change.key[1])
        else:
            update.replace(name, dns.rdataset.from_text_list("IN", change.key[1], change.after.ttl,
                                                             list(change.after.rdatas)))
    return update


def _sections(message: dns.message.Message) -> list[list[str]]:
    parsed = dns.message.from_wire(message.to_wire(), keyring=None)
    assert isinstance(parsed, dns.update.UpdateMessage)
    # record by record; lower-cased: dnspython's compression points 'MX2.Example.com.' at the zone's
    # 'example.com.' (names compare without case), so its copy comes back lower-case
    return [sorted(line.lower() for r in section for line in r.to_text().splitlines())
            for section in (parsed.zone, parsed.prerequisite, parsed.update)]


def test_the_wire_says_what_dnspythons_update_message_says() -> None:
    [ours] = updatewire.build_updates(ZONE, CHANGES, None)
    assert _sections(ours) == _sections(_reference(CHANGES))


def test_a_signed_update_verifies_with_the_key() -> None:
    [ours] = updatewire.build_updates(ZONE, CHANGES, TsigKey("agent-key.", "hmac-sha256", SECRET))
    keyring = dns.tsigkeyring.from_text({"agent-key.": ("hmac-sha256", SECRET)})
    parsed = dns.message.from_wire(ours.to_wire(), keyring=keyring)  # raises unless the MAC verifies
    assert parsed.had_tsig
    assert sum(len(r) or 1 for r in parsed.update) == 13  # per change: a delete, then each new record


def test_batches_split_by_count_and_by_size() -> None:
    many = [RRChange("create", None, _rrset(f"h{i}.example.com.", "TXT", 60, '"' + "x" * 200 + '"'))
            for i in range(1000)]
    by_count = updatewire.build_updates(ZONE, many[:10], None, batch=4)
    assert [len(m.to_wire()) > 0 for m in by_count] == [True, True, True]
    by_size = updatewire.build_updates(ZONE, many, None, batch=1000)
    assert len(by_size) > 1 and all(len(m.to_wire()) <= 65_535 for m in by_size)
    assert sum(len(dns.message.from_wire(m.to_wire()).update) for m in by_size) == 2000


def test_a_name_server_swap_is_one_message_named_accepts_new_glue_then_apex_ns_record_by_record_then_old_glue() -> None:
    """named ignores a delete of the whole apex NS RRset and checks after each message that every name
    server inside the zone has an address: the swap's changes go together in the first message (even
    with one change a message), new glue first, the new NS added before the old one is deleted by
    itself (class NONE), the old glue last."""
    changes = [
        RRChange("create", None, _rrset("www.example.com.", "A", 300, "192.0.2.9")),
        RRChange("delete", _rrset("ns1.example.com.", "A", 300, "192.0.2.1"), None),
        RRChange("update", _rrset("example.com.", "NS", 300, "ns1.example.com.", "ns.example.net."),
                 _rrset("example.com.", "NS", 300, "ns2.example.com.", "ns.example.net.")),
        RRChange("create", None, _rrset("ns2.example.com.", "A", 300, "192.0.2.2")),
    ]
    (first, written), (second, rest) = updatewire.batches(ZONE, changes, None, batch=1)
    text = dns.message.from_wire(first.to_wire()).to_text()
    assert text[text.index(";UPDATE\n"):text.index(";ADDITIONAL")].splitlines()[1:] == [
        "ns2.example.com. ANY A", "ns2.example.com. 300 IN A 192.0.2.2",
        "example.com. 300 IN NS ns2.example.com.", "example.com. 300 IN NS ns.example.net.",
        "example.com. 0 NONE NS ns1.example.com.", "ns1.example.com. ANY A"]
    assert [c.key for c in written] == [("ns2.example.com.", "A"), ("example.com.", "NS"), ("ns1.example.com.", "A")]
    assert [c.key for c in rest] == [("www.example.com.", "A")]


def test_an_soa_change_goes_in_the_first_message_while_its_observed_serial_holds() -> None:
    """Every message moves the serial on: the SOA's prerequisite (its serial as observed) holds only in
    the first one."""
    soa = RRChange("update", _rrset("example.com.", "SOA", 300, "ns1.example.com. a.example.com. 7 1 1 1 1"),
                   _rrset("example.com.", "SOA", 300, "ns2.example.com. a.example.com. 8 1 1 1 1"))
    (first, written), (second, rest) = updatewire.batches(ZONE, [CHANGES[0], soa], None, batch=1)
    assert [c.key for c in written] == [("example.com.", "SOA")] and [c.key for c in rest] == [CHANGES[0].key]
