"""ClusterBind9Provider, Bind9Cluster and Bind9Instance: the BIND9 infrastructure kinds."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from agent.model.base import (
    RFC3339,
    HmacAlgorithm,
    Int32,
    K8sObject,
    LabelSelector,
    Model,
    PolicyName,
    Resource,
    Status,
    ZoneReference,
)

DurationToken = Annotated[str, Field(pattern=r"^[A-Za-z0-9]{1,32}$")]
Replicas = Annotated[int, Field(ge=0, le=100)]
RESOURCES_DOC = ("Resource requirements of the bind9 container; replace the agent's defaults "
                 "(agent extension; Bindy's CRD has none)")


class RndcSecretRef(Model):
    """Reference to an existing Secret holding an RNDC/TSIG key."""

    name: str = Field(description="Name of the Kubernetes Secret containing RNDC credentials")
    algorithm: HmacAlgorithm = "hmac-sha256"
    key_name_key: str = Field("key-name", description="Key within the secret for the key name")
    secret_key: str = Field("secret", description="Key within the secret for the secret value")


class SecretMetadata(Model):
    name: str
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class InlineSecret(Model):
    """Inline Secret specification for an operator-managed RNDC Secret."""

    metadata: SecretMetadata
    data: dict[str, str] | None = None
    string_data: dict[str, str] | None = None
    type: str = "Opaque"


class RndcKeyConfig(Model):
    """RNDC key lifecycle: generated, inline, or referenced; optional rotation."""

    algorithm: HmacAlgorithm = "hmac-sha256"
    auto_rotate: bool = False
    rotate_after: str = Field("720h", description='Go duration such as "720h" or "30d"')
    secret: InlineSecret | None = None
    secret_ref: RndcSecretRef | None = None


class ImageConfig(Model):
    image: str | None = Field(None, description="Container image repository and tag for BIND9")
    image_pull_policy: str | None = None
    image_pull_secrets: list[str] | None = None


class ConfigMapRefs(Model):
    named_conf: str | None = None
    named_conf_options: str | None = None
    named_conf_zones: str | None = None


class BindcarConfig(Model):
    """The zone HTTP API sidecar container."""

    env_vars: list[K8sObject] | None = None
    image: str | None = None
    image_pull_policy: str | None = None
    log_level: str | None = None
    port: Int32 | None = Field(None, description="API server container port (default: 8080)")
    resources: K8sObject | None = None
    service_spec: K8sObject | None = None


class DnssecKeySecretRef(Model):
    name: str
    namespace: str | None = None


class DnssecKeysFrom(Model):
    persistent_volume: K8sObject | None = None
    secret_ref: DnssecKeySecretRef | None = None


class DnssecSigning(Model):
    algorithm: DurationToken | None = None
    auto_generate: bool | None = None
    enabled: bool = False
    export_to_secret: bool | None = None
    keys_from: DnssecKeysFrom | None = None
    ksk_lifetime: DurationToken | None = None
    nsec3: bool | None = None
    nsec3_iterations: Annotated[int, Field(ge=0, le=2**32 - 1)] | None = None
    nsec3_salt: str | None = None
    policy: PolicyName | None = None
    zsk_lifetime: DurationToken | None = None


class DnssecConfig(Model):
    signing: DnssecSigning | None = None
    validation: bool | None = None


class Bind9Config(Model):
    """named.conf options shared by a cluster's instances, or overridden on one instance."""

    allow_query: list[str] | None = None
    allow_transfer: list[str] | None = None
    bindcar_config: BindcarConfig | None = None
    dnssec: DnssecConfig | None = None
    forwarders: list[str] | None = None
    listen_on: list[str] | None = None
    listen_on_v6: list[str] | None = None
    recursion: bool | None = None
    rndc_secret_ref: RndcSecretRef | None = None


class ServiceConfig(Model):
    annotations: dict[str, str] | None = None
    spec: K8sObject | None = None


class RoleConfig(Model):
    """Per-role (primary / secondary) settings of a cluster."""

    allow_transfer: list[str] | None = None
    labels: dict[str, str] | None = None
    replicas: Replicas | None = Field(None, description="Number of instances of this role (default "
                                                        "1)")
    rndc_key: RndcKeyConfig | None = None
    rndc_secret_ref: RndcSecretRef | None = None
    service: ServiceConfig | None = None


class ZoneSource(Model):
    """Selects DNSZones by label (seed zonesFrom design; an agent extension of Bindy's CRDs)."""

    selector: LabelSelector


