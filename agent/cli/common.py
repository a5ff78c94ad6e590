"""What the CLI verbs share: exit codes, the argument parser class, loading a directory, printing
problems. The CLI is the only part of the agent that prints."""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from agent.desired import hierarchy as desired
from agent.gate import policy, tenancy
from agent.load import loader
from agent.model import limits as read_limits
from agent.model import problems
from agent.sources import localdir

EXIT_OK, EXIT_CHANGES, EXIT_ERROR = 0, 1, 2
EXIT_INVALID = 1
EXIT_PARTIAL, EXIT_REJECTED, EXIT_UNREACHABLE = 1, 2, 3


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


def directory(value: str) -> pathlib.Path:
    path = pathlib.Path(value)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value!r} is not a directory")
    return path


def positive(value: str) -> int:
    try:
        number = int(value.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} must be at least 1")
    return number


def add_limit_flags(parser: argparse.ArgumentParser) -> None:
    """--max-file-bytes, --max-revision-bytes, --max-documents, --max-alias-nodes."""
    group = parser.add_argument_group("limits on what a revision may make the agent read")
    for field in dataclasses.fields(read_limits.Limits):
        group.add_argument(read_limits.flag(field.name), dest=field.name, type=positive, default=field.default,
                           metavar="N", help=read_limits.help_of(field.name))


def limits(args: argparse.Namespace) -> read_limits.Limits:
    """The limits given by the flags (defaults for any not given)."""
    defaults = read_limits.Limits()
    return read_limits.Limits(**{f.name: int(getattr(args, f.name, getattr(defaults, f.name)))
                                 for f in dataclasses.fields(read_limits.Limits)})


def print_problems(items: Sequence[problems.Problem], root: pathlib.Path, out: TextIO,
                    *, quiet: bool = False) -> None:
    for p in problems.sorted_problems(items):
        if quiet and p.severity is problems.Severity.WARNING:
            continue
        prefix = "warning: " if p.severity is problems.Severity.WARNING else ""
        if p.origin:
            p = problems.Problem(problems.Origin(str(root / p.origin.file), p.origin.line), p.obj,
                                 p.path, p.message, p.severity)
        print(f"{prefix}{p}", file=out)


def policy_settings(args: argparse.Namespace) -> policy.PolicySettings:
    """The policy flags of validate, plan and sync (repeatable or comma-separated; unset: the defaults)."""
    values: dict[str, Any] = {}
    for field in dataclasses.fields(policy.PolicySettings):
        value = getattr(args, field.name, None)
        values[field.name] = ",".join(value) if isinstance(value, list) else value
    try:
        return policy.PolicySettings.of(**values)
    except ValueError as exc:
        print(f"bindy-agent: error: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_ERROR) from exc


def load(args: argparse.Namespace) -> tuple[loader.Manifest, desired.Desired | None]:
    """Loads DIR, expands it and checks it against the policy (its problems join the state's). Without
    a cluster, references to Secrets the agent does not generate are warnings here."""
    settings = policy_settings(args)
    manifest = loader.load_files(localdir.files(args.directory), default_namespace=args.namespace,
                                 limits=limits(args))
    if not manifest.ok:
        return manifest, None
    state = desired.build(manifest)
    labels = secret_labels(args, manifest) if getattr(args, "kubeconfig", None) else None
    state.problems += policy.check(manifest, state, settings, secret_labels=labels)
    return manifest, state


def secret_labels(args: argparse.Namespace, manifest: loader.Manifest) -> policy.SecretLabels:
    """The live labels of every Secret the revision references (None: it does not exist). One that
    cannot be read is left out, which the policy reports as not observed (the revision is refused)."""
    from agent.errors import AgentError
    from agent.reconcile import kubeobserve

    wanted = tenancy.secrets_to_observe(manifest)
    if not wanted:
        return {}
    try:
        return kubeobserve.secret_labels(kube_api(args), wanted)
    except AgentError as exc:
        print(f"error: cannot read the Secrets the revision references: {exc}", file=sys.stderr)
        return {}


def valid_state(args: argparse.Namespace, verb: str) -> desired.Desired | None:
    manifest, state = load(args)
    found = manifest.problems + (state.problems if state else [])
    print_problems(found, args.directory, sys.stderr)
    if state is None or problems.errors(found):
        print(f"{args.directory}: invalid: nothing {verb} ({len(problems.errors(found))} errors)", file=sys.stderr)
        return None
    return state


def kube_api(args: argparse.Namespace) -> Any:
    from agent.reconcile import kubeapi

    scope = policy_settings(args).kube_scope()
    return kubeapi.KubeApi.from_kubeconfig(args.kubeconfig, context=args.context, namespaces=scope)
