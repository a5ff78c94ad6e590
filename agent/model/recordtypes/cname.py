"""CNAME: an alias to a canonical name, fully qualified (desired/zonerrsets.py refuses one beside
other data or at the apex)."""

from __future__ import annotations

from typing import Any, Literal

import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.CNAME
from pydantic import Field

from agent.model.records import Record, RecordSpec
from agent.model.recordtypes import RecordType, register
from agent.model.recordtypes.values import host


class CNAMERecordSpec(RecordSpec):
    target: str = Field(description="Canonical name, fully qualified with a trailing '.'")


class CNAMERecord(Record):
    """An alias to a canonical name."""

    kind: Literal["CNAMERecord"]
    spec: CNAMERecordSpec


class CNAME(RecordType):
    kind, rtype, short, model = "CNAMERecord", "CNAME", "cname", CNAMERecord
    columns = (("Target", "string", ".spec.target"),)
    targets = ("spec.target",)

    def rdatas(self, spec: CNAMERecordSpec) -> list[dns.rdata.Rdata]:
        target = host(spec.target, "spec.target")
        return [dns.rdtypes.ANY.CNAME.CNAME(dns.rdataclass.IN, dns.rdatatype.CNAME, target)]

    def identity(self, spec: CNAMERecordSpec) -> tuple[object, ...]:
        return ("CNAME", spec.target)

    def from_rdata(self, values: list[Any]) -> list[dict[str, Any]]:
        return [{"target": r.target.to_text()} for r in values]


register(CNAME())
