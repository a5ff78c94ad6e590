"""How to reach each Bind9Instance: its DNS server, its zone HTTP API, and their credentials.

From an explicit endpoint map (runs outside a cluster, tests), or, inside a cluster, from its
Service, the TSIG key in its RNDC Secret, and an audience-bound token.

The endpoint map tells a run outside a cluster (and the tests) how to reach each Bind9Instance:

    # endpoints.yaml
    instances:
      dns-system/dns-primary-0:            # namespace/name of the Bind9Instance
        dns: 127.0.0.10:53                  # DNS: UPDATE, AXFR and verification queries
        api: http://127.0.0.1:8080          # the zone HTTP API (bindcar) base URL
        tokenFile: /etc/bindy/api-token     # bearer token for the zone API (optional)
        tsigKeyFile: /etc/bindy/primary.key # BIND key file: key "name" { algorithm ...; secret "..."; };

Secrets (tokens, TSIG keys) come from files only; relative paths are relative to the map's file.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import logging
import os
import pathlib
import re
import socket
from collections.abc import Callable
from typing import Any

import yaml

from agent.desired import workloads
from agent.desired.hierarchy import Desired
from agent.errors import ConfigError, KubeError
from agent.load import scalars
from agent.model.key import ObjectKey
from agent.reconcile.kubeapi import KubeApi

_KEY = re.compile(r'key\s+"?(?P<name>[^"\s{]+)"?\s*\{(?P<body>[^}]*)\}', re.S)


@dataclasses.dataclass(frozen=True)
class TsigKey:
    name: str
    algorithm: str
    secret: str = dataclasses.field(repr=False)  # never printed


@dataclasses.dataclass(frozen=True)
class Endpoint:
    instance: str  # "namespace/name"
    dns_host: str
    dns_port: int
    api_url: str
    token: str = dataclasses.field(default="", repr=False)
    tsig: TsigKey | None = None
    # the addresses of the instance's ready pods, as its Service's Endpoints list them; None: not read
    # (an endpoint map), then `dns` is the instance's one address for transfers too
    pods: tuple[str, ...] | None = None
    pod_port: int = workloads.DNS_CONTAINER_PORT
    # a primary's zones allow transfers to their secondaries' addresses and to these (the agent's own,
    # for its TSIG-signed AXFR); None: no per-zone ACL, named.conf's allow-transfer applies (an explicit
    # allowTransfer in the instance's config, a user-supplied named.conf, or an endpoint map)
    transfer_acl: tuple[str, ...] | None = None

    @property
    def dns(self) -> str:
        return f"{self.dns_host}:{self.dns_port}"

    def transfer_addresses(self) -> list[str]:
        """Where transfers and NOTIFY reach this instance: every ready pod's address and DNS port
        (`ip:port`, IPv6 in brackets, as Bindy sends them to bindcar), or the map's `dns`."""
        if self.pods is None:
            return [self.dns]
        return [f"[{ip}]:{self.pod_port}" if ":" in ip else f"{ip}:{self.pod_port}" for ip in self.pods]

    def transfer_hosts(self) -> list[str]:
        """This instance's addresses without ports (an allow-transfer ACL is port-agnostic)."""
        return list(self.pods) if self.pods is not None else [self.dns_host]


def transfer_addresses(endpoints: list[Endpoint]) -> list[str]:
    return [a for e in endpoints for a in e.transfer_addresses()]


def allow_transfer(primary: Endpoint, secondaries: list[Endpoint]) -> list[str] | None:
    """The per-zone allow-transfer ACL of a zone on `primary` (bindcar takes bare IP addresses): its
    secondaries' pod addresses and the agent's own; None where named.conf's ACL applies instead."""
    if primary.transfer_acl is None:
        return None
    hosts = [h for s in secondaries for h in s.transfer_hosts()]
    return sorted(set(hosts) | set(primary.transfer_acl)) if hosts else []


def parse_key_file(text: str, where: str) -> TsigKey:
    match = _KEY.search(text)
    if not match:
        raise ConfigError(f"{where}: no `key \"name\" {{ algorithm ...; secret \"...\"; }};` block")
    body = match["body"]
    algorithm = re.search(r"algorithm\s+\"?([\w-]+)\"?\s*;", body)
    secret = re.search(r'secret\s+"([^"]+)"\s*;', body)
    if not algorithm or not secret:
        raise ConfigError(f"{where}: key {match['name']} needs both `algorithm` and `secret`")
    return TsigKey(match["name"], algorithm[1].lower(), secret[1])


def _host_port(value: Any, where: str, default_port: int) -> tuple[str, int]:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: expected host:port, got {value!r}")
    host, sep, port = value.rpartition(":")
    if not sep:
        return value, default_port
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"{where}: {port!r} is not a port number")
    return host.strip("[]"), int(port)


