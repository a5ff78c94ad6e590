"""AAAA: IPv6 addresses. One CR holds an RRset's addresses (`import` writes one per RRset); `ipv6`
is the seeds' shorthand for `ipv6Addresses`."""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.IN.AAAA
from pydantic import Field

from agent.model.records import Record, RecordSpec
from agent.model.recordtypes import RecordType, register
from agent.model.recordtypes.addresses import addresses


class AAAARecordSpec(RecordSpec):
    ipv6_addresses: list[str] = Field(min_length=1)


class AAAARecord(Record):
    """IPv6 address records."""

    kind: Literal["AAAARecord"]
    spec: AAAARecordSpec


class AAAA(RecordType):
    kind, rtype, short, model = "AAAARecord", "AAAA", "aaaa", AAAARecord
    columns = (("Addresses", "string", ".status.addresses"),)
    shorthand = (("ipv6", "ipv6Addresses"),)

    def rdatas(self, spec: AAAARecordSpec) -> list[dns.rdata.Rdata]:
        return [dns.rdtypes.IN.AAAA.AAAA(dns.rdataclass.IN, dns.rdatatype.AAAA, a)
                for a in addresses(spec.ipv6_addresses, "ipv6Addresses", ipaddress.IPv6Address)]

    def identity(self, spec: AAAARecordSpec) -> tuple[object, ...]:
        return ("AAAA", *spec.ipv6_addresses)

    def from_rdata(self, values: list[Any]) -> list[dict[str, Any]]:
        return [{"ipv6Addresses": sorted(r.address for r in values)}]


register(AAAA())
