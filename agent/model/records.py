"""What every record kind shares: a spec with a `name` (relative, "@" or fully qualified) and a
`ttl`, the status the agent writes, and `Record`, the class of every record CR (each kind's is in
its module of model/recordtypes/).

`zone` is the seeds' shorthand for naming the zone a record belongs to (an agent extension:
Bindy itself selects records with DNSZone `recordsFrom`).
"""

from __future__ import annotations

from pydantic import Field

from agent.model.base import RFC3339, Model, Resource, Status, Ttl, ZoneReference


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


class Record(Resource):
    """A record CR of any kind: its spec is its kind's."""

    spec: RecordSpec
    status: RecordStatus | None = None


AnyRecord = Record
