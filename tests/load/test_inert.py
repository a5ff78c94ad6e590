"""No Bindy field is ignored silently: every field the agent does not act on warns at `validate` (and
at `plan` and `sync`, which load the same way) with file:line and field path, the warnings come from
the one list in agent/load/inert.py, docs/bindy-fields.md lists the same fields, and every field of
the models is either acted on somewhere (ACTED below names where) or in that list."""

from __future__ import annotations

import pathlib
import re
import typing
from typing import Any

import pydantic
import pytest

from agent.load import inert
from agent.model import kinds
from tests.conftest import Repo
from tests.support.clirun import main

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"

CLUSTER = HEAD + """kind: Bind9Cluster
metadata: {name: dns, namespace: dns-system}
spec:
  rndcSecretRefs: [{name: old-key}]
  global:
    dnssec:
      validation: true
      signing: {enabled: true, policy: strict, algorithm: ECDSAP256SHA256, nsec3: true, nsec3Salt: abcd,
                exportToSecret: true}
  primary:
    replicas: 1
    rndcKey:
      autoRotate: true
      rotateAfter: 24h
      secret: {metadata: {name: shared}, stringData: {secret: x}}
  secondary:
    replicas: 0
    rndcKey: {autoRotate: false}
---
""" + HEAD + """kind: Bind9Instance
metadata: {name: dns-secondary-0, namespace: dns-system}
spec:
  clusterRef: dns
  role: secondary
  primaryServers: [10.0.0.1]
  rndcKey:
    rotateAfter: 24h
    secret: {metadata: {name: own}, data: {secret: eA==}}
  storage:
    storageType: persistentVolumeClaim
    persistentVolumeClaim: {claimName: zones, size: 1Gi, storageClassName: fast, accessModes: [ReadWriteOnce]}
"""
ZONE = HEAD + """kind: DNSZone
metadata: {name: z, namespace: dns-system}
spec:
  zoneName: example.com
  clusterRef: dns
  dnssecPolicy: strict
  soaRecord: {primaryNs: ns1.example.com., adminEmail: a.example.com., serial: 1, refresh: 3600, retry: 600,
              expire: 604800, negativeTtl: 300}
  nameServers:
    - {hostname: ns1.example.com., ipv4Address: 192.0.2.1, ipv6Address: "2001:db8::1"}
"""
# (line, field path) of every field above that has no effect, in file order
EXPECTED = [
    ("infra.yaml", 5, "spec.rndcSecretRefs", True),
    ("infra.yaml", 9, "spec.global.dnssec.signing.nsec3Salt", True),
    ("infra.yaml", 10, "spec.global.dnssec.signing.exportToSecret", True),
    ("infra.yaml", 16, "spec.primary.rndcKey.secret", False),
    ("infra.yaml", 27, "spec.primaryServers", True),
    ("infra.yaml", 30, "spec.rndcKey.secret.data", False),
]


def _warnings(text: str) -> list[str]:
    return [line for line in text.splitlines() if "has no effect in bindy-agent" in line]


@pytest.fixture
def inert_repo(repo: Repo) -> Repo:
    repo.add("infra.yaml", CLUSTER)
    repo.add("zone.yaml", ZONE)
    return repo


def test_validate_warns_once_for_every_field_without_effect_at_its_line(inert_repo: Repo) -> None:
    result = main("validate", str(inert_repo.root))
    assert result.returncode == 0, result.stdout + result.stderr  # warnings, not errors
    found = _warnings(result.stdout + result.stderr)
    assert len(found) == len(EXPECTED), "\n".join(found)
    for (file, line, path, bindy_too), warning in zip(EXPECTED, found, strict=True):
        field = re.sub(r"\[\d+\]", "", path).rsplit(".", 1)[-1]
        assert f"{file}:{line}: " in warning and f": {path}: {field} has no effect in bindy-agent: " in warning, warning
        assert ("Bindy ignores it too" in warning) is bindy_too, warning


def test_dnssec_fields_and_settings_that_match_the_agent_do_not_warn(inert_repo: Repo) -> None:
    result = main("validate", str(inert_repo.root))
    output = "\n".join(_warnings(result.stdout + result.stderr))
    assert output
    for quiet in ("spec.dnssecPolicy", "dnssec.validation", "signing.enabled", "signing.policy",
                  "signing.nsec3", "signing.algorithm", "secondary.rndcKey.autoRotate",
                  "persistentVolumeClaim.claimName", "persistentVolumeClaim.size",
                  "persistentVolumeClaim.storageClassName", "persistentVolumeClaim.accessModes", "ipv4Address",
                  "ipv6Address"):
        assert re.search(rf"[ .]{re.escape(quiet)}(\[\d+\])?: ", output) is None, quiet


