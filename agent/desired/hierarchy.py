"""Validated CRs -> the desired state of everything below them (pure).

    ClusterBind9Provider ─► Bind9Cluster per target namespace (default dns-system)
    Bind9Cluster         ─► Bind9Instance <cluster>-primary-<i> / <cluster>-secondary-<i>
    Bind9Instance        ─► ServiceAccount (shared), Secret <instance>-rndc-key, ConfigMap,
                            Deployment, Service
    DNSZone              ─► the zone on its selected instances        (placement.py)
    records              ─► RRsets in their zone                      (assignment.py, zonerrsets.py, rrsets.py)

Objects declared in Git win over generated ones with the same kind/namespace/name. Every
semantic problem is collected, never raised.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agent.desired import apinames, dnssecpolicy, hints, placement, rrsets, storage, workloads, zonekeys, zoneset
from agent.desired.memo import NO_MEMO, Memo
from agent.desired.namedconf import named_conf, signing_of, with_config_refs
from agent.load.loaded import Loaded
from agent.load.manifest import Manifest
from agent.model import kinds, names
from agent.model.joined import Joined
from agent.model.key import ObjectKey
from agent.model.problems import Origin, Problem, Severity

if TYPE_CHECKING:  # imported with the first infrastructure object: `validate` of zones and records skips them
    from agent.model.infra import Bind9InstanceSpec, ClusterCommonSpec, RndcSecretRef, ZoneSource

INFRA_KINDS = ("ClusterBind9Provider", "Bind9Cluster", "Bind9Instance")  # the CRs objects are generated from

# Apply order (parents before children); prune runs it backwards.
TIER_PROVIDER, TIER_CLUSTER, TIER_INSTANCE, TIER_CHILD, TIER_ZONE, TIER_RECORD = range(6)
# Within an instance's children, what a Deployment uses comes before it.
CHILD_ORDER = {"ServiceAccount": 0, "Secret": 1, "ConfigMap": 2, "PersistentVolumeClaim": 3, "Service": 3,
               "Deployment": 4}
# A CR written in Git as it is applied (KubeObject.body; the JSON plan writes it with these: plan/render_json.py).
CR_DUMP: dict[str, Any] = {"by_alias": True, "exclude_unset": True, "exclude_none": True, "exclude": {"status"}}


@dataclasses.dataclass(slots=True)
class KubeObject:
    """An object to make true in the cluster. A CR written in Git keeps its loaded document, not a
    body: the body is made again when asked (a record's costs 0.7 KB, 68 MB at 100,000 records),
    and a run asks for it only for what it creates or updates, or when the cluster was read in full."""

    key: ObjectKey
    content: dict[str, Any] | Loaded  # the body, or the Git document it is made from
    tier: int
    owner: ObjectKey | None = None
    origin: Origin | None = None  # set for objects written in Git
    source: ObjectKey | None = None  # the Git object it was generated from
    _hash: str = dataclasses.field(default="", init=False, repr=False, compare=False)

    @property
    def body(self) -> dict[str, Any]:
        """The object as it is applied, before the agent's labels and annotations (a CR written in
        Git: a new dict on every call)."""
        content = self.content
        return content if type(content) is dict else _cr_body(content)  # type: ignore[arg-type]

    def body_copy(self) -> dict[str, Any]:
        """The body as a dict the caller may change: a Git CR's is made anew anyway, a generated
        object's is copied."""
        content = self.content
        return json.loads(json.dumps(content)) if type(content) is dict else _cr_body(content)  # type: ignore[arg-type]

    @property
    def hash(self) -> str:
        """A fingerprint of the body (the applied-hash annotation), computed once per object."""
        if not self._hash:
            text = json.dumps(self.body, sort_keys=True, separators=(",", ":"))
            self._hash = hashlib.sha256(text.encode()).hexdigest()[:16]
        return self._hash


@dataclasses.dataclass
class Cluster:
    key: ObjectKey
    spec: ClusterCommonSpec
    provider: str | None
    origin: Origin | None
    source: ObjectKey


@dataclasses.dataclass
class Instance:
    key: ObjectKey
    cluster: str
    role: str
    labels: dict[str, str]
    spec: Bind9InstanceSpec
    zones_from: list[ZoneSource]
    provider: str | None
    origin: Origin | None
    source: ObjectKey


