"""The agent's workload and tenancy policy, checked on a whole revision before anything is applied
(pure).

Everything a repository can put into the pods and Services the agent generates (images, volumes,
volume mounts, sidecar env and port, resources, Service spec) is checked against the settings:
Pod Security "restricted" (or "baseline"), an image allowlist, the allowed Service types and
external IPs. Tenancy (namespaces, cross-namespace and Secret references) is in tenancy.py. Every
violation is an error at the file:line and field path that caused it. The decisions come from
`PolicySettings` (the agent's settings), never from the repository.
"""

from __future__ import annotations

import dataclasses
import decimal
import ipaddress
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from agent.desired import podsecurity, tenancy, workloads
from agent.desired.hierarchy import Desired
from agent.load.manifest import Manifest
from agent.model import names
from agent.model.problems import Problem

ANY = "*"
WORKLOAD_KINDS = frozenset({"Bind9Instance", "Bind9Cluster", "ClusterBind9Provider"})
BINDCAR_PATHS = ("spec.bindcarConfig", "spec.config.bindcarConfig", "spec.global.bindcarConfig")
SERVICE_PATHS = ("spec.primary.service.spec", "spec.secondary.service.spec")
LOAD_BALANCER_FIELDS = ("loadBalancerIP", "loadBalancerSourceRanges", "loadBalancerClass",
                        "allocateLoadBalancerNodePorts", "healthCheckNodePort")
AGENT_VOLUMES = frozenset({"config", "rndc-key", "zones", "run", "tmp", "api-token",
                           "named-conf-options", "named-conf-zones"})
AGENT_MOUNT_PATHS = frozenset({"/etc/bind/named.conf", "/etc/bind/keys", workloads.ZONES_DIR,
                               workloads.RUN_DIR, workloads.OPTIONS_FILE, workloads.ZONES_FILE,
                               workloads.TOKEN_DIR})
# The sidecar env the agent sets (a later entry of the same name would win), and bindcar's switch
# that turns off the zone API's authentication.
PROTECTED_ENV = frozenset({"BIND_ZONE_DIR", "RNDC_SERVER", "API_PORT", "RNDC_ALGORITHM",
                           "RNDC_SECRET", "DISABLE_AUTH", "BIND_ALLOWED_SERVICE_ACCOUNTS",
                           "BIND_TOKEN_AUDIENCES", "TMPDIR", "NSUPDATE_PORT"})
RESOURCE_NAMES = ("cpu", "memory", "ephemeral-storage")
SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")

_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
_HOST = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:]+\])(?::[0-9]+)?")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_DIGEST = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}")
_DOCKER_HUB = {"docker.io", "index.docker.io", "registry-1.docker.io"}
_QUANTITY = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)"
                       r"(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?)$")
