"""Where the values of `bindy-agent run`'s settings come from, by precedence: its flags, then the
environment (BINDY_AGENT_*), then the settings file (--config, YAML read with Kubernetes' schema,
as for a ConfigMap); and, for each value, where it came from, so that a refusal names the flag, the
variable or the file and its key (agent/run/settingchecks.py). Which settings there are, and what
each may hold, is agent/run/settings.py."""

from __future__ import annotations

import pathlib
from collections.abc import Mapping

import yaml
from pydantic.fields import FieldInfo

from agent.errors import ConfigError
from agent.load import scalars
from agent.run import settingchecks as checks
from agent.sources import operatorfile


def merged(fields: Mapping[str, FieldInfo], prefix: str, flags: dict[str, object],
           config_file: pathlib.Path | None,
           environ: Mapping[str, str]) -> tuple[dict[str, object], dict[str, str]]:
    """The settings given, by precedence, and where each came from (for a refusal to say)."""
    merged: dict[str, object] = {}
    sources: dict[str, str] = {}
    if config_file is not None:
        for key, value in _file(config_file).items():
            name = str(key).replace("-", "_")
            merged[name] = value
            sources[name] = f"{config_file}, key {checks.key(str(key))}"
    for name, field in fields.items():
        if checks.variable(prefix, name) in environ:
            merged[name] = _coerce(field, environ[checks.variable(prefix, name)],
                                   checks.variable(prefix, name))
            sources[name] = f"the environment variable {checks.variable(prefix, name)}"
    for name, value in flags.items():
        if value is not None:
            merged[name], sources[name] = value, f"the flag {checks.flag(name)}"
    return merged, sources


def _file(config_file: pathlib.Path) -> dict[object, object]:
    """The settings file's mapping; Unreadable when it is not one."""
    text = operatorfile.read_text(config_file, setting="--config",
                                  limit=operatorfile.SETTINGS_BYTES)
    try:
        doc = scalars.load(text) or {}  # Kubernetes' schema, as for a ConfigMap
    except yaml.YAMLError as exc:
        raise operatorfile.Unreadable("--config", config_file,
                                      operatorfile.yaml_problem(exc)) from exc
    if not isinstance(doc, dict):
        raise operatorfile.Unreadable("--config", config_file,
                                      "unreadable: expected a mapping of settings "
                                      "(setting: value, one a line)")
    return doc


def _coerce(field: FieldInfo, value: str, variable: str) -> object:
    """An environment variable's text as its setting takes it (a boolean's words)."""
    if field.annotation is bool:
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{variable}: expected true or false, got {value!r}")
    return value
