"""Configuration the agent reads from files: the only module that reads config files.

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

import dataclasses
import os
import pathlib
import re
from typing import Any

import pydantic
import yaml

from agent.errors import ConfigError

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


# --- settings of the long-running agent (`bindy-agent run`) ---------------------------------------

ENV_PREFIX = "BINDY_AGENT_"


class Settings(pydantic.BaseModel):
    """Every setting of `bindy-agent run`. Precedence: flags, then BINDY_AGENT_* environment
    variables, then the YAML file given by --config, then these defaults. Secrets are never
    values here: only paths of files that hold them (mounted Secrets)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    repo: str = pydantic.Field(description="Git repository URL (or local path)")
    branch: str = "main"
    ref: str | None = None
    path: str = ""
    cache: pathlib.Path = pathlib.Path.home() / ".cache" / "bindy-agent" / "git"
    ssh_key: pathlib.Path | None = None
    known_hosts: pathlib.Path | None = None
    insecure_ignore_host_key: bool = False
    token_file: pathlib.Path | None = None
    push_notes: bool = True
    kubeconfig: pathlib.Path | None = None
    in_cluster: bool = False
    agent_namespace: str = "bindy-agent"
    endpoints: pathlib.Path | None = None
    in_cluster_dns: bool = False
    state: pathlib.Path | None = None
    namespace: str = "default"
    interval: float = pydantic.Field(60, gt=0, description="seconds between scheduled syncs")
    jitter: float = pydantic.Field(5, ge=0)
    resync_after: float = 600
    listen: str = "0.0.0.0:8080"
    webhook_secret_file: pathlib.Path | None = None
    force: bool = False
    log_format: str = pydantic.Field("json", pattern="^(json|text)$")
    leader_election: bool = pydantic.Field(True, description="with a cluster: only the Lease holder syncs")
    lease_name: str = "bindy-agent"
    lease_duration: int = pydantic.Field(15, ge=2, description="seconds before a silent leader is replaced")

    def masked(self) -> dict[str, object]:
        """The effective settings for --print-config (file paths only; no secret values exist here)."""
        return {k: (str(v) if isinstance(v, pathlib.Path) else v) for k, v in self.model_dump().items()}


def _coerce(name: str, value: str) -> object:
    field = Settings.model_fields[name]
    if field.annotation is bool:
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{ENV_PREFIX}{name.upper()}: expected true or false, got {value!r}")
    return value


def load_settings(flags: dict[str, object], *, config_file: pathlib.Path | None = None,
                  environ: dict[str, str] | None = None) -> Settings:
    environ = dict(os.environ) if environ is None else environ
    merged: dict[str, object] = {}
    if config_file is not None:
        try:
            doc = yaml.safe_load(config_file.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"{config_file}: cannot read the settings file: {exc}") from exc
        if not isinstance(doc, dict):
            raise ConfigError(f"{config_file}: expected a mapping of settings")
        merged.update({str(k).replace("-", "_"): v for k, v in doc.items()})
    for name in Settings.model_fields:
        if f"{ENV_PREFIX}{name.upper()}" in environ:
            merged[name] = _coerce(name, environ[f"{ENV_PREFIX}{name.upper()}"])
    merged.update({k: v for k, v in flags.items() if v is not None})
    try:
        return Settings.model_validate(merged)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ConfigError(f"setting {where}: {first['msg']} (flag --{where.replace('_', '-')}, "
                          f"environment {ENV_PREFIX}{where.upper()})") from exc
