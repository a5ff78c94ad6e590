"""NS: the delegation of a subdomain to a name server, fully qualified. One CR per value; the zone's
own name servers are the DNSZone's (spec.nameServers), not records."""

from __future__ import annotations

from typing import Any, Literal

import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.NS

from agent.model.records import Record, RecordSpec
from agent.model.recordtypes import RecordType, register
from agent.model.recordtypes.values import host


class NSRecordSpec(RecordSpec):
    nameserver: str


class NSRecord(Record):
    """Delegation of a subdomain to name servers."""

    kind: Literal["NSRecord"]
    spec: NSRecordSpec


class NS(RecordType):
    kind, rtype, short, model = "NSRecord", "NS", "ns", NSRecord
    columns = (("Nameserver", "string", ".spec.nameserver"),)
    targets = ("spec.nameserver",)
    integrity_field = "spec.nameserver"

    def rdatas(self, spec: NSRecordSpec) -> list[dns.rdata.Rdata]:
        ns = host(spec.nameserver, "spec.nameserver")
        return [dns.rdtypes.ANY.NS.NS(dns.rdataclass.IN, dns.rdatatype.NS, ns)]

    def identity(self, spec: NSRecordSpec) -> tuple[object, ...]:
        return ("NS", spec.nameserver)

    def from_rdata(self, values: list[Any]) -> list[dict[str, Any]]:
        return [{"nameserver": r.target.to_text()} for r in values]


register(NS())
