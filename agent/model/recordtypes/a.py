"""A: IPv4 addresses. One CR holds an RRset's addresses (`import` writes one per RRset); `ipv4` is
the seeds' shorthand for `ipv4Addresses`."""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.IN.A
from pydantic import Field

from agent.model.records import Record, RecordSpec
from agent.model.recordtypes import RecordType, register
from agent.model.recordtypes.addresses import addresses


class ARecordSpec(RecordSpec):
    ipv4_addresses: list[str] = Field(min_length=1)


class ARecord(Record):
    """IPv4 address records."""

    kind: Literal["ARecord"]
    spec: ARecordSpec


class A(RecordType):
    kind, rtype, short, model = "ARecord", "A", "a", ARecord
    columns = (("Addresses", "string", ".status.addresses"),)
    shorthand = (("ipv4", "ipv4Addresses"),)

    def rdatas(self, spec: ARecordSpec) -> list[dns.rdata.Rdata]:
        return [dns.rdtypes.IN.A.A(dns.rdataclass.IN, dns.rdatatype.A, a)
                for a in addresses(spec.ipv4_addresses, "ipv4Addresses", ipaddress.IPv4Address)]

    def identity(self, spec: ARecordSpec) -> tuple[object, ...]:
        return ("A", *spec.ipv4_addresses)

    def from_rdata(self, values: list[Any]) -> list[dict[str, Any]]:
        return [{"ipv4Addresses": sorted(r.address for r in values)}]


register(A())
