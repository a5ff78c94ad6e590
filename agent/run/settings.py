"""Settings of the long-running agent (`bindy-agent run`): flags > BINDY_AGENT_* > --config file."""

from __future__ import annotations

import dataclasses
import os
import pathlib

import pydantic
import yaml

from agent.errors import ConfigError
from agent.model import limits as read_limits
from agent.model import names

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
    cache: pathlib.Path = names.CACHE_DIR / "git"
    ssh_key: pathlib.Path | None = None
    known_hosts: pathlib.Path | None = None
    insecure_ignore_host_key: bool = False
    token_file: pathlib.Path | None = None
    push_notes: bool = True
    kubeconfig: pathlib.Path | None = None
    in_cluster: bool = False
    agent_namespace: str = names.DEFAULT_AGENT_NAMESPACE
    endpoints: pathlib.Path | None = None
    in_cluster_dns: bool = False
    state: pathlib.Path | None = None
    namespace: str = names.DEFAULT_NAMESPACE
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
    max_file_bytes: int = pydantic.Field(read_limits.Limits.max_file_bytes, ge=1,
                                         description=read_limits.help_of("max_file_bytes"))
    max_revision_bytes: int = pydantic.Field(read_limits.Limits.max_revision_bytes, ge=1,
                                             description=read_limits.help_of("max_revision_bytes"))
    max_documents: int = pydantic.Field(read_limits.Limits.max_documents, ge=1,
                                        description=read_limits.help_of("max_documents"))
    max_nodes: int = pydantic.Field(read_limits.Limits.max_nodes, ge=1, description=read_limits.help_of("max_nodes"))
    max_alias_nodes: int = pydantic.Field(read_limits.Limits.max_alias_nodes, ge=1,
                                          description=read_limits.help_of("max_alias_nodes"))

    def limits(self) -> read_limits.Limits:
        """What a revision may make the agent read (agent/model/limits.py)."""
        return read_limits.Limits(**{f.name: getattr(self, f.name) for f in dataclasses.fields(read_limits.Limits)})

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
