"""TXT: text data (SPF, DKIM, DMARC, verification). A long string is split into 255-octet strings,
as BIND and every DNS provider do; one CR per value."""

from __future__ import annotations

from typing import Any, Literal

import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.TXT

from agent.model.records import Record, RecordSpec
from agent.model.recordtypes import RecordType, register
from agent.model.recordtypes.values import CONTROL, MAX_RDATA, RecordError


class TXTRecordSpec(RecordSpec):
    text: list[str]


class TXTRecord(Record):
    """Text data (SPF, DKIM, DMARC, verification)."""

    kind: Literal["TXTRecord"]
    spec: TXTRecordSpec


def _chunks(text: str) -> list[bytes]:
    data = text.encode()
    return [data[i:i + 255] for i in range(0, len(data), 255)] or [b""]


class TXT(RecordType):
    kind, rtype, short, model = "TXTRecord", "TXT", "txt", TXTRecord

    def rdatas(self, spec: TXTRecordSpec) -> list[dns.rdata.Rdata]:
        chunks: list[bytes] = []
        for i, text in enumerate(spec.text):
            if CONTROL.search(text):
                raise RecordError(f"spec.text[{i}]", "contains a control character")
            chunks += _chunks(text)
        if not chunks:
            raise RecordError("spec.text", "needs at least one string")
        octets = sum(len(c) + 1 for c in chunks)
        if octets > MAX_RDATA:
            raise RecordError("spec.text",
                              f"is {octets:,} octets as TXT data (strings split at 255); one "
                              f"record holds at most {MAX_RDATA:,} - publish less, or split it "
                              f"across names")
        return [dns.rdtypes.ANY.TXT.TXT(dns.rdataclass.IN, dns.rdatatype.TXT, chunks)]

    def identity(self, spec: TXTRecordSpec) -> tuple[object, ...]:
        return ("TXT", *spec.text)

    def from_rdata(self, values: list[Any]) -> list[dict[str, Any]]:
        return [{"text": [s.decode() for s in r.strings]} for r in values]


register(TXT())