@dataclasses.dataclass
class Desired:
    objects: Sequence[KubeObject]  # in apply order: the infrastructure first, then DNSZones, then records
    instances: dict[ObjectKey, Instance]
    zones: list[placement.Zone]
    problems: list[Problem]
    infra: int = 0  # how many of `objects` come first: providers, clusters, instances and what they make

    @property
    def infrastructure(self) -> list[KubeObject]:
        """The objects before the DNSZone and record CRs (a few, where the rest may be 100,000)."""
        return list(itertools.islice(self.objects, self.infra))

    def object(self, kind: str, namespace: str | None, name: str) -> KubeObject | None:
        key = ObjectKey(kind, namespace, name)
        return next((o for o in self.objects if o.key == key), None)


class _Problems:
    def __init__(self) -> None:
        self.items: list[Problem] = []

    def add(self, origin: Origin | None, key: ObjectKey | None, path: str, message: str,
            severity: Severity = Severity.ERROR) -> None:
        self.items.append(Problem(origin, str(key) if key else "", path, message, severity))


def _cr_body(obj: Loaded) -> dict[str, Any]:
    return obj.model.model_dump(**CR_DUMP, mode="json")


def _cr(kind: str, namespace: str | None, name: str, labels: dict[str, str], spec: dict[str, Any],
        owner: ObjectKey) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": kinds.API_VERSION, "kind": kind, "metadata": meta, "spec": spec}


def _clusters(manifest: Manifest, out: list[KubeObject], problems: _Problems) -> dict[ObjectKey, Cluster]:
    clusters: dict[ObjectKey, Cluster] = {}
    explicit = {o.key: o for o in manifest.of_kind("Bind9Cluster")}
    for obj in manifest.of_kind("ClusterBind9Provider"):
        if obj.key.kind == "ClusterBind9Provider":
            from agent.model.infra import ClusterBind9Provider

            assert isinstance(obj.model, ClusterBind9Provider)
            out.append(KubeObject(obj.key, obj, TIER_PROVIDER, origin=obj.origin))
            spec = obj.model.spec
            targets = spec.namespaces or [spec.namespace or names.DEFAULT_PROVIDER_NAMESPACE]
            common = spec.model_dump(by_alias=True, exclude_unset=True, exclude_none=True, mode="json")
            common.pop("namespace", None)
            common.pop("namespaces", None)
            for ns in targets:
                key = ObjectKey("Bind9Cluster", ns, obj.key.name)
                if key in explicit:
                    problems.add(explicit[key].origin, key, "", f"declared in Git; replaces the "
                                 f"cluster generated by {obj.key}", Severity.WARNING)
                    continue
                labels = {**names.MANAGED_BY, names.PARENT_KIND_LABEL: "ClusterBind9Provider",
                          names.PROVIDER_LABEL: obj.key.name}
                out.append(KubeObject(key, _cr("Bind9Cluster", ns, obj.key.name, labels, common, obj.key),
                                      TIER_CLUSTER, owner=obj.key, source=obj.key))
                clusters[key] = Cluster(key, spec, obj.key.name, None, obj.key)
    for key, obj in explicit.items():
        out.append(KubeObject(key, obj, TIER_CLUSTER, origin=obj.origin))
        clusters[key] = Cluster(key, obj.model.spec, None, obj.origin, key)  # type: ignore[attr-defined]
    return clusters


_ROLE_KEY_FIELDS = {"algorithm": "algorithm", "auto_rotate": "autoRotate", "rotate_after": "rotateAfter"}


def _role_ref(spec: ClusterCommonSpec, role: str) -> RndcSecretRef | None:
    cfg = spec.primary if role == "primary" else spec.secondary
    if cfg and cfg.rndc_secret_ref:
        return cfg.rndc_secret_ref
    if cfg and cfg.rndc_key and cfg.rndc_key.secret_ref:
        return cfg.rndc_key.secret_ref
    return spec.global_.rndc_secret_ref if spec.global_ else None


