"""How to reach each Bind9Instance: its DNS server, its zone HTTP API, and their credentials.

From an explicit endpoint map (runs outside a cluster, tests), or, inside a cluster, from its
Service, the TSIG key in its RNDC Secret, and an audience-bound token (read by
agent/observe/instancereach.py).

The endpoint map tells a run outside a cluster (and the tests) how to reach each Bind9Instance:

    # endpoints.yaml
    instances:
      dns-system/dns-primary-0:            # namespace/name of the Bind9Instance
        dns: 127.0.0.10:53                  # DNS: UPDATE, AXFR and verification queries
        api: http://127.0.0.1:8080          # the zone HTTP API (bindcar) base URL
        tokenFile: /etc/bindy/api-token     # bearer token for the zone API (optional)
        tsigKeyFile: /etc/bindy/primary.key # BIND key file: key "name" { algorithm ...; secret
        "..."; };
      dns-system/dns-primary-1:            # an instance served by several pods, each its own
                                           # server:
        pods:                               # zones and records are written to, and verified on,
                                            # each
          - {dns: 127.0.0.11:53, api: http://127.0.0.1:8081}
          - {dns: 127.0.0.12:53, api: http://127.0.0.1:8082}
        tsigKeyFile: /etc/bindy/primary.key

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
from collections.abc import Mapping
from typing import Any

import yaml

from agent.desired import workloads
from agent.errors import ConfigError
from agent.load import scalars
from agent.model.servers import SERVER_SEPARATOR
from agent.sources import operatorfile

_KEY = re.compile(r'key\s+"?(?P<name>[^"\s{]+)"?\s*\{(?P<body>[^}]*)\}', re.S)


@dataclasses.dataclass(frozen=True)
class TsigKey:
    name: str
    algorithm: str
    secret: str = dataclasses.field(repr=False)  # never printed


@dataclasses.dataclass(frozen=True)
class Server:
    """One pod of an instance: its own `named` (own zone list, own SOA serials) and zone API
    sidecar."""

    # how it is named in plans and reports after its instance: the pod's address, or the map's `dns`
    name: str
    dns_host: str
    dns_port: int
    api_url: str
    # the key this pod accepts while a rotation rolls out; None: the instance's
    tsig: TsigKey | None = None
    # the pod's name while its zones-loaded readiness gate is not True (it runs, it is not Ready
    # yet: it waits for its zones); "" for a Ready pod (or a map's)
    waiting: str = ""


@dataclasses.dataclass(frozen=True)
class Endpoint:
    instance: str  # "namespace/name"
    dns_host: str
    dns_port: int
    api_url: str
    token: str = dataclasses.field(default="", repr=False)
    tsig: TsigKey | None = None
    # the addresses of the instance's ready pods, as its Service's Endpoints list them; None: not
    # read (an endpoint map), then `dns` is the instance's one address for transfers too
    pods: tuple[str, ...] | None = None
    pod_port: int = workloads.DNS_CONTAINER_PORT
    # a primary's zones allow transfers to their secondaries' addresses and to these (the agent's
    # own, for its TSIG-signed AXFR); None: no per-zone ACL, named.conf's allow-transfer applies (an
    # explicit allowTransfer in the instance's config, a user-supplied named.conf, or an endpoint
    # map)
    transfer_acl: tuple[str, ...] | None = None
    # the pods it is written to one by one, each its own server (the ready pods, or the map's
    # `pods`); none: the instance is written through its one address above (its Service, or the
    # map's `dns`)
    servers: tuple[Server, ...] = ()
    # why nothing can be written to the instance yet: it has no pod at all (just created, starting,
    # or scaled to 0): its zones wait for its pods, a start-up is not a failure ("" for one that has
    # pods)
    starting: str = ""

    @property
    def dns(self) -> str:
        return f"{self.dns_host}:{self.dns_port}"

    def transfer_addresses(self) -> list[str]:
        """Where transfers and NOTIFY reach this instance: every ready pod's address and DNS port
        (`ip:port`, IPv6 in brackets, as Bindy sends them to bindcar), or the map's `dns` (of each
        pod)."""
        if self.pods is None:
            return [s.dns_host + f":{s.dns_port}"
                    for s in self.servers] if self.servers else [self.dns]
        return [f"[{ip}]:{self.pod_port}" if ":" in ip else f"{ip}:{self.pod_port}"
                for ip in self.pods]

    def transfer_hosts(self) -> list[str]:
        """This instance's addresses without ports (an allow-transfer ACL is port-agnostic)."""
        if self.pods is None:
            return sorted({s.dns_host for s in self.servers}) if self.servers else [self.dns_host]
        return list(self.pods)

    def each_server(self) -> list[Endpoint]:
        """One endpoint per server (pod) the instance's zones and records are written to, named
        `namespace/name@pod`; the instance itself when its pods are not known one by one."""
        if not self.servers:
            return [self]
        return [dataclasses.replace(self, instance=f"{self.instance}{SERVER_SEPARATOR}{s.name}",
                                    dns_host=s.dns_host, dns_port=s.dns_port, api_url=s.api_url,
                                    servers=(), tsig=s.tsig or self.tsig) for s in self.servers]


def by_server(endpoints: Mapping[str, Endpoint]) -> dict[str, Endpoint]:
    """Every server of every instance by its id (see `Endpoint.each_server`); an id that is already
    a server's stays as it is."""
    return {e.instance: e for endpoint in endpoints.values() for e in endpoint.each_server()}


