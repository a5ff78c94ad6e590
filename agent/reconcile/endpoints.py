"""How to reach each Bind9Instance: an explicit endpoint map (runs outside a cluster, tests), or,
inside a cluster, its Service and the TSIG key in its RNDC Secret.

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
import dataclasses
import logging
import pathlib
import re
from typing import Any

import yaml

from agent.desired import workloads
from agent.desired.hierarchy import Desired
from agent.errors import ConfigError
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

    @property
    def dns(self) -> str:
        return f"{self.dns_host}:{self.dns_port}"


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
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
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
SERVICE_ACCOUNT_TOKEN = pathlib.Path("/var/run/secrets/kubernetes.io/serviceaccount/token")


def _decode(data: dict[str, str], key: str) -> str:
    return base64.b64decode(data.get(key, "")).decode() if data.get(key) else ""


def from_cluster(api: KubeApi, desired: Desired, *, token_file: pathlib.Path = SERVICE_ACCOUNT_TOKEN,
                 cluster_domain: str = "cluster.local") -> dict[str, Endpoint]:
    """Every instance's endpoint: `<instance>.<namespace>.svc.<domain>` on ports 53 and 8080, the
    zone API token of the agent's ServiceAccount, and the key from the instance's RNDC Secret (the
    generated `<instance>-rndc-key`, or the Secret its rndcSecretRef names)."""
    token = token_file.read_text().strip() if token_file.exists() else ""
    out: dict[str, Endpoint] = {}
    for key in desired.instances:
        namespace, name = key.namespace or "", key.name
        deployment = desired.object("Deployment", namespace, name)
        if deployment is None:
            continue
        volumes = deployment.body["spec"]["template"]["spec"]["volumes"]
        secret_name = next(v["secret"]["secretName"] for v in volumes if v["name"] == "rndc-key")
        secret = api.get("Secret", namespace, secret_name)
        tsig = None
        if secret is None:
            log.warning("%s/%s: RNDC Secret %s not found; DNS UPDATE will be unsigned", namespace, name, secret_name)
        else:
            data = secret.get("data") or {}
            instance = desired.instances[key]
            ref = instance.spec.rndc_secret_ref
            key_field, secret_field = (ref.key_name_key, ref.secret_key) if ref else ("key-name", "secret")
            tsig = TsigKey(_decode(data, key_field) or workloads.rndc_key_name(name),
                           _decode(data, "algorithm") or (ref.algorithm if ref else "hmac-sha256"),
                           _decode(data, secret_field))
        host = f"{name}.{namespace}.svc.{cluster_domain}"
        out[f"{namespace}/{name}"] = Endpoint(f"{namespace}/{name}", host, workloads.DNS_PORT,
                                              f"http://{host}:{workloads.API_PORT}", token, tsig)
    return out
