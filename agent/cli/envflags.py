"""BINDY_AGENT_* environment variables as the defaults of every verb's flags that are settings of
the agent.

`run` reads each of its settings from the flag, else BINDY_AGENT_<SETTING>, else its --config file
(agent/run/settings.py). Every other verb that has a flag for one of those settings -
`--kubeconfig`, `--namespace`, `--repo`, the policy flags, the read limits, ... - reads the same
variable when the flag is not given: a flag beats the variable, the variable beats the default. Not
read from the environment: `--force` and `--allow-prune` (a one-off verb overrides the safety gate
only when its command line says so), and for `plan`, `--kubeconfig` (an offline plan stays offline
whatever the environment holds) and `--cache` (plan keeps its clones apart from the agent's).

The settings are looked up only when a BINDY_AGENT_* variable is set: building a verb's parser
otherwise costs nothing more.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from typing import Any

PREFIX = "BINDY_AGENT_"
NEVER = frozenset({"force", "allow_prune"})
# None: every setting is run's own already
NOT_FOR = {"plan": frozenset({"kubeconfig", "cache"}), "run": None}
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


class _FromEnvironment(list[str]):
    """An append flag's default taken from the environment: a flag on the command line replaces
    it."""


class _AppendOverEnvironment(argparse._AppendAction):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if isinstance(getattr(namespace, self.dest, None), _FromEnvironment):
            setattr(namespace, self.dest, [])
        super().__call__(parser, namespace, values, option_string)


def _settings() -> frozenset[str]:
    from agent.run import settings as config

    return frozenset(config.Settings.model_fields)


def readable(verb: str) -> frozenset[str] | None:
    """The settings `verb` reads from the environment through its flags (None: run reads them
    itself)."""
    if verb in NOT_FOR and NOT_FOR[verb] is None:
        return None
    return _settings() - NEVER - (NOT_FOR.get(verb) or frozenset())


def _actions(parser: argparse.ArgumentParser,
             names: frozenset[str]) -> Iterator[tuple[argparse.Action, str]]:
    for action in parser._actions:
        if action.option_strings and action.dest in names:
            value = os.environ.get(PREFIX + action.dest.upper())
            if value is not None:
                yield action, value


def apply(parser: argparse.ArgumentParser, verb: str) -> None:
    """Sets the defaults of `parser`'s flags from the environment (see the module docstring)."""
    if not any(key.startswith(PREFIX) for key in os.environ):
        return
    names = readable(verb)
    if names is None:
        return
    for action, value in _actions(parser, names):
        env = PREFIX + action.dest.upper()
        action.required = False  # given by the environment (report --repo)
        if action.nargs == 0:  # --flag / --no-flag: a boolean
            action.default = _boolean(parser, env, value)
        elif isinstance(action, argparse._AppendAction):
            action.default = _FromEnvironment([value])
            action.__class__ = _AppendOverEnvironment
        elif action.choices is not None and value not in action.choices:
            parser.error(f"{env}={value!r}: not one of {', '.join(map(str, action.choices))}")
        else:
            # a string default: argparse converts and checks it as if it were given
            action.default = value


def _boolean(parser: argparse.ArgumentParser, env: str, value: str) -> bool:
    if value.strip().lower() in TRUE:
        return True
    if value.strip().lower() in FALSE:
        return False
    parser.error(f"{env}={value!r}: give true or false")
    raise AssertionError  # parser.error exits