def servers_of(endpoints: Mapping[str, Endpoint]) -> dict[str, tuple[str, ...]]:
    """Instance -> the ids of the servers it is written to (only instances written pod by pod)."""
    return {i: tuple(e.instance for e in endpoint.each_server())
            for i, endpoint in endpoints.items()
            if endpoint.servers}


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
    text = operatorfile.read_text(path, setting="endpoint map", limit=operatorfile.SETTINGS_BYTES)
    try:
        doc = scalars.load(text)
    except yaml.YAMLError as exc:
        raise operatorfile.Unreadable("endpoint map", path, operatorfile.yaml_problem(exc)) from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("instances"), dict):
        raise ConfigError(f"{path}: expected a mapping with `instances:` (namespace/name -> "
                          f"endpoint)")
    out: dict[str, Endpoint] = {}
    for instance, entry in doc["instances"].items():
        where = f"{path}: instances.{instance}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected a mapping with dns and api (or pods)")
        unknown = set(entry) - {"dns", "api", "pods", "tokenFile", "tsigKeyFile"}
        if unknown:
            raise ConfigError(f"{where}: unknown keys {sorted(unknown)} (allowed: dns, api, pods, "
                              "tokenFile, tsigKeyFile)")
        if "/" not in str(instance) or SERVER_SEPARATOR in str(instance):
            raise ConfigError(f"{where}: name instances as namespace/name")
        servers = _servers(entry, where)
        host, port, api = ((servers[0].dns_host, servers[0].dns_port, servers[0].api_url) if servers
                           else (*_host_port(entry.get("dns"), f"{where}.dns", 53),
                                 _api(entry.get("api"), where)))
        token, tsig = "", None
        if entry.get("tokenFile"):
            token = _read(path, entry["tokenFile"], f"{where}.tokenFile").strip()
        if entry.get("tsigKeyFile"):
            tsig = parse_key_file(_read(path, entry["tsigKeyFile"], f"{where}.tsigKeyFile"),
                                  f"{where}.tsigKeyFile")
        out[str(instance)] = Endpoint(str(instance), host, port, api, token, tsig, servers=servers)
    return out


def _api(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ConfigError(f"{where}.api: expected an http(s) URL, got {value!r}")
    return value.rstrip("/")


def _servers(entry: dict[str, Any], where: str) -> tuple[Server, ...]:
    """The map's `pods:` of an instance (instead of its `dns` and `api`), each written to on its
    own."""
    pods = entry.get("pods")
    if pods is None:
        return ()
    if "dns" in entry or "api" in entry:
        raise ConfigError(f"{where}: give either dns and api (one server) or pods (one dns and api "
                          "per pod), not both")
    if not isinstance(pods, list) or not pods or not all(isinstance(p, dict) for p in pods):
        raise ConfigError(f"{where}.pods: expected a list of mappings with dns and api, one per "
                          f"pod")
    out: list[Server] = []
    for n, pod in enumerate(pods):
        at = f"{where}.pods[{n}]"
        unknown = set(pod) - {"dns", "api"}
        if unknown:
            raise ConfigError(f"{at}: unknown keys {sorted(unknown)} (allowed: dns, api)")
        host, port = _host_port(pod.get("dns"), f"{at}.dns", 53)
        out.append(Server(f"[{host}]:{port}" if ":" in host else f"{host}:{port}", host, port,
                          _api(pod.get("api"), at)))
    if len({s.name for s in out}) != len(out):
        raise ConfigError(f"{where}.pods: two pods have the same dns address; each pod is its own "
                          f"server")
    return tuple(out)


def _read(base: pathlib.Path, rel: Any, where: str) -> str:
    if not isinstance(rel, str):
        raise ConfigError(f"{where}: expected the path of a file")
    target = (base.parent / rel) if not pathlib.Path(rel).is_absolute() else pathlib.Path(rel)
    return operatorfile.read_text(target, setting=where, limit=operatorfile.KEY_BYTES)


log = logging.getLogger(__name__)
# The agent's Kubernetes API token (automounted): for the API server only, never sent anywhere else.
SERVICE_ACCOUNT_DIR = pathlib.Path("/var/run/secrets/kubernetes.io/serviceaccount")
# The zone API token: a projected ServiceAccount token bound to the zone API's audience
# (deploy/deployment.yaml).
ZONE_API_TOKEN = pathlib.Path("/var/run/secrets/bindy-agent/zone-api/token")
ZONE_API_AUDIENCE = "bindcar"


def _audiences(token: str) -> list[str] | None:
    """The `aud` claim of a JWT (read, not verified: the zone API verifies it), None if not a
    JWT."""
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
        raise ConfigError(f"zone API token {path}: that is the agent's Kubernetes API token; mount "
                          f"a projected ServiceAccount token with audience {audience!r} instead "
                          f"(deploy/deployment.yaml)")
    try:
        token = operatorfile.read_text(path, setting="zone API token",
                                       limit=operatorfile.KEY_BYTES).strip()
    except operatorfile.Missing:
        log.warning("zone API token %s not found: zone API requests carry no token", path)
        return ""
    audiences = _audiences(token)
    if not audiences or audience not in audiences:
        found = "not a ServiceAccount token" if audiences is None else f"audiences {audiences}"
        raise ConfigError(f"zone API token {path}: {found}; expected a projected ServiceAccount "
                          f"token with audience {audience!r}, so it cannot be used against the "
                          f"Kubernetes API")
    return token


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