def _instances(manifest: Manifest, clusters: dict[ObjectKey, Cluster], out: list[KubeObject],
               problems: _Problems) -> dict[ObjectKey, Instance]:
    instances: dict[ObjectKey, Instance] = {}
    explicit = {o.key: o for o in manifest.of_kind("Bind9Instance")}
    for ckey, cluster in clusters.items():
        for role in ("primary", "secondary"):
            cfg = cluster.spec.primary if role == "primary" else cluster.spec.secondary
            count = cfg.replicas if cfg and cfg.replicas is not None else 1
            for i in range(count):
                name = f"{ckey.name}-{role}-{i}"
                key = ObjectKey("Bind9Instance", ckey.namespace, name)
                if key in explicit:
                    continue
                lbl = {**(cfg.labels if cfg and cfg.labels else {}), **names.MANAGED_BY,
                       names.PARENT_KIND_LABEL: "Bind9Cluster", names.CLUSTER_LABEL: ckey.name, names.ROLE_LABEL: role}
                spec_body: dict[str, Any] = {"clusterRef": ckey.name, "role": role, "replicas": 1}
                ref = _role_ref(cluster.spec, role)
                if ref:
                    spec_body["rndcSecretRef"] = ref.dump()
                elif cfg and cfg.rndc_key and cfg.rndc_key.model_fields_set & _ROLE_KEY_FIELDS.keys():
                    # the role's algorithm and rotation, as Bindy resolves them for its instances
                    spec_body["rndcKey"] = {alias: getattr(cfg.rndc_key, f) for f, alias in _ROLE_KEY_FIELDS.items()
                                            if f in cfg.rndc_key.model_fields_set}
                if cluster.spec.zones_from:
                    spec_body["zonesFrom"] = [z.dump() for z in cluster.spec.zones_from]
                from agent.model.infra import Bind9InstanceSpec

                spec = Bind9InstanceSpec.model_validate(spec_body)
                out.append(KubeObject(key, _cr("Bind9Instance", key.namespace, name, lbl, spec_body, ckey),
                                      TIER_INSTANCE, owner=ckey, source=cluster.source))
                instances[key] = Instance(key, ckey.name, role, lbl, spec, list(spec.zones_from or []),
                                          cluster.provider, None, cluster.source)
    for key, obj in explicit.items():
        from agent.model.infra import Bind9Instance

        assert isinstance(obj.model, Bind9Instance)
        spec = obj.model.spec
        parent = clusters.get(ObjectKey("Bind9Cluster", key.namespace, spec.cluster_ref))
        if parent is None:
            problems.add(obj.origin_at("spec.clusterRef"), key, "spec.clusterRef",
                         hints.no_cluster(spec.cluster_ref, clusters, key.namespace))
        out.append(KubeObject(key, obj, TIER_INSTANCE, origin=obj.origin))
        zones_from = list(spec.zones_from or (parent.spec.zones_from if parent else None) or [])
        instances[key] = Instance(key, spec.cluster_ref, spec.role, dict(obj.model.metadata.get("labels") or {}),
                                  spec, zones_from, parent.provider if parent else None, obj.origin, key)
    return instances


def _settings(inst: Instance, cluster: Cluster | None) -> workloads.InstanceSettings:
    from agent.model.infra import Bind9Config, ClusterCommonSpec

    cspec = cluster.spec if cluster else ClusterCommonSpec.model_validate({"version": None})
    spec = inst.spec
    merged = (cspec.global_ or Bind9Config()).model_dump(exclude_none=True)
    merged.update(spec.config.model_dump(exclude_none=True) if spec.config else {})
    role_cfg = cspec.primary if inst.role == "primary" else cspec.secondary
    if role_cfg and role_cfg.allow_transfer and not (spec.config and spec.config.allow_transfer):
        merged["allow_transfer"] = role_cfg.allow_transfer
    config = Bind9Config.model_validate(merged)
    version = spec.version or cspec.version or workloads.DEFAULT_VERSION
    image_cfg = spec.image or cspec.image  # as Bindy: the instance's image block, else its cluster's, whole
    image = (image_cfg and image_cfg.image) or f"{workloads.BIND9_IMAGE}:{version}"
    ref = spec.rndc_secret_ref or (spec.rndc_key.secret_ref if spec.rndc_key else None) \
        or config.rndc_secret_ref
    if cluster and not ref:
        ref = _role_ref(cspec, inst.role)
    service = role_cfg.service if role_cfg and role_cfg.service else None
    refs = spec.config_map_refs or cspec.config_map_refs
    bindcar = spec.bindcar_config or config.bindcar_config  # as the Deployment's sidecar
    return workloads.InstanceSettings(
        image=image, version=version, config=config, acls=dict(cspec.acls or {}), rndc_ref=ref,
        service_spec=dict(service.spec or {}) if service else {},
        service_annotations=dict(service.annotations or {}) if service else {},
        volumes=list(spec.volumes if spec.volumes is not None else cspec.volumes or []),
        volume_mounts=list(spec.volume_mounts if spec.volume_mounts is not None else cspec.volume_mounts or []),
        named_conf_ref=refs.named_conf if refs else None,
        resources=spec.resources if spec.resources is not None else cspec.resources,
        image_pull_policy=image_cfg.image_pull_policy if image_cfg else None,
        image_pull_secrets=list(image_cfg.image_pull_secrets or []) if image_cfg else None,
        named_conf_options_ref=refs.named_conf_options if refs else None,
        named_conf_zones_ref=refs.named_conf_zones if refs else None,
        bindcar_service_spec=dict(bindcar.service_spec) if bindcar and bindcar.service_spec else None,
        signing=signing_of(cspec.global_, spec.config),
    )


