"""SRV: the location of a service - priority, weight, port and a fully qualified target. One CR per
value."""

from __future__ import annotations

from typing import Any, Literal

import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.IN.SRV

from agent.model.base import Port
from agent.model.records import Record, RecordSpec
from agent.model.recordtypes import RecordType, register
from agent.model.recordtypes.values import host


class SRVRecordSpec(RecordSpec):
    port: Port
    priority: Port
    target: str
    weight: Port


class SRVRecord(Record):
    """The location of a service."""

    kind: Literal["SRVRecord"]
    spec: SRVRecordSpec


class SRV(RecordType):
    kind, rtype, short, model = "SRVRecord", "SRV", "srv", SRVRecord
    columns = (("Target", "string", ".spec.target"), ("Port", "integer", ".spec.port"))
    targets = ("spec.target",)
    integrity_field = "spec.target"

    def rdatas(self, spec: SRVRecordSpec) -> list[dns.rdata.Rdata]:
        target = host(spec.target, "spec.target")
        return [dns.rdtypes.IN.SRV.SRV(dns.rdataclass.IN, dns.rdatatype.SRV, spec.priority,
                                       spec.weight, spec.port, target)]

    def identity(self, spec: SRVRecordSpec) -> tuple[object, ...]:
        return ("SRV", spec.priority, spec.weight, spec.port, spec.target)

    def from_rdata(self, values: list[Any]) -> list[dict[str, Any]]:
        return [{"priority": r.priority, "weight": r.weight, "port": r.port,
                 "target": r.target.to_text()}
                for r in values]


register(SRV())
