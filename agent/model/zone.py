"""DNSZone: an authoritative zone, where it is served, and which records it holds."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from agent.model.base import RFC3339, Int32, LabelSelector, Model, PolicyName, Resource, Status, Ttl

FQDN_PATTERN = (
    r"^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
    r"(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*\.$"
)
ZONE_NAME_PATTERN = (
    r"^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)*"
    r"[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$"
)
IPV4_PATTERN = r"^(?:[0-9]{1,3}\.){3}[0-9]{1,3}$"
IPV6_PATTERN = (
    r"^([0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}$|^::$|^::1$|^([0-9a-fA-F]{1,4}:){1,7}:$"
    r"|^([0-9a-fA-F]{1,4}:){1,6}:[0-9a-fA-F]{1,4}$|^([0-9a-fA-F]{1,4}:){1,5}(:[0-9a-fA-F]{1,4}){1,2}$"
    r"|^([0-9a-fA-F]{1,4}:){1,4}(:[0-9a-fA-F]{1,4}){1,3}$"
    r"|^([0-9a-fA-F]{1,4}:){1,3}(:[0-9a-fA-F]{1,4}){1,4}$"
    r"|^([0-9a-fA-F]{1,4}:){1,2}(:[0-9a-fA-F]{1,4}){1,5}$"
    r"|^[0-9a-fA-F]{1,4}:((:[0-9a-fA-F]{1,4}){1,6})$|^:((:[0-9a-fA-F]{1,4}){1,7}|:)$"
)
Fqdn = Annotated[str, Field(pattern=FQDN_PATTERN)]
Seconds = Annotated[int, Field(ge=1, le=2**31 - 1)]


class SelectorSource(Model):
    selector: LabelSelector


class NameServer(Model):
    hostname: Fqdn = Field(description="Fully qualified name of the nameserver, ending with '.'")
    ipv4_address: Annotated[str, Field(pattern=IPV4_PATTERN)] | None = None
    ipv6_address: Annotated[str, Field(pattern=IPV6_PATTERN)] | None = None


class SoaRecord(Model):
    admin_email: Fqdn = Field(description="Zone admin mailbox with '@' as '.', ending with '.'")
    expire: Seconds
    negative_ttl: Ttl
    primary_ns: Fqdn = Field(description="Primary nameserver, a FQDN ending with '.'")
    refresh: Seconds
    retry: Seconds
    serial: Annotated[int, Field(ge=0, le=2**32 - 1)]


class DNSZoneSpec(Model):
    bind9_instances_from: list[SelectorSource] | None = None
    cluster_ref: str | None = Field(
        None, description="A Bind9Cluster (same namespace) or ClusterBind9Provider serving the zone"
    )
    cluster_provider_ref: str | None = Field(
        None, description="A ClusterBind9Provider serving the zone (seed-documented field)"
    )
    dnssec_policy: PolicyName | None = None
    name_server_ips: dict[str, str] | None = Field(
        None, description="(deprecated) nameserver hostname -> glue IP"
    )
    name_servers: list[NameServer] | None = None
    records_from: list[SelectorSource] | None = None
    soa_record: SoaRecord
    ttl: Ttl | None = None
    zone_name: Annotated[str, Field(pattern=ZONE_NAME_PATTERN)]


class ZoneInstanceStatus(Model):
    api_version: str
    kind: str
    name: str
    namespace: str
    status: Literal["Claimed", "Configured", "Failed", "Unclaimed"]
    last_reconciled_at: RFC3339 | None = None
    message: str | None = None


class DnssecStatus(Model):
    signed: bool
    algorithm: str | None = None
    ds_records: list[str] = Field(default_factory=list)
    key_tag: Annotated[int, Field(ge=0)] | None = None
    last_key_rollover: RFC3339 | None = None
    next_key_rollover: RFC3339 | None = None


class ZoneRecordReference(Model):
    api_version: str
    kind: str
    name: str
    namespace: str
    last_reconciled_at: RFC3339 | None = None
    record_name: str | None = None


class DNSZoneStatus(Status):
    bind9_instances: list[ZoneInstanceStatus] = Field(default_factory=list)
    bind9_instances_count: Int32 | None = None
    dnssec: DnssecStatus | None = None
    records: list[ZoneRecordReference] = Field(default_factory=list)
    records_count: Int32 = 0
    selection_method: Literal["explicit", "labelSelector"] | None = Field(
        None, description="How the zone was assigned to its instances"
    )
    selected_by_instance: str | None = Field(
        None, description="The instance whose zonesFrom selected this zone"
    )
    zone_hash: str | None = Field(
        None, description="Digest of the RRsets Git wants for the zone (sha256, 16 hex digits); "
        "the InSync condition says whether every server serves exactly them"
    )


class DNSZone(Resource):
    """An authoritative DNS zone served by selected Bind9Instances."""

    kind: Literal["DNSZone"]
    spec: DNSZoneSpec
    status: DNSZoneStatus | None = None
