"""The flags that are settings of the agent: `run`'s from its Settings fields, the policy flags of
the verbs that plan (agent/desired/policy.py), and --report-key-file, each named and described as
the setting of the same name (agent/run/settings.py). The settings are read only when a help text is
printed or a verb's flags are built: reading them costs more than validating a small repository.
"""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from agent.cli import common

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

_METAVARS = {"repo": "URL", "listen": "HOST:PORT", "cache": "DIR", "webhook_max_body": "BYTES",
             "lease_duration": "SECONDS", "http_connection_limit": "N", "log_format": "json|text",
             "agent_namespace": "NS", "namespace": "NS"}


class _HelpOfSetting:
    """The help text of a flag that is also a setting of `run`, read from the setting
    (agent/run/settings.py) only when argparse prints it: reading the settings costs more than
    validating a small repository, and only --help shows them. argparse asks a help text for
    `strip()` and `% params`, nothing else."""

    def __init__(self, text: Callable[[], str]) -> None:
        self._text = text

    def __str__(self) -> str:
        return self._text()

    def strip(self) -> str:
        return str(self).strip()

    def __mod__(self, params: Any) -> str:
        text: str = str(self) % params
        return text


def _setting_help(text: Callable[[], str]) -> str:
    """A help text that `text()` gives when argparse prints it."""
    return cast(str, _HelpOfSetting(text))


def _metavar(name: str, field: FieldInfo) -> str:
    if name in _METAVARS:
        return _METAVARS[name]
    if "Path" in str(field.annotation):
        return "FILE"
    if name.endswith("_bytes"):
        return "BYTES"
    if field.annotation is int:  # counts: documents, nodes, retries
        return "N"
    return "SECONDS" if field.annotation is float else name.split("_")[-1].upper()


def setting_flag(parser: argparse.ArgumentParser, name: str, field: FieldInfo) -> None:
    """One `run` flag from a Settings field: its description is the help, its default is shown. The
    flag's own default stays None so that unset flags let the environment and the file decide."""
    from agent.run import settings as config

    flag, env = "--" + name.replace("_", "-"), config.ENV_PREFIX + name.upper()
    text = " ".join((field.description or "").split())
    default = field.get_default()
    unset = default is None or default == "" or field.is_required()
    shown = [] if unset else [f"default: {default}"]
    # argparse formats help with %
    text = (text + f" ({'; '.join([*shown, env])})").replace("%", "%%")
    if field.annotation is bool:
        parser.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=None,
                            help=text)
    else:
        parser.add_argument(flag, dest=name, default=None, help=text, metavar=_metavar(name, field))


POLICY_FLAGS = ("pod_security", "allowed_registries", "allowed_service_types",
                "allowed_external_ips", "allowed_namespaces", "allow_cross_namespace_refs")


def _field(name: str) -> FieldInfo:
    from agent.run import settings as config

    return config.Settings.model_fields[name]


def _policy_help(name: str) -> str:
    field = _field(name)
    if field.annotation is bool:
        return str(field.description)
    if name == "pod_security":
        return f"{field.description} (default: {field.default})"
    return f"{field.description}; repeatable (default: {','.join(field.default) or 'none'})"


def _threshold_help() -> str:
    field = _field("delete_threshold_percent")
    return f"{' '.join((field.description or '').split())} (default: {field.default})"


def policy_flags(parser: argparse.ArgumentParser) -> None:
    """The policy settings (agent/desired/policy.py) as flags, named and described like `run`'s.
    Unset, a flag is None: the policy's own default applies (common.policy_settings,
    safety.Policy.of)."""
    group = parser.add_argument_group("policy",
                                      "what the repository may do; the agent's settings, which "
                                      "the repository cannot change")
    for name in POLICY_FLAGS:
        flag = "--" + name.replace("_", "-")
        text = _setting_help(functools.partial(_policy_help, name))
        if name == "allow_cross_namespace_refs":
            group.add_argument(flag, dest=name, action="store_true", default=None, help=text)
        elif name == "pod_security":
            group.add_argument(flag, dest=name, choices=["restricted", "baseline"], help=text)
        else:
            group.add_argument(flag, dest=name, action="append", metavar="A[,B]", help=text)
    group.add_argument("--delete-threshold-percent", type=common.percent, metavar="N",
                       help=_setting_help(_threshold_help))


def report_key_flag(parser: Any, what: str) -> None:
    """--report-key-file, which `what` (signs or checks the commit reports), as sync, run and report
    name it."""
    from agent.run import settings as config

    env = config.ENV_PREFIX + "REPORT_KEY_FILE"
    parser.add_argument("--report-key-file", type=common.readable_file, metavar="FILE",
                        default=os.environ.get(env),
                        help=f"file holding the report key (at least 32 characters), which {what}; "
                        f"the same file for sync, run and report ({env})")
