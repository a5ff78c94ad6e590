"""MX: a mail exchanger, fully qualified, with its priority. One CR per value: the agent joins the
CRs of one name into one RRset."""

from __future__ import annotations

from typing import Any, Literal

import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.MX

from agent.model.base import Port
from agent.model.records import Record, RecordSpec
from agent.model.recordtypes import RecordType, register
from agent.model.recordtypes.values import host


class MXRecordSpec(RecordSpec):
    mail_server: str
    priority: Port


class MXRecord(Record):
    """A mail exchanger."""

    kind: Literal["MXRecord"]
    spec: MXRecordSpec


class MX(RecordType):
    kind, rtype, short, model = "MXRecord", "MX", "mx", MXRecord
    columns = (("Priority", "integer", ".spec.priority"),
               ("Mail Server", "string", ".spec.mailServer"))
    targets = ("spec.mailServer",)
    integrity_field = "spec.mailServer"

    def rdatas(self, spec: MXRecordSpec) -> list[dns.rdata.Rdata]:
        exchange = host(spec.mail_server, "spec.mailServer")
        return [dns.rdtypes.ANY.MX.MX(dns.rdataclass.IN, dns.rdatatype.MX, spec.priority, exchange)]

    def identity(self, spec: MXRecordSpec) -> tuple[object, ...]:
        return ("MX", spec.priority, spec.mail_server)

    def from_rdata(self, values: list[Any]) -> list[dict[str, Any]]:
        return [{"priority": r.preference, "mailServer": r.exchange.to_text()} for r in values]


register(MX())
