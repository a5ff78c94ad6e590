"""CAA: which certificate authorities may issue for a name - flags, a tag (issue, issuewild, iodef)
and its value. One CR per value."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.CAA
from pydantic import Field

from agent.model.base import Int32
from agent.model.records import Record, RecordSpec
from agent.model.recordtypes import RecordType, register
from agent.model.recordtypes.values import CONTROL, MAX_RDATA, RecordError

_TAG = re.compile(r"[A-Za-z0-9]{1,15}")


class CAARecordSpec(RecordSpec):
    flags: Annotated[Int32, Field(ge=0, le=255)]
    tag: str
    value: str


class CAARecord(Record):
    """Certificate Authority Authorization."""

    kind: Literal["CAARecord"]
    spec: CAARecordSpec


class CAA(RecordType):
    kind, rtype, short, model = "CAARecord", "CAA", "caa", CAARecord
    columns = (("Tag", "string", ".spec.tag"), ("Value", "string", ".spec.value"))

    def rdatas(self, spec: CAARecordSpec) -> list[dns.rdata.Rdata]:
        if not _TAG.fullmatch(spec.tag):
            raise RecordError("spec.tag", f"{spec.tag!r} is not a CAA tag (1-15 letters or digits, "
                              "such as issue, issuewild, iodef)")
        if CONTROL.search(spec.value):
            raise RecordError("spec.value", "contains a control character")
        if len(spec.value.encode()) + len(spec.tag) + 2 > MAX_RDATA:
            raise RecordError("spec.value",
                              f"is longer than the {MAX_RDATA:,} octets one record holds")
        return [dns.rdtypes.ANY.CAA.CAA(dns.rdataclass.IN, dns.rdatatype.CAA, spec.flags,
                                        spec.tag.encode(), spec.value.encode())]

    def identity(self, spec: CAARecordSpec) -> tuple[object, ...]:
        return ("CAA", spec.flags, spec.tag, spec.value)

    def from_rdata(self, values: list[Any]) -> list[dict[str, Any]]:
        return [{"flags": r.flags, "tag": r.tag.decode(), "value": r.value.decode()}
                for r in values]


register(CAA())
