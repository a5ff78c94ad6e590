"""A Bind9Instance -> the Kubernetes objects that run it (pure).

ServiceAccount, RNDC key Secret, ConfigMap with named.conf, Deployment (bind9 + the zone HTTP API
sidecar) and Service.

Images and volume layout follow Bindy's; the pods meet Pod Security "restricted" (named runs as
ISC's `bind` user on unprivileged ports, which the Service maps to 53). The RNDC secret value is
never known here: the Secret carries `SECRET_PLACEHOLDER`, which the Kubernetes reconciler
replaces with a generated key on first creation and never shows in a plan.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING, Any

from agent.desired import storage as storage_claim
from agent.model.names import CLUSTER_LABEL, MANAGED_BY, ROLE_LABEL, ZONES_LOADED_CONDITION

if TYPE_CHECKING:
    from agent.model.infra import (
        Bind9Config,
        Bind9InstanceSpec,
        BindcarConfig,
        DnssecSigning,
        RndcSecretRef,
    )

BIND9_IMAGE = "internetsystemsconsortium/bind9"
BINDCAR_IMAGE = "ghcr.io/firestoned/bindcar:v0.7.2"  # Bindy's DEFAULT_BINDCAR_IMAGE
PULL_POLICY = "IfNotPresent"  # Bindy's, for both containers, when no imagePullPolicy is set
# bindcar (0.7, TokenReview mode) lets in only the callers it names: the agent's ServiceAccount as
# deploy/ installs it (Bindy names its operator's), with tokens bound to this audience.
AGENT_ACCOUNT = "system:serviceaccount:bindy-agent:bindy-agent"
API_AUDIENCE = "bindcar"
# Where the sidecar's own token is mounted (for its TokenReview calls): the path an automounted
# token has, in that container only; the bind9 container gets none.
TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# configMapRefs (Bindy's paths): a user's options file replaces the generated options block, a
# zones file is included after it.
OPTIONS_FILE = "/etc/bind/named.conf.options"
ZONES_FILE = "/etc/bind/named.conf.zones"
DEFAULT_VERSION = "9.18"
DNS_PORT = 53  # what the Service offers
# Where named listens in the pod. It runs as a non-root user with every capability dropped, and a
# capability added to a non-root container never reaches the process's effective set (Kubernetes
# sets no ambient capabilities; ISC's named binary carries no file capabilities), so it cannot bind
# below 1024: the Service maps 53 to these unprivileged ports.
DNS_CONTAINER_PORT = 5353
RNDC_PORT = 8953  # on 127.0.0.1 only, for the sidecar
API_PORT = 8080
BIND_UID = 53  # the `bind` user and group of ISC's image (internetsystemsconsortium/bind9)
SERVICE_ACCOUNT = "bind9"
SECRET_PLACEHOLDER = "<secret>"
# an old pod's named answers this long after it leaves its Service (kube-proxy catches up)
DRAIN_SECONDS = 5
ROLLOUT: dict[str, Any] = {"type": "RollingUpdate",
                           "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
ZONES_DIR = "/var/cache/bind"
RUN_DIR = "/run/named"
# Pod Security "restricted", met by the generated pods themselves (agent/desired/podsecurity.py).
POD_SECURITY: dict[str, Any] = {"runAsNonRoot": True, "runAsUser": BIND_UID, "runAsGroup": BIND_UID,
                                "fsGroup": BIND_UID, "seccompProfile": {"type": "RuntimeDefault"}}
CONTAINER_SECURITY: dict[str, Any] = {"allowPrivilegeEscalation": False,
                                      "readOnlyRootFilesystem": True,
                                      "capabilities": {"drop": ["ALL"]}}
# Defaults in the API server's canonical form (so a live object never differs from them); a CR's
# `resources` (bind9) or `bindcarConfig.resources` replaces them whole.
BIND9_RESOURCES: dict[str, Any] = {"requests": {"cpu": "100m", "memory": "128Mi"},
                                   "limits": {"cpu": "1", "memory": "512Mi"}}
BINDCAR_RESOURCES: dict[str, Any] = {"requests": {"cpu": "50m", "memory": "32Mi"},
                                     "limits": {"cpu": "250m", "memory": "128Mi"}}


@dataclasses.dataclass(frozen=True)
class InstanceSettings:
    """What an instance inherits from its cluster, already merged by desired.py."""

    image: str
    version: str
    config: Bind9Config
    acls: dict[str, list[str]]
    rndc_ref: RndcSecretRef | None
    service_spec: dict[str, Any]
    service_annotations: dict[str, str]
    volumes: list[dict[str, Any]]
    volume_mounts: list[dict[str, Any]]
    named_conf_ref: str | None
    resources: dict[str, Any] | None = None  # the bind9 container's; None: the defaults
    # from the image block in effect: the instance's, else its cluster's (a provider's), whole as in
    # Bindy
    image_pull_policy: str | None = None
    image_pull_secrets: list[str] | None = None
    named_conf_options_ref: str | None = None  # configMapRefs.namedConfOptions
    named_conf_zones_ref: str | None = None  # configMapRefs.namedConfZones
    bindcar_service_spec: dict[str, Any] | None = None  # bindcarConfig.serviceSpec
    signing: DnssecSigning | None = None  # dnssec.signing in effect (signing_of); None: not enabled


_copy = copy.deepcopy  # the defaults above are never handed out themselves


def rndc_key_name(instance: str) -> str:
    return f"{instance}-rndc-key"


def labels(instance: str, cluster: str, role: str) -> dict[str, str]:
    return {
        **MANAGED_BY,
        "app.kubernetes.io/name": "bind9",
        "app.kubernetes.io/instance": instance,
        CLUSTER_LABEL: cluster,
        ROLE_LABEL: role,
    }


def _meta(name: str, namespace: str, lbl: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": dict(lbl)}


def service_account(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "automountServiceAccountToken": False,
            "metadata": _meta(SERVICE_ACCOUNT, namespace,
                              {**MANAGED_BY, "app.kubernetes.io/name": "bind9"})}


# the Secret's key block for named.conf's include; written from the secret with it
KEY_FILE = "rndc.key"


def rndc_secret(name: str, namespace: str, lbl: dict[str, str], key_name: str,
                algorithm: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": _meta(name, namespace, lbl),
            "stringData": {"key-name": key_name, "algorithm": algorithm,
                           "secret": SECRET_PLACEHOLDER, KEY_FILE: SECRET_PLACEHOLDER}}


def key_block(key_name: str, algorithm: str, secret: str) -> str:
    """The `key` statement named.conf includes (from /etc/bind/keys/rndc.key)."""
    return f'key "{key_name}" {{\n    algorithm {algorithm};\n    secret "{secret}";\n}};\n'


def config_map(name: str, namespace: str, lbl: dict[str, str], conf: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(name, namespace, lbl),
            "data": {"named.conf": conf}}


def _volumes(instance: str, spec: Bind9InstanceSpec, settings: InstanceSettings, secret_name: str,
             config_name: str) -> list[dict[str, Any]]:
    storage = spec.storage
    claimed = storage_claim.claim_name(instance, spec)
    if claimed is not None:
        zones_volume: dict[str, Any] = {"name": "zones",
                                        "persistentVolumeClaim": {"claimName": claimed}}
    else:
        zones_volume = {"name": "zones",
                        "emptyDir": dict(storage.empty_dir or {}) if storage else {}}
    return [
        {"name": "config", "configMap": {"name": config_name}},
        {"name": "rndc-key", "secret": {"secretName": secret_name}},
        zones_volume,
        # named's pid file and session key: the root filesystem is read-only
        {"name": "run", "emptyDir": {}},
        {"name": "tmp", "emptyDir": {}},
        # the sidecar's own ServiceAccount token, for bindcar's TokenReview of the agent's token:
        # what automounting gives, but in that container only
        {"name": "api-token", "projected": {"sources": [
            {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
            {"configMap": {"name": "kube-root-ca.crt",
                           "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}},
        *({"name": name, "configMap": {"name": ref}} for name, ref in
          (("named-conf-options", settings.named_conf_options_ref),
           ("named-conf-zones", settings.named_conf_zones_ref)) if ref),
        *settings.volumes,
    ]


def _bind9(spec: Bind9InstanceSpec, settings: InstanceSettings) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "bind9",
        "image": settings.image,
        "args": ["-g", "-c", "/etc/bind/named.conf"],
        "ports": [
            {"name": "dns-udp", "containerPort": DNS_CONTAINER_PORT, "protocol": "UDP"},
            {"name": "dns-tcp", "containerPort": DNS_CONTAINER_PORT, "protocol": "TCP"},
            {"name": "rndc", "containerPort": RNDC_PORT, "protocol": "TCP"},
        ],
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/bind/named.conf", "subPath": "named.conf"},
            {"name": "rndc-key", "mountPath": "/etc/bind/keys", "readOnly": True},
            {"name": "zones", "mountPath": ZONES_DIR},
            {"name": "run", "mountPath": RUN_DIR},
            *({"name": name, "mountPath": path, "subPath": path.rsplit("/", 1)[1], "readOnly": True}
              for name, path, ref in (("named-conf-options", OPTIONS_FILE,
                                       settings.named_conf_options_ref),
                                      ("named-conf-zones", ZONES_FILE,
                                       settings.named_conf_zones_ref)) if ref),
            *settings.volume_mounts,
        ],
        "readinessProbe": {"tcpSocket": {"port": DNS_CONTAINER_PORT}, "periodSeconds": 10},
        "resources": dict(settings.resources) if settings.resources is not None
        else _copy(BIND9_RESOURCES), "securityContext": _copy(CONTAINER_SECURITY),
        "imagePullPolicy": settings.image_pull_policy or PULL_POLICY,
        "lifecycle": {"preStop": {"exec": {"command": ["sleep", str(DRAIN_SECONDS)]}}},
    }
    return container


def _bindcar(bindcar: BindcarConfig | None, api_port: int, secret_name: str,
             key_ref: RndcSecretRef | None, inline_algorithm: str | None = None) -> dict[str, Any]:
    # Bindy's sidecar environment (bindcar 0.7), with the agent's ServiceAccount as the allowed
    # caller; RNDC_SERVER because the agent's named.conf has its controls on RNDC_PORT (Bindy mounts
    # rndc.conf)
    algorithm: dict[str, Any] = (
        {"value": key_ref.algorithm} if key_ref else {"value": inline_algorithm} if inline_algorithm
        # the generated Secret's
        else {"valueFrom": {"secretKeyRef": {"name": secret_name, "key": "algorithm"}}})
    env = [
        {"name": "BIND_ZONE_DIR", "value": ZONES_DIR},
        {"name": "RNDC_SERVER", "value": f"127.0.0.1:{RNDC_PORT}"},
        {"name": "API_PORT", "value": str(api_port)},
        {"name": "RUST_LOG",
         "value": bindcar.log_level if bindcar and bindcar.log_level else "info"},
        {"name": "BIND_ALLOWED_SERVICE_ACCOUNTS", "value": AGENT_ACCOUNT},
        {"name": "BIND_TOKEN_AUDIENCES", "value": API_AUDIENCE},
        {"name": "TMPDIR", "value": "/tmp"},
        {"name": "RNDC_SECRET", "valueFrom": {"secretKeyRef": {
            "name": secret_name, "key": key_ref.secret_key if key_ref else "secret"}}},
        {"name": "RNDC_ALGORITHM", **algorithm},
        {"name": "NSUPDATE_PORT", "value": str(DNS_CONTAINER_PORT)},
        *((bindcar.env_vars or []) if bindcar else []),
    ]
    container: dict[str, Any] = {
        "name": "bindcar",
        "image": (bindcar.image if bindcar and bindcar.image else BINDCAR_IMAGE),
        "ports": [{"name": "http", "containerPort": api_port, "protocol": "TCP"}],
        "env": env,
        "volumeMounts": [{"name": "zones", "mountPath": ZONES_DIR},
                         {"name": "tmp", "mountPath": "/tmp"},
                         {"name": "api-token", "mountPath": TOKEN_DIR, "readOnly": True}],
        "resources": dict(bindcar.resources) if bindcar and bindcar.resources is not None
        else _copy(BINDCAR_RESOURCES),
        "securityContext": _copy(CONTAINER_SECURITY),
    }
    policy = bindcar.image_pull_policy if bindcar else None
    container["imagePullPolicy"] = policy or PULL_POLICY
    return container


def deployment(instance: str, namespace: str, lbl: dict[str, str], spec: Bind9InstanceSpec,
               settings: InstanceSettings, secret_name: str, config_name: str) -> dict[str, Any]:
    """bind9 + the zone API sidecar, meeting Pod Security "restricted": non-root, no privilege
    escalation, every capability dropped, RuntimeDefault seccomp, read-only root filesystems,
    no automounted ServiceAccount token: only the sidecar gets one, for bindcar's TokenReview of the
    agent's calls; bind9 never talks to the Kubernetes API."""
    bindcar = spec.bindcar_config or settings.config.bindcar_config
    api_port = (bindcar.port if bindcar and bindcar.port else None) or API_PORT
    selector = {"app.kubernetes.io/instance": instance, "app.kubernetes.io/name": "bind9"}
    pod_spec: dict[str, Any] = {
        "serviceAccountName": SERVICE_ACCOUNT,
        "automountServiceAccountToken": False,
        "securityContext": _copy(POD_SECURITY),
        "containers": [_bind9(spec, settings),
                       _bindcar(bindcar, api_port, secret_name, settings.rndc_ref,
                                                        spec.rndc_key.algorithm if spec.rndc_key and
                                                        spec.rndc_key.secret else None)],
        "volumes": _volumes(instance, spec, settings, secret_name, config_name),
        # Ready with its zones: podready/condition.py
        "readinessGates": [{"conditionType": ZONES_LOADED_CONDITION}],
    }
    if settings.image_pull_secrets:
        pod_spec["imagePullSecrets"] = [{"name": s} for s in settings.image_pull_secrets]
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(instance, namespace, lbl),
        "spec": {
            "replicas": spec.replicas if spec.replicas is not None else 1,
            "selector": {"matchLabels": selector},
            "strategy": _copy(ROLLOUT),  # a new pod first; an old one stops once a new one is Ready
            "template": {"metadata": {"labels": dict(lbl)}, "spec": pod_spec},
        },
    }