def load_endpoints(path: pathlib.Path) -> dict[str, Endpoint]:
    """Reads an endpoint map; every problem is a ConfigError naming the file and the entry."""
    try:
        doc = scalars.load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read the endpoint map: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("instances"), dict):
        raise ConfigError(f"{path}: expected a mapping with `instances:` (namespace/name -> endpoint)")
    out: dict[str, Endpoint] = {}
    for instance, entry in doc["instances"].items():
        where = f"{path}: instances.{instance}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected a mapping with dns and api")
        unknown = set(entry) - {"dns", "api", "tokenFile", "tsigKeyFile"}
        if unknown:
            raise ConfigError(f"{where}: unknown keys {sorted(unknown)} (allowed: dns, api, tokenFile, tsigKeyFile)")
        if "/" not in str(instance):
            raise ConfigError(f"{where}: name instances as namespace/name")
        host, port = _host_port(entry.get("dns"), f"{where}.dns", 53)
        api = entry.get("api")
        if not isinstance(api, str) or not api.startswith(("http://", "https://")):
            raise ConfigError(f"{where}.api: expected an http(s) URL, got {api!r}")
        token, tsig = "", None
        if entry.get("tokenFile"):
            token = _read(path, entry["tokenFile"], f"{where}.tokenFile").strip()
        if entry.get("tsigKeyFile"):
            tsig = parse_key_file(_read(path, entry["tsigKeyFile"], f"{where}.tsigKeyFile"),
                                  f"{where}.tsigKeyFile")
        out[str(instance)] = Endpoint(str(instance), host, port, api.rstrip("/"), token, tsig)
    return out


def _read(base: pathlib.Path, rel: str, where: str) -> str:
    target = (base.parent / rel) if not pathlib.Path(rel).is_absolute() else pathlib.Path(rel)
    try:
        return target.read_text()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read {target}: {exc}") from exc


log = logging.getLogger(__name__)
# The agent's Kubernetes API token (automounted): for the API server only, never sent anywhere else.
SERVICE_ACCOUNT_DIR = pathlib.Path("/var/run/secrets/kubernetes.io/serviceaccount")
# The zone API token: a projected ServiceAccount token bound to the zone API's audience (deploy/deployment.yaml).
ZONE_API_TOKEN = pathlib.Path("/var/run/secrets/bindy-agent/zone-api/token")
ZONE_API_AUDIENCE = "bindcar"