class ClusterCommonSpec(Model):
    acls: dict[str, list[str]] | None = None
    config_map_refs: ConfigMapRefs | None = None
    global_: Bind9Config | None = Field(None, alias="global")
    image: ImageConfig | None = None
    primary: RoleConfig | None = None
    resources: K8sObject | None = Field(None, description=RESOURCES_DOC)
    rndc_secret_refs: list[RndcSecretRef] | None = None
    secondary: RoleConfig | None = None
    version: str | None = Field("9.18", description="Shared BIND9 version for the cluster")
    volume_mounts: list[K8sObject] | None = None
    volumes: list[K8sObject] | None = None
    zones_from: list[ZoneSource] | None = Field(
        None, description="DNSZones served by this cluster's instances, selected by label"
    )


class ClusterStatus(Status):
    instance_count: Int32 | None = None
    instances: list[str] = Field(default_factory=list)
    ready_instances: Int32 | None = None


class ClusterBind9ProviderSpec(ClusterCommonSpec):
    namespace: str | None = Field(
        None, description="Namespace where the Bind9Cluster is created (default dns-system)"
    )
    namespaces: list[str] | None = Field(
        None,
        description="Several target namespaces, one Bind9Cluster each (agent extension; "
        "Bindy's CRD has the single `namespace`)",
    )


class ClusterBind9Provider(Resource):
    """Cluster-scoped BIND9 provider: one Bind9Cluster in each target namespace."""

    kind: Literal["ClusterBind9Provider"]
    spec: ClusterBind9ProviderSpec = Field(default_factory=ClusterBind9ProviderSpec)
    status: ClusterStatus | None = None


class Bind9ClusterSpec(ClusterCommonSpec):
    pass


class Bind9Cluster(Resource):
    """A set of BIND9 primary and secondary instances sharing configuration."""

    kind: Literal["Bind9Cluster"]
    spec: Bind9ClusterSpec = Field(default_factory=Bind9ClusterSpec)
    status: ClusterStatus | None = None


class PersistentVolumeClaimConfig(Model):
    access_modes: list[str] | None = None
    claim_name: str | None = None
    size: str | None = None
    storage_class_name: str | None = None


class StorageConfig(Model):
    empty_dir: K8sObject | None = None
    persistent_volume_claim: PersistentVolumeClaimConfig | None = None
    storage_type: Literal["emptyDir", "persistentVolumeClaim"] = "emptyDir"


class Bind9InstanceSpec(Model):
    bindcar_config: BindcarConfig | None = None
    cluster_ref: str = Field(description="The Bind9Cluster (or ClusterBind9Provider) it belongs to")
    config: Bind9Config | None = None
    config_map_refs: ConfigMapRefs | None = None
    image: ImageConfig | None = None
    primary_servers: list[str] | None = None
    replicas: Replicas | None = None
    resources: K8sObject | None = Field(None, description=RESOURCES_DOC)
    rndc_key: RndcKeyConfig | None = None
    rndc_secret_ref: RndcSecretRef | None = None
    role: Literal["primary", "secondary"]
    storage: StorageConfig | None = None
    version: str | None = None
    volume_mounts: list[K8sObject] | None = None
    volumes: list[K8sObject] | None = None
    zones_from: list[ZoneSource] | None = None


class ClusterReference(Model):
    api_version: str
    kind: str
    name: str
    namespace: str | None = None


class RndcKeyRotation(Model):
    created_at: RFC3339
    last_rotated_at: RFC3339 | None = None
    rotate_at: RFC3339 | None = None
    rotation_count: Annotated[int, Field(ge=0)] = 0


class SelectedZone(Model):
    name: str
    namespace: str
    zone_name: str


class Bind9InstanceStatus(Status):
    cluster_ref: ClusterReference | None = None
    observed_parent_generation: int | None = None
    rndc_key_rotation: RndcKeyRotation | None = None
    service_address: str | None = None
    zones: list[ZoneReference] = Field(default_factory=list)
    zones_count: Int32 | None = None
    selected_zones: list[SelectedZone] | None = Field(
        None, description="DNSZones matched by zonesFrom selectors"
    )


class Bind9Instance(Resource):
    """One BIND9 server (Deployment, Service, ConfigMap, RNDC key Secret)."""

    kind: Literal["Bind9Instance"]
    spec: Bind9InstanceSpec
    status: Bind9InstanceStatus | None = None