def _config_strings(settings: workloads.InstanceSettings) -> list[tuple[str, str]]:
    cfg = settings.config
    out: list[tuple[str, str]] = []
    for field in ("allow_query", "allow_transfer", "forwarders", "listen_on", "listen_on_v6"):
        for i, value in enumerate(getattr(cfg, field) or []):
            out.append((f"{field}[{i}]", value))
    for name, entries in settings.acls.items():
        out.append((f"acls.{name}", name))
        out += [(f"acls.{name}[{i}]", v) for i, v in enumerate(entries)]
    return out


def _claim(key: ObjectKey, inst: Instance) -> list[KubeObject]:
    """The instance's PersistentVolumeClaim to create, if any: with no owner, so that deleting the
    instance never garbage-collects its data."""
    lbl = workloads.labels(key.name, inst.cluster, inst.role)
    pvc = storage.claim(key.name, key.namespace or "", lbl, inst.spec)
    if pvc is None:
        return []
    return [KubeObject(ObjectKey("PersistentVolumeClaim", key.namespace, pvc["metadata"]["name"]), pvc, TIER_CHILD,
                       source=inst.source)]


def _children(instances: dict[ObjectKey, Instance], clusters: dict[ObjectKey, Cluster], objects: list[KubeObject],
              problems: _Problems) -> None:
    accounts: set[str] = set()
    for key, inst in sorted(instances.items(), key=lambda kv: str(kv[0])):
        ns, name = key.namespace or "", key.name
        cluster = clusters.get(ObjectKey("Bind9Cluster", ns, inst.cluster))
        settings = _settings(inst, cluster)
        for path, value in _config_strings(settings):
            if rrsets.CONFIG_UNSAFE.search(value) or rrsets.CONTROL.search(value):
                problems.add(inst.origin or (cluster.origin if cluster else None), inst.source, path,
                             f"{value!r} contains a quote, ';', '{{', '}}' or a control character, "
                             "which would break named.conf")
        lbl = workloads.labels(name, inst.cluster, inst.role)
        add = objects.append
        if ns not in accounts:
            accounts.add(ns)
            add(KubeObject(ObjectKey("ServiceAccount", ns, workloads.SERVICE_ACCOUNT),
                           workloads.service_account(ns), TIER_CHILD, source=inst.source))
        ref = settings.rndc_ref
        key_name = workloads.rndc_key_name(name)
        inline = inst.spec.rndc_key.secret if inst.spec.rndc_key else None
        if ref:
            secret_name = ref.name
        elif inline:
            secret_name = inline.metadata.name
            body = {"apiVersion": "v1", "kind": "Secret", "type": inline.type,
                    "metadata": {"name": secret_name, "namespace": ns,
                                 "labels": {**lbl, **(inline.metadata.labels or {})},
                                 **({"annotations": dict(inline.metadata.annotations)}
                                    if inline.metadata.annotations else {})},
                    "stringData": {k: workloads.SECRET_PLACEHOLDER for k in
                                   {**(inline.data or {}), **(inline.string_data or {})}}}
            add(KubeObject(ObjectKey("Secret", ns, secret_name), body, TIER_CHILD, key, source=inst.source))
        else:
            secret_name = key_name
            algorithm = inst.spec.rndc_key.algorithm if inst.spec.rndc_key else "hmac-sha256"
            add(KubeObject(ObjectKey("Secret", ns, secret_name),
                           workloads.rndc_secret(secret_name, ns, lbl, key_name, algorithm),
                           TIER_CHILD, key, source=inst.source))
        config_name = settings.named_conf_ref or f"{name}-config"
        if not settings.named_conf_ref:
            add(KubeObject(ObjectKey("ConfigMap", ns, config_name),
                           workloads.config_map(config_name, ns, lbl, with_config_refs(
                               named_conf(name, settings, key_name), settings)),
                           TIER_CHILD, key, source=inst.source))
        deploy = workloads.deployment(name, ns, lbl, inst.spec, settings, secret_name, config_name)
        api_port = deploy["spec"]["template"]["spec"]["containers"][1]["ports"][0]["containerPort"]
        add(KubeObject(ObjectKey("Deployment", ns, name), deploy, TIER_CHILD, key, source=inst.source))
        add(KubeObject(ObjectKey("Service", ns, name), workloads.service(name, ns, lbl, settings, api_port),
                       TIER_CHILD, key, source=inst.source))


