"""The eight record kinds. Each spec has a `name` (relative, "@" or fully qualified) and a `ttl`.

`zone` is the seeds' shorthand for naming the zone a record belongs to (an agent extension:
Bindy itself selects records with DNSZone `recordsFrom`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from agent.model.base import RFC3339, Int32, Model, Port, Resource, Status, Ttl, ZoneReference


class RecordSpec(Model):
    name: str = Field(description='Record name within the zone; "@" for the apex, or a FQDN')
    ttl: Ttl | None = None
    zone: str | None = Field(
        None, description="Zone name this record belongs to (seed shorthand; agent extension)"
    )


class RecordStatus(Status):
    addresses: str | None = None
    last_updated: RFC3339 | None = None
    published_name: str | None = None
    record_hash: str | None = None
    zone: str | None = None
    zone_ref: ZoneReference | None = None


class ARecordSpec(RecordSpec):
    ipv4_addresses: list[str] = Field(min_length=1)


class AAAARecordSpec(RecordSpec):
    ipv6_addresses: list[str] = Field(min_length=1)


class CNAMERecordSpec(RecordSpec):
    target: str = Field(description="Canonical name, fully qualified with a trailing '.'")


class MXRecordSpec(RecordSpec):
    mail_server: str
    priority: Port


class TXTRecordSpec(RecordSpec):
    text: list[str]


class NSRecordSpec(RecordSpec):
    nameserver: str


class SRVRecordSpec(RecordSpec):
    port: Port
    priority: Port
    target: str
    weight: Port


class CAARecordSpec(RecordSpec):
    flags: Annotated[Int32, Field(ge=0, le=255)]
    tag: str
    value: str


class ARecord(Resource):
    """IPv4 address records."""

    kind: Literal["ARecord"]
    spec: ARecordSpec
    status: RecordStatus | None = None


class AAAARecord(Resource):
    """IPv6 address records."""

    kind: Literal["AAAARecord"]
    spec: AAAARecordSpec
    status: RecordStatus | None = None


class CNAMERecord(Resource):
    """An alias to a canonical name."""

    kind: Literal["CNAMERecord"]
    spec: CNAMERecordSpec
    status: RecordStatus | None = None


class MXRecord(Resource):
    """A mail exchanger."""

    kind: Literal["MXRecord"]
    spec: MXRecordSpec
    status: RecordStatus | None = None


class TXTRecord(Resource):
    """Text data (SPF, DKIM, DMARC, verification)."""

    kind: Literal["TXTRecord"]
    spec: TXTRecordSpec
    status: RecordStatus | None = None


class NSRecord(Resource):
    """Delegation of a subdomain to name servers."""

    kind: Literal["NSRecord"]
    spec: NSRecordSpec
    status: RecordStatus | None = None


class SRVRecord(Resource):
    """The location of a service."""

    kind: Literal["SRVRecord"]
    spec: SRVRecordSpec
    status: RecordStatus | None = None


class CAARecord(Resource):
    """Certificate Authority Authorization."""

    kind: Literal["CAARecord"]
    spec: CAARecordSpec
    status: RecordStatus | None = None


AnyRecord = ARecord | AAAARecord | CNAMERecord | MXRecord | TXTRecord | NSRecord | SRVRecord | CAARecord