def test_plan_shows_the_same_warnings(inert_repo: Repo) -> None:
    result = main("plan", str(inert_repo.root))
    assert len(_warnings(result.stdout + result.stderr)) == len(EXPECTED), result.stdout + result.stderr


# -- every field is acted on or listed ---------------------------------------------------------------------

# Where each field the agent acts on is read: the declaring model's field -> a module that reads the
# attribute (`.name`) or, for checks on the document, the camelCase key.
ACTED: dict[str, str] = {
    "ClusterCommonSpec.acls": "agent/desired/hierarchy.py",
    "ClusterCommonSpec.config_map_refs": "agent/desired/hierarchy.py",
    "ClusterCommonSpec.global_": "agent/desired/hierarchy.py",
    "ClusterCommonSpec.image": "agent/desired/hierarchy.py",
    "ClusterCommonSpec.primary": "agent/desired/hierarchy.py",
    "ClusterCommonSpec.secondary": "agent/desired/hierarchy.py",
    "ClusterCommonSpec.resources": "agent/desired/hierarchy.py",
    "ClusterCommonSpec.version": "agent/desired/hierarchy.py",
    "ClusterCommonSpec.volume_mounts": "agent/desired/hierarchy.py",
    "ClusterCommonSpec.volumes": "agent/desired/hierarchy.py",
    "ClusterCommonSpec.zones_from": "agent/desired/hierarchy.py",
    "ClusterBind9ProviderSpec.namespace": "agent/desired/hierarchy.py",
    "ClusterBind9ProviderSpec.namespaces": "agent/desired/hierarchy.py",
    "ConfigMapRefs.named_conf": "agent/desired/hierarchy.py",
    "ConfigMapRefs.named_conf_options": "agent/desired/hierarchy.py",
    "ConfigMapRefs.named_conf_zones": "agent/desired/hierarchy.py",
    "Bind9Config.allow_query": "agent/desired/namedconf.py",
    "Bind9Config.allow_transfer": "agent/desired/namedconf.py",
    "Bind9Config.bindcar_config": "agent/desired/workloads.py",
    "Bind9Config.dnssec": "agent/desired/namedconf.py",
    "Bind9Config.forwarders": "agent/desired/namedconf.py",
    "Bind9Config.listen_on": "agent/desired/namedconf.py",
    "Bind9Config.listen_on_v6": "agent/desired/namedconf.py",
    "Bind9Config.recursion": "agent/desired/namedconf.py",
    "Bind9Config.rndc_secret_ref": "agent/desired/hierarchy.py",
    "BindcarConfig.env_vars": "agent/desired/workloads.py",
    "BindcarConfig.image": "agent/desired/workloads.py",
    "BindcarConfig.image_pull_policy": "agent/desired/workloads.py",
    "BindcarConfig.log_level": "agent/desired/workloads.py",
    "BindcarConfig.port": "agent/desired/workloads.py",
    "BindcarConfig.resources": "agent/desired/workloads.py",
    "BindcarConfig.service_spec": "agent/desired/hierarchy.py",
    "DnssecConfig.signing": "agent/desired/workloads.py",
    "DnssecConfig.validation": "agent/desired/namedconf.py",
    "DnssecSigning.algorithm": "agent/desired/workloads.py",
    "DnssecSigning.enabled": "agent/desired/namedconf.py",
    "DnssecSigning.ksk_lifetime": "agent/desired/namedconf.py",
    "DnssecSigning.zsk_lifetime": "agent/desired/namedconf.py",
    "DnssecSigning.nsec3": "agent/desired/namedconf.py",
    "DnssecSigning.nsec3_iterations": "agent/desired/namedconf.py",
    "DnssecSigning.policy": "agent/desired/namedconf.py",
    "RndcSecretRef.name": "agent/desired/hierarchy.py",
    "RndcSecretRef.algorithm": "agent/desired/workloads.py",
    "RndcSecretRef.key_name_key": "agent/observe/instancereach.py",
    "RndcSecretRef.secret_key": "agent/desired/workloads.py",
    "ImageConfig.image": "agent/desired/hierarchy.py",
    "ImageConfig.image_pull_policy": "agent/desired/hierarchy.py",
    "ImageConfig.image_pull_secrets": "agent/desired/hierarchy.py",
    "RoleConfig.allow_transfer": "agent/desired/hierarchy.py",
    "RoleConfig.labels": "agent/desired/hierarchy.py",
    "RoleConfig.replicas": "agent/desired/hierarchy.py",
    "RoleConfig.rndc_key": "agent/desired/hierarchy.py",
    "RoleConfig.rndc_secret_ref": "agent/desired/hierarchy.py",
    "RoleConfig.service": "agent/desired/hierarchy.py",
    "RndcKeyConfig.algorithm": "agent/desired/hierarchy.py",
    "RndcKeyConfig.auto_rotate": "agent/plan/rotation.py",
    "RndcKeyConfig.rotate_after": "agent/plan/rotation.py",
    "RndcKeyConfig.secret": "agent/desired/hierarchy.py",
    "RndcKeyConfig.secret_ref": "agent/desired/hierarchy.py",
    "InlineSecret.metadata": "agent/desired/hierarchy.py",
    "InlineSecret.type": "agent/desired/hierarchy.py",
    "SecretMetadata.name": "agent/desired/hierarchy.py",
    "SecretMetadata.labels": "agent/desired/hierarchy.py",
    "SecretMetadata.annotations": "agent/desired/hierarchy.py",
    "ServiceConfig.annotations": "agent/desired/hierarchy.py",
    "ServiceConfig.spec": "agent/desired/hierarchy.py",
    "ZoneSource.selector": "agent/desired/placement.py",
    "SelectorSource.selector": "agent/desired/placement.py",
    "LabelSelector.match_labels": "agent/model/base.py",
    "LabelSelector.match_expressions": "agent/model/base.py",
    "LabelSelectorRequirement.key": "agent/model/base.py",
    "LabelSelectorRequirement.operator": "agent/model/base.py",
    "LabelSelectorRequirement.values": "agent/model/base.py",
    "Bind9InstanceSpec.bindcar_config": "agent/desired/workloads.py",
    "Bind9InstanceSpec.cluster_ref": "agent/desired/hierarchy.py",
    "Bind9InstanceSpec.config": "agent/desired/hierarchy.py",
    "Bind9InstanceSpec.config_map_refs": "agent/desired/hierarchy.py",
    "Bind9InstanceSpec.image": "agent/desired/hierarchy.py",
    "Bind9InstanceSpec.replicas": "agent/desired/workloads.py",
    "Bind9InstanceSpec.resources": "agent/desired/hierarchy.py",
    "Bind9InstanceSpec.rndc_key": "agent/desired/hierarchy.py",
    "Bind9InstanceSpec.rndc_secret_ref": "agent/desired/hierarchy.py",
    "Bind9InstanceSpec.role": "agent/desired/placement.py",
    "Bind9InstanceSpec.storage": "agent/desired/workloads.py",
    "Bind9InstanceSpec.version": "agent/desired/hierarchy.py",
    "Bind9InstanceSpec.volume_mounts": "agent/desired/hierarchy.py",
    "Bind9InstanceSpec.volumes": "agent/desired/hierarchy.py",
    "Bind9InstanceSpec.zones_from": "agent/desired/hierarchy.py",
    "StorageConfig.empty_dir": "agent/desired/workloads.py",
    "StorageConfig.persistent_volume_claim": "agent/desired/storage.py",
    "StorageConfig.storage_type": "agent/desired/storage.py",
    "PersistentVolumeClaimConfig.claim_name": "agent/desired/storage.py",
    "PersistentVolumeClaimConfig.size": "agent/desired/storage.py",
    "PersistentVolumeClaimConfig.storage_class_name": "agent/desired/storage.py",
    "PersistentVolumeClaimConfig.access_modes": "agent/desired/storage.py",
    "DNSZoneSpec.bind9_instances_from": "agent/desired/placement.py",
    "DNSZoneSpec.cluster_ref": "agent/desired/placement.py",
    "DNSZoneSpec.cluster_provider_ref": "agent/desired/placement.py",
    "DNSZoneSpec.dnssec_policy": "agent/desired/zonebody.py",
    "DNSZoneSpec.name_server_ips": "agent/desired/nameservers.py",
    "DNSZoneSpec.name_servers": "agent/desired/nameservers.py",
    "DNSZoneSpec.records_from": "agent/desired/assignment.py",
    "DNSZoneSpec.soa_record": "agent/desired/zonebody.py",
    "DNSZoneSpec.ttl": "agent/desired/placement.py",
    "DNSZoneSpec.zone_name": "agent/desired/placement.py",
    "NameServer.hostname": "agent/desired/nameservers.py",
    "NameServer.ipv4_address": "agent/desired/nameservers.py",
    "NameServer.ipv6_address": "agent/desired/nameservers.py",
    "SoaRecord.admin_email": "agent/desired/zonebody.py",
    "SoaRecord.expire": "agent/desired/zonebody.py",
    "SoaRecord.negative_ttl": "agent/desired/zonebody.py",
    "SoaRecord.primary_ns": "agent/desired/zonebody.py",
    "SoaRecord.refresh": "agent/desired/zonebody.py",
    "SoaRecord.retry": "agent/desired/zonebody.py",
    "SoaRecord.serial": "agent/desired/zonebody.py",
    "RecordSpec.name": "agent/desired/zonerrsets.py",
    "RecordSpec.ttl": "agent/desired/zonerrsets.py",
    "RecordSpec.zone": "agent/desired/assignment.py",
    "ARecordSpec.ipv4_addresses": "agent/model/recordtypes/a.py",
    "AAAARecordSpec.ipv6_addresses": "agent/model/recordtypes/aaaa.py",
    "CNAMERecordSpec.target": "agent/model/recordtypes/cname.py",
    "MXRecordSpec.mail_server": "agent/model/recordtypes/mx.py",
    "MXRecordSpec.priority": "agent/model/recordtypes/mx.py",
    "TXTRecordSpec.text": "agent/model/recordtypes/txt.py",
    "NSRecordSpec.nameserver": "agent/model/recordtypes/ns.py",
    "SRVRecordSpec.port": "agent/model/recordtypes/srv.py",
    "SRVRecordSpec.priority": "agent/model/recordtypes/srv.py",
    "SRVRecordSpec.target": "agent/model/recordtypes/srv.py",
    "SRVRecordSpec.weight": "agent/model/recordtypes/srv.py",
    "CAARecordSpec.flags": "agent/model/recordtypes/caa.py",
    "CAARecordSpec.tag": "agent/model/recordtypes/caa.py",
    "CAARecordSpec.value": "agent/model/recordtypes/caa.py",
}