def _git_objects(manifest: Manifest, memo: Memo) -> list[tuple[list[KubeObject], list[KubeObject]]]:
    """The DNSZone and the record CRs as written in Git, file by file; a file's are made again only
    when it changed."""
    record_kinds = {k.name for k in kinds.RECORD_KINDS}

    def make(found: Sequence[Loaded]) -> tuple[list[KubeObject], list[KubeObject]]:
        zones = [KubeObject(o.key, o, TIER_ZONE, origin=o.origin) for o in found if o.key.kind == "DNSZone"]
        records = [KubeObject(o.key, o, TIER_RECORD, origin=o.origin)
                   for o in found if o.key.kind in record_kinds]
        return zones, records

    files = [found for found in manifest.by_file or [manifest.objects] if found]
    return memo.each(("crs",), files, make, name=lambda found: found[0].origin.file)


def build(manifest: Manifest, memo: Memo = NO_MEMO) -> Desired:
    """Expands a loaded revision into everything the agent should make true. With a long-running
    agent's `memo`, what did not change since the last revision is reused, not recomputed."""
    problems = _Problems()
    objects: list[KubeObject] = []
    clusters = _clusters(manifest, objects, problems)
    instances = _instances(manifest, clusters, objects, problems)
    _children(instances, clusters, objects, problems)
    objects += [pvc for key, inst in sorted(instances.items(), key=lambda kv: str(kv[0])) for pvc in _claim(key, inst)]
    desired = Desired(objects, instances, [], problems.items)
    cluster_view = {k: placement.ClusterView(k, c.provider) for k, c in clusters.items()}
    inst_view = [placement.InstanceView(i.key, i.cluster, i.role, i.labels, i.zones_from)
                 for i in instances.values()]
    zones, zone_problems = zoneset.place(manifest, cluster_view, inst_view, memo)
    desired.zones = zones
    problems.items += zone_problems
    keys = zonekeys.attach(zones, instances, {o.key: o.body for o in objects if o.key.kind == "Deployment"},
                           zonekeys.signing_of(instances, clusters), manifest)  # one key set per signed zone
    problems.items += keys.problems
    objects += [KubeObject(key, body, TIER_CHILD, source=zone) for key, body, zone in keys.secrets]
    problems.items += dnssecpolicy.builtin_names(manifest)
    per_file = _git_objects(manifest, memo)
    # apply order: parents first, and what a Deployment uses before it; then the DNSZones and the
    # records, each in the files' order (read as one list, not copied into one)
    infra = sorted(objects, key=lambda o: (o.tier, CHILD_ORDER.get(o.key.kind, 0), o.key.kind, o.key.namespace or "",
                                           o.key.name))
    desired.objects = Joined([infra, *(zones for zones, _ in per_file), *(records for _, records in per_file)])
    desired.infra = len(infra)
    problems.items += apinames.check(((o.key, o.body, o.source) for o in infra if o.origin is None),
                                      {o.key: o for o in manifest.of_kind(*INFRA_KINDS)})
    memo.sweep()
    return desired