def _merge_service_spec(spec: dict[str, Any], custom: dict[str, Any]) -> None:
    """Bindy's merge_service_spec: each field set in `custom` replaces the default, ports by name
    (a new name is added), the selector never."""
    for field, value in custom.items():
        if field == "selector":
            continue
        if field == "ports" and isinstance(value, list):
            ports = spec["ports"]
            for port in value:
                at = next((i for i, p in enumerate(ports) if p.get("name") == port.get("name")),
                          None)
                if at is None:
                    ports.append(copy.deepcopy(port))
                else:
                    ports[at] = copy.deepcopy(port)
        else:
            spec[field] = copy.deepcopy(value)


def service(instance: str, namespace: str, lbl: dict[str, str], settings: InstanceSettings,
            api_port: int) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "type": "ClusterIP",
        "selector": {"app.kubernetes.io/instance": instance, "app.kubernetes.io/name": "bind9"},
        "ports": [
            {"name": "dns-udp", "port": DNS_PORT, "targetPort": DNS_CONTAINER_PORT,
             "protocol": "UDP"},
            {"name": "dns-tcp", "port": DNS_PORT, "targetPort": DNS_CONTAINER_PORT,
             "protocol": "TCP"},
            {"name": "http", "port": API_PORT, "targetPort": api_port, "protocol": "TCP"},
        ],
    }
    # as Bindy: the sidecar's bindcarConfig.serviceSpec first, then the role's service.spec
    _merge_service_spec(spec, settings.bindcar_service_spec or {})
    _merge_service_spec(spec, settings.service_spec)
    meta = _meta(instance, namespace, lbl)
    if settings.service_annotations:
        meta["annotations"] = dict(settings.service_annotations)
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}