def _audiences(token: str) -> list[str] | None:
    """The `aud` claim of a JWT (read, not verified: the zone API verifies it), None if not a JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return None
    aud = claims.get("aud") if isinstance(claims, dict) else None
    if isinstance(aud, str):
        return [aud]
    return [a for a in aud if isinstance(a, str)] if isinstance(aud, list) else []


def zone_api_token(path: pathlib.Path, *, audience: str = ZONE_API_AUDIENCE) -> str:
    """The bearer token for the zone HTTP APIs, read afresh on every call (the kubelet rotates the
    projected token). "" when the file does not exist (no token is sent). A token not bound to
    `audience` - the agent's Kubernetes API token above all - is refused: a zone API that received
    it could replay it against the Kubernetes API with every right the agent has."""
    if SERVICE_ACCOUNT_DIR in path.absolute().parents:
        raise ConfigError(f"zone API token {path}: that is the agent's Kubernetes API token; mount a projected "
                          f"ServiceAccount token with audience {audience!r} instead (deploy/deployment.yaml)")
    try:
        token = path.read_text().strip()
    except FileNotFoundError:
        log.warning("zone API token %s not found: zone API requests carry no token", path)
        return ""
    except OSError as exc:
        raise ConfigError(f"cannot read the zone API token {path}: {exc}") from exc
    audiences = _audiences(token)
    if not audiences or audience not in audiences:
        found = "not a ServiceAccount token" if audiences is None else f"audiences {audiences}"
        raise ConfigError(f"zone API token {path}: {found}; expected a projected ServiceAccount token with "
                          f"audience {audience!r}, so it cannot be used against the Kubernetes API")
    return token


def _decode(data: dict[str, str], key: str) -> str:
    return base64.b64decode(data.get(key, "")).decode() if data.get(key) else ""


def from_cluster(api: KubeApi, desired: Desired, *, token_file: pathlib.Path = ZONE_API_TOKEN,
                 audience: str = ZONE_API_AUDIENCE, cluster_domain: str = "cluster.local",
                 send_token_to: Callable[[ObjectKey], bool] | None = None,
                 read_in: Callable[[ObjectKey], bool] | None = None,
                 agent_addresses: list[str] | None = None) -> dict[str, Endpoint]:
    """Every instance's endpoint: `<instance>.<namespace>.svc.<domain>` on ports 53 and 8080, the
    audience-bound zone API token (see `zone_api_token`), the key from the instance's RNDC Secret
    (the generated `<instance>-rndc-key`, or the Secret its rndcSecretRef names), and the addresses
    of its ready pods from its Service's Endpoints (BIND's `primaries` and `also-notify` take
    addresses, not names).

    `send_token_to` decides which instances get the token at all (default: every instance of the
    revision); the others are reached without one. `read_in` decides whose Endpoints are read
    (default: `send_token_to`'s instances: those in the allowed namespaces). `agent_addresses`: the
    agent's own pod address(es), allowed to transfer zones (default: POD_IP, else the pod's hostname)."""
    token = zone_api_token(token_file, audience=audience)
    readable = read_in or send_token_to
    agent = tuple(agent_addresses) if agent_addresses is not None else own_addresses()
    out: dict[str, Endpoint] = {}
    for key in desired.instances:
        namespace, name = key.namespace or "", key.name
        deployment = desired.object("Deployment", namespace, name)
        if deployment is None:
            continue
        volumes = deployment.body["spec"]["template"]["spec"]["volumes"]
        secret_name = next(v["secret"]["secretName"] for v in volumes if v["name"] == "rndc-key")
        config_name = next((v["configMap"]["name"] for v in volumes if v["name"] == "config"), f"{name}-config")
        host = f"{name}.{namespace}.svc.{cluster_domain}"
        granted = token if send_token_to is None or send_token_to(key) else ""
        pods, port = ready_pods(api, namespace, name) if readable is None or readable(key) else ((), 0)
        out[f"{namespace}/{name}"] = Endpoint(
            f"{namespace}/{name}", host, workloads.DNS_PORT, f"http://{host}:{workloads.API_PORT}", granted,
            _tsig(api, desired, key, secret_name), pods=pods, pod_port=port or workloads.DNS_CONTAINER_PORT,
            transfer_acl=None if explicit_transfer_acl(desired, namespace, config_name) else agent)
    return out


def ready_pods(api: KubeApi, namespace: str, name: str) -> tuple[tuple[str, ...], int]:
    """The ready pods' addresses of the instance's Service (its Endpoints object: ready addresses only)
    and their DNS port; none when it cannot be read (said in the log: transfers then wait)."""
    try:
        found = api.get("Endpoints", namespace, name)
    except KubeError as exc:
        log.warning("%s/%s: cannot read its Endpoints, so no pod address for transfers: %s", namespace, name, exc)
        return (), 0
    ips: list[str] = []
    port = 0
    for subset in (found or {}).get("subsets") or []:
        ips += [a["ip"] for a in subset.get("addresses") or [] if a.get("ip")]
        port = port or next((p.get("port", 0) for p in subset.get("ports") or [] if p.get("name") == "dns-tcp"), 0)
    return tuple(sorted(set(ips))), port


_DEFAULT_TRANSFER = re.compile(r'allow-transfer \{ key "[^"]+"; none; \};')


def explicit_transfer_acl(desired: Desired, namespace: str, config_name: str) -> bool:
    """Whether the instance's named.conf has an allow-transfer ACL of its own: an explicit
    `allowTransfer` in its config, or a named.conf the user supplies (a ConfigMap the agent does not
    generate). Then zones carry no per-zone ACL, which would override it."""
    generated = desired.object("ConfigMap", namespace, config_name)
    text = (generated.body.get("data") or {}).get("named.conf") if generated is not None else None
    return not isinstance(text, str) or not _DEFAULT_TRANSFER.search(text)


def own_addresses() -> tuple[str, ...]:
    """The agent pod's address (the source of its AXFRs): POD_IP (downward API), else what its
    hostname resolves to in the pod's /etc/hosts; none outside a pod."""
    if os.environ.get("POD_IP"):
        return (os.environ["POD_IP"],)
    try:
        address = socket.gethostbyname(socket.gethostname())
    except OSError:
        return ()
    return () if address.startswith("127.") else (address,)


def _tsig(api: KubeApi, desired: Desired, key: ObjectKey, secret_name: str) -> TsigKey | None:
    namespace, name = key.namespace or "", key.name
    secret = api.get("Secret", namespace, secret_name)
    if secret is None:
        log.warning("%s/%s: RNDC Secret %s not found; DNS UPDATE will be unsigned", namespace, name, secret_name)
        return None
    data = secret.get("data") or {}
    ref = desired.instances[key].spec.rndc_secret_ref
    key_field, secret_field = (ref.key_name_key, ref.secret_key) if ref else ("key-name", "secret")
    return TsigKey(_decode(data, key_field) or workloads.rndc_key_name(name),
                   _decode(data, "algorithm") or (ref.algorithm if ref else "hmac-sha256"),
                   _decode(data, secret_field))
