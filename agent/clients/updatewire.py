"""The UPDATE messages of a zone's RRset changes, rendered straight to wire form, in batches (RFC
2136).

Each change is guarded by a prerequisite (RFC 2136 section 2.4) so it only applies if every RRset
still holds what the agent observed: an update or delete requires the exact observed RRset, a
create requires that no RRset of that name and type exists. The first message of a zone carries the
prerequisites of all its changes when they fit (`batches`), so a zone changed meanwhile is usually
refused before any of its batches is written. Sending them: agent/clients/rfc2136.py.

A change of the zone's own name servers is written so that named accepts it (it checks after every
message that each name server inside the zone has an address, and ignores a delete of the whole apex
NS RRset or of its last record): the apex NS change, the glue changes and the SOA go first, together
in the first message, ordered new glue, apex NS, the SOA (its primary name server), old glue; the
apex NS is changed record by record, new name servers added before old ones are deleted.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Any

import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.update

from agent.clients import dnsquery, rfc2136
from agent.clients.endpoints import TsigKey
from agent.desired import rrsets
from agent.model.rrchange import RRChange

DEFAULT_BATCH = 1000


class _Rendered:
    """Resource records already in wire form, standing in for an RRset in a message section: the
    message renders them as they are (dnspython's renderer calls `to_wire`, as it would an RRset's).
    Building a large UPDATE through dnspython's RRset objects costs more than named takes to apply
    it."""

    def __init__(self) -> None:
        self.records: list[bytes] = []
        self.size = 0

    def add(self, records: list[bytes], size: int) -> None:
        self.records += records
        self.size += size

    def to_wire(self, file: Any, compress: Any = None, origin: Any = None, **kw: Any) -> int:
        file.write(b"".join(self.records))
        return len(self.records)


_RR = struct.Struct("!HHIH")  # type, class, TTL, RDLENGTH
# octets of prerequisites and updates per message (a DNS message holds 65,535)
_MESSAGE_BUDGET = 60_000


def _records(owner: bytes, rtype: int, rr: rrsets.RRset, ttl: int) -> list[bytes]:
    objects = rr.objects or tuple(dns.rdata.from_text(dns.rdataclass.IN, rr.rtype, v)
                                  for v in rr.rdatas)
    return [owner + _RR.pack(rtype, dns.rdataclass.IN, ttl, len(w)) + w
            for w in (o.to_wire() or b"" for o in objects)]


def _change_wire(change: RRChange, zone: str) -> tuple[list[bytes], list[bytes]]:
    """(prerequisite RRs, update RRs) of one change, RFC 2136 2.4 and 2.5."""
    owner, rtype = dnsquery.name_wire(change.key[0]), dns.rdatatype.from_text(change.key[1])
    # not there
    prerequisite = ([owner + _RR.pack(rtype, dns.rdataclass.NONE, 0, 0)] if change.before is None
                    # there with exactly these data (TTL zero)
                    else _records(owner, rtype, change.before, 0))
    if change.key == (zone, "NS") and change.before is not None and change.after is not None:
        # named ignores a delete of the whole apex NS RRset (RFC 2136 3.4.2.3): the new records are
        # added, then each old one that goes is deleted by itself (class NONE, RFC 2136 2.5.4)
        gone = dataclasses.replace(change.before, rdatas=tuple(v for v in change.before.rdatas
                                                               if v not in change.after.rdatas),
                                   objects=())
        update = _records(owner, rtype, change.after, change.after.ttl)
        update += [r[:len(owner) + 2] + struct.pack("!H", dns.rdataclass.NONE) + r[len(owner) + 4:]
                   for r in _records(owner, rtype, gone, 0)]
        return prerequisite, update
    update = [owner + _RR.pack(rtype, dns.rdataclass.ANY, 0, 0)]  # delete the RRset ...
    if change.after is not None:  # ... and add the new one
        update += _records(owner, rtype, change.after, change.after.ttl)
    return prerequisite, update


def _name_servers_first(zone: str, changes: list[RRChange]) -> tuple[list[RRChange], int]:
    """The changes with those of the zone itself first - new glue, the apex NS, the SOA, old glue -
    and how many they are: they go in the first message (named checks the name servers after each
    one, and the SOA's prerequisite holds its serial as observed, which every message moves on)."""
    apex = next((c for c in changes if c.key == (zone, "NS")), None)
    soa = [c for c in changes if c.key == (zone, "SOA")]
    hosts = {rrsets.absolute(v) for rr in (apex.before, apex.after) if rr is not None
             for v in rr.rdatas} \
        if apex is not None else set()
    glue = [c for c in changes if c.key[1] in ("A", "AAAA") and c.key[0] in hosts]
    first = [c for c in glue if c.after is not None] + ([apex] if apex else []) + soa + [
        c for c in glue if c.after is None]
    if not first:
        return changes, 0
    taken = {id(c) for c in first}
    return first + [c for c in changes if id(c) not in taken], len(first)


def build_updates(zone: str, changes: list[RRChange], tsig: TsigKey | None, *,
                  batch: int = DEFAULT_BATCH) -> list[dns.update.UpdateMessage]:
    """UPDATE messages of at most `batch` changes (and what fits in one message), each change
    guarded by its prerequisite (the first message also by those of the later ones: `batches`)."""
    return [message for message, _ in batches(zone, changes, tsig, batch=batch)]


def batches(zone: str, changes: list[RRChange], tsig: TsigKey | None, *,
            batch: int = DEFAULT_BATCH) -> list[tuple[dns.update.UpdateMessage, list[RRChange]]]:
    """The UPDATE messages of a zone's changes, each with the changes it writes: at most `batch`
    changes (and what fits in one message), each guarded by its prerequisite. The first message also
    carries the prerequisites of the later messages' changes, as many as fit (all of them, unless
    they are many and large): a zone changed since it was observed is then usually refused before
    anything of it is written, rather than after its first batches went out. Every later message
    still carries its own prerequisites (the zone may change between messages)."""
    keyring, keyname, algorithm = rfc2136.tsig_keyring(tsig)
    out: list[tuple[dns.update.UpdateMessage, list[RRChange]]] = []
    prerequisites = updates = first = _Rendered()
    extra = _Rendered()  # the later batches' prerequisites that the first message checks too
    written: list[RRChange] = []
    taken, room = batch, 0  # room: what the first message can still take, once it is complete
    ns_zone = rrsets.absolute(zone)
    changes, together = _name_servers_first(ns_zone, changes)
    for index, change in enumerate(changes):
        prerequisite, update = _change_wire(change, ns_zone)
        sizes = sum(len(r) for r in prerequisite), sum(len(r) for r in update)
        full = taken >= batch or prerequisites.size + updates.size + sum(sizes) > _MESSAGE_BUDGET
        if not out or full and index >= together:
            if len(out) == 1:
                room = _MESSAGE_BUDGET - prerequisites.size - updates.size
            message = dns.update.UpdateMessage(zone, keyring=keyring, keyname=keyname,
                                               keyalgorithm=algorithm)
            prerequisites, updates, written, taken = _Rendered(), _Rendered(), [], 0
            message.prerequisite.append(prerequisites)  # type: ignore[arg-type]  # rendered RRs (see _Rendered)
            message.update.append(updates)  # type: ignore[arg-type]
            out.append((message, written))
            first = first if len(out) > 1 else prerequisites
        if len(out) > 1 and sizes[0] <= room:
            extra.add(prerequisite, sizes[0])
            room -= sizes[0]
        # in order: once one does not fit, the rest is checked by its own batch only
        elif len(out) > 1:
            room = 0
        prerequisites.add(prerequisite, sizes[0])
        updates.add(update, sizes[1])
        written.append(change)
        taken += 1
    first.add(extra.records, extra.size)
    return out