_SUFFIX: dict[str, decimal.Decimal | int] = {
    "": 1, "m": decimal.Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
    "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}

SecretLabels = Mapping[tuple[str, str], Mapping[str, str] | None]
"""The live labels of referenced Secrets, by (namespace, name); None for a Secret that does not
exist."""


def repository(image: str) -> str | None:
    """`registry/path` of an image reference with Docker's defaults filled in; None if it is not
    one."""
    name, at, digest = image.partition("@")
    if at and not _DIGEST.fullmatch(digest):
        return None
    first, slash, rest = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        host, path = first.lower(), rest
        if not _HOST.fullmatch(host):
            return None
    else:
        host, path = "docker.io", name
    path, colon, tag = path.partition(":")
    components = all(_COMPONENT.fullmatch(c) for c in path.split("/"))
    if (colon and not _TAG.fullmatch(tag)) or not components:
        return None
    if host in _DOCKER_HUB:
        host, path = "docker.io", path if "/" in path else f"library/{path}"
    return f"{host}/{path}"


def _allowlist_entry(entry: str) -> str:
    """An allowlist entry as a `registry[/path]` prefix: "quay.io", "ghcr.io/org", "bitnami" (Docker
    Hub)."""
    first, slash, rest = entry.strip().rstrip("/").partition("/")
    if "." in first or ":" in first or first == "localhost":
        host = "docker.io" if first.lower() in _DOCKER_HUB else first.lower()
        return f"{host}/{rest}" if slash else host
    return f"docker.io/{entry.strip().rstrip('/')}" if entry.strip() != ANY else ANY


def _publisher(image: str) -> str:
    repo = repository(image)
    assert repo is not None, image
    return "/".join(repo.split("/")[:2])


# The publishers of the agent's own default images, not their whole registries: anyone can publish
# to docker.io or ghcr.io.
DEFAULT_REGISTRIES = (_publisher(workloads.BIND9_IMAGE), _publisher(workloads.BINDCAR_IMAGE))


@dataclasses.dataclass(frozen=True)
class PolicySettings:
    """What the agent lets a repository do; built from the agent's settings
    (agent/run/settings.py)."""

    pod_security: str = podsecurity.RESTRICTED
    allowed_registries: tuple[str, ...] = DEFAULT_REGISTRIES
    allowed_service_types: tuple[str, ...] = ("ClusterIP",)
    allowed_external_ips: tuple[str, ...] = ()
    allowed_namespaces: tuple[str, ...] = names.DEFAULT_ALLOWED_NAMESPACES
    allow_cross_namespace_refs: bool = False

    def __post_init__(self) -> None:
        """Refuses settings that cannot mean anything (ValueError naming the setting)."""
        if self.pod_security not in podsecurity.LEVELS:
            raise ValueError(f"pod_security: expected one of {', '.join(podsecurity.LEVELS)}, "
                             f"got {self.pod_security!r}")
        for kind in self.allowed_service_types:
            if kind not in SERVICE_TYPES:
                raise ValueError(f"allowed_service_types: {kind!r} is not a Service type "
                                 f"({', '.join(SERVICE_TYPES)})")
        for cidr in self.allowed_external_ips:
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError as exc:
                raise ValueError(f"allowed_external_ips: {cidr!r} is not an IP address or "
                                 "CIDR") from exc

    @classmethod
    def of(cls, **values: Iterable[str] | str | bool | None) -> PolicySettings:
        """From setting values as flags and settings files give them (lists or comma-separated
        strings); None keeps the default."""
        given: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            value = values.get(field.name)
            if value is None:
                continue
            if isinstance(value, bool) or field.name == "pod_security":
                given[field.name] = value
            else:
                items = value.split(",") if isinstance(value, str) else value
                given[field.name] = tuple(str(v).strip() for v in items if str(v).strip())
        return cls(**given)

    @property
    def default_namespace(self) -> str:
        """Where a namespaced CR that names no namespace goes: the first allowed namespace (Bindy's
        own, dns-system, when any is allowed)."""
        return next((ns for ns in self.allowed_namespaces if ns != ANY), names.DEFAULT_NAMESPACE)

    def namespace_allowed(self, namespace: str) -> bool:
        return ANY in self.allowed_namespaces or namespace in self.allowed_namespaces

    def kube_scope(self) -> list[str] | None:
        """The namespaces the agent lists what it manages in: where its Roles are (its own namespace
        holds only its state, read by name). None: any namespace, so cluster-wide lists (which need
        a ClusterRole)."""
        if ANY in self.allowed_namespaces:
            return None
        return sorted(self.allowed_namespaces)

    def image_allowed(self, repo: str) -> bool:
        entries = [_allowlist_entry(e) for e in self.allowed_registries]
        return ANY in entries or any(repo == e or repo.startswith(e + "/") for e in entries)


def check(manifest: Manifest, state: Desired, settings: PolicySettings, *,
          secret_labels: SecretLabels | None = None) -> list[Problem]:
    """Every violation of the policy in a revision. `secret_labels` are the live labels of the
    Secrets `tenancy.secrets_to_observe` names; None (no cluster) turns Secret references the
    agent cannot check into warnings."""
    out: list[Problem] = []
    for obj in manifest.of_kind(*sorted(WORKLOAD_KINDS)):
        body = obj.model.model_dump(by_alias=True, exclude_none=True, mode="json")
        out += [Problem(obj.origin_at(path), str(obj.key), path, message)
                for path, message in _workload(body, settings)]
    out += tenancy.check(manifest, state, settings, secret_labels)
    return out


def _at(body: dict[str, Any], path: str) -> Any:
    node: Any = body
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _workload(body: dict[str, Any], settings: PolicySettings) -> Iterator[tuple[str, str]]:
    image = _at(body, "spec.image.image")
    if image is not None:
        yield from _image(image, "spec.image.image", settings)
    for i, volume in enumerate(_at(body, "spec.volumes") or []):
        yield from _volume(volume, f"spec.volumes[{i}]", settings)
    for i, mount in enumerate(_at(body, "spec.volumeMounts") or []):
        yield from _mount(mount, f"spec.volumeMounts[{i}]")
    if _at(body, "spec.resources") is not None:
        yield from _resources(_at(body, "spec.resources"), "spec.resources")
    for where in BINDCAR_PATHS:
        if isinstance(_at(body, where), dict):
            yield from _bindcar(_at(body, where), where, settings)
    for where in SERVICE_PATHS:
        if isinstance(_at(body, where), dict):
            yield from _service(_at(body, where), where, settings)


def _image(image: str, where: str, settings: PolicySettings) -> Iterator[tuple[str, str]]:
    repo = repository(image)
    if repo is None:
        yield where, f"{image!r} is not a valid image reference"
    elif not settings.image_allowed(repo):
        yield where, (f"image {image} ({repo}) is not from an allowed registry "
                      f"({', '.join(settings.allowed_registries)}); the agent's setting "
                      "allowed_registries (--allowed-registries) decides")


def _volume(volume: dict[str, Any], where: str,
            settings: PolicySettings) -> Iterator[tuple[str, str]]:
    if volume.get("name") in AGENT_VOLUMES:
        yield (f"{where}.name",
               f"volume name {volume['name']!r} is used by the agent's own volumes; rename it")
    if podsecurity.volume_type(volume) is None:
        yield where, "a volume needs exactly one source (emptyDir, configMap, secret ...)"
        return
    for path, message in podsecurity.check_volume(volume, settings.pod_security):
        yield (f"{where}.{path}",
               f"{message}; the agent's setting pod_security (--pod-security) decides")


def _mount(mount: dict[str, Any], where: str) -> Iterator[tuple[str, str]]:
    if mount.get("mountPath") in AGENT_MOUNT_PATHS:
        yield (f"{where}.mountPath",
               f"{mount['mountPath']} is mounted by the agent (named.conf, RNDC key, zones, run)")
    if mount.get("mountPropagation") == "Bidirectional":
        yield (f"{where}.mountPropagation",
               "Bidirectional mount propagation needs a privileged container")


def _quantity(value: Any) -> decimal.Decimal | None:
    match = _QUANTITY.match(str(value))
    if not match or (match[2] and len(match[2].lstrip("+-").lstrip("0")) > 3):
        # an exponent past 999 is no quantity of cpu or memory (1e999999999 overflowed Decimal)
        return None
    number = decimal.Decimal(match[1])
    if match[2]:
        return number * decimal.Decimal(10) ** int(match[2])
    return number * decimal.Decimal(_SUFFIX[match[3] or ""])


def _resources(res: Any, where: str) -> Iterator[tuple[str, str]]:
    if not isinstance(res, dict):
        yield where, "expected a mapping with requests and limits"
        return
    parsed: dict[tuple[str, str], decimal.Decimal] = {}
    for section, values in res.items():
        if section not in ("requests", "limits") or not isinstance(values, dict):
            yield (f"{where}.{section}",
                   "only `requests` and `limits` (mappings of cpu, memory, ephemeral-storage)")
            continue
        for name, value in values.items():
            quantity = _quantity(value)
            if name not in RESOURCE_NAMES:
                yield (f"{where}.{section}.{name}",
                       f"resource {name!r} is not one of {', '.join(RESOURCE_NAMES)}")
            elif quantity is None:
                yield (f"{where}.{section}.{name}",
                       f"{value!r} is not a Kubernetes quantity (e.g. 100m, 128Mi)")
            else:
                parsed[(section, name)] = quantity
    for name in RESOURCE_NAMES:
        request, limit = parsed.get(("requests", name)), parsed.get(("limits", name))
        if request is not None and limit is not None and request > limit:
            yield (f"{where}.requests.{name}",
                   f"request {res['requests'][name]} exceeds the limit {res['limits'][name]}")


def _bindcar(cfg: dict[str, Any], where: str,
             settings: PolicySettings) -> Iterator[tuple[str, str]]:
    if "image" in cfg:
        yield from _image(cfg["image"], f"{where}.image", settings)
    port = cfg.get("port")
    if port is not None and (port < 1024 or port > 65535):
        yield (f"{where}.port", f"port {port}: the sidecar runs as a non-root user without "
               "capabilities, so its port must be between 1024 and 65535")
    elif port in (workloads.DNS_CONTAINER_PORT, workloads.RNDC_PORT):
        yield f"{where}.port", f"port {port} is used by named in the same pod"
    for i, env in enumerate(cfg.get("envVars") or []):
        if env.get("name") in PROTECTED_ENV:
            what = "would turn off the zone API's authentication" if env["name"] == "DISABLE_AUTH" \
                else "is set by the agent"
            yield f"{where}.envVars[{i}].name", f"{env['name']} {what}; remove it"
    if "resources" in cfg:
        yield from _resources(cfg["resources"], f"{where}.resources")
    if isinstance(cfg.get("serviceSpec"), dict):
        yield from _service(cfg["serviceSpec"], f"{where}.serviceSpec", settings)


def _service(spec: dict[str, Any], where: str,
             settings: PolicySettings) -> Iterator[tuple[str, str]]:
    kind = spec.get("type", "ClusterIP")
    if kind not in settings.allowed_service_types:
        yield f"{where}.type", (f"Service type {kind} is not allowed (allowed: "
                                f"{', '.join(settings.allowed_service_types)}); the agent's "
                                "setting allowed_service_types (--allowed-service-types) decides")
    networks = [ipaddress.ip_network(c, strict=False) for c in settings.allowed_external_ips]
    for i, ip in enumerate(spec.get("externalIPs") or []):
        try:
            address = ipaddress.ip_address(ip)
        except ValueError:
            yield f"{where}.externalIPs[{i}]", f"{ip!r} is not an IP address"
            continue
        if not any(address in net for net in networks):
            allowed = ", ".join(settings.allowed_external_ips) or "none"
            yield f"{where}.externalIPs[{i}]", (f"external IP {ip} is not allowed (allowed: "
                                                f"{allowed}); the agent's setting "
                                                "allowed_external_ips (--allowed-external-ips) "
                                                "decides")
    for field in LOAD_BALANCER_FIELDS:
        if field in spec and kind != "LoadBalancer":
            yield f"{where}.{field}", "only applies to a Service of type LoadBalancer"
    for field in ("ports", "selector"):
        if field in spec:
            yield f"{where}.{field}", ("set by the agent (DNS 53/udp and 53/tcp and the zone API "
                                       "8080 to this instance's pods; node ports are allocated by "
                                       "Kubernetes); remove it")