def _models(annotation: Any) -> list[type[pydantic.BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models(arg)]


def _declaring(model: type[pydantic.BaseModel], field: str) -> str:
    owner = next(c for c in reversed(model.__mro__) if field in getattr(c, "__annotations__", {}))
    return f"{owner.__name__}.{field}"


def _spec_fields() -> list[tuple[str, str, str]]:
    """(kind, dotted camelCase path, declaring Model.field) of every spec field of every kind."""
    out: list[tuple[str, str, str]] = []

    def walk(kind: str, model: type[pydantic.BaseModel], path: str, seen: frozenset[type]) -> None:
        for name, info in model.model_fields.items():
            here = f"{path}.{info.alias or name}"
            out.append((kind, here, _declaring(model, name)))
            for sub in _models(info.annotation):
                if sub not in seen:
                    walk(kind, sub, here, seen | {sub})

    for kind in kinds.KINDS.values():
        (spec,) = _models(kind.model.model_fields["spec"].annotation)
        walk(kind.name, spec, "spec", frozenset({spec}))
    return out


def _inert(kind: str, path: str) -> bool:
    for entry in inert.INERT:
        listed = entry.path.replace(".*", "")
        if kind in entry.kinds and (path == listed or path.startswith(listed + ".")):
            return True
    return False


def test_every_model_field_is_acted_on_or_listed_as_without_effect() -> None:
    sources = {rel: (ROOT / rel).read_text() for rel in set(ACTED.values())}
    unaccounted, unread = [], []
    for kind, path, field in _spec_fields():
        if _inert(kind, path):
            continue
        module = ACTED.get(field)
        if module is None:
            unaccounted.append(f"{kind} {path} ({field})")
            continue
        attr, alias = field.split(".")[1], path.rsplit(".", 1)[1]
        if not re.search(rf"\.{attr}\b|[\"']{alias}[\"']", sources[module]):
            unread.append(f"{kind} {path}: {module} does not read .{attr}")
    assert unaccounted == [], ("fields neither acted on (ACTED) nor listed in agent/load/inert.py: "
                               + "; ".join(unaccounted))
    assert unread == []


def test_every_listed_field_exists_and_is_documented() -> None:
    paths = {(kind, path) for kind, path, _ in _spec_fields()}
    doc = (ROOT / "docs" / "bindy-fields.md").read_text()
    for entry in inert.INERT:
        for kind in entry.kinds:
            assert (kind, entry.path.replace(".*", "")) in paths, f"{kind} {entry.path} is not a field"
        assert f"`{entry.path}`" in doc, f"docs/bindy-fields.md does not list {entry.path}"
