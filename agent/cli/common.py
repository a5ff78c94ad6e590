"""What the CLI verbs share: exit codes, the parser, flags, printing problems, the kubeconfig.

The CLI is the only part of the agent that prints. A directory is validated by the orchestrator's
own first step (`planner.validate`), so `validate` and `plan` check a revision as a sync does.

The kubeconfig is found the way kubectl finds it: `--kubeconfig FILE`, else `$KUBECONFIG` (a
':'-separated list is merged), else `~/.kube/config` if it exists; inside a pod with none of them,
the pod's ServiceAccount. A verb whose cluster is optional (`plan`, `sync --endpoints`) uses one
only when asked (`--kubeconfig` or `--context`), so a kubeconfig lying around never turns an
offline plan into an online one, nor a DNS-only sync into one that writes to a cluster."""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from agent.cli import terminal
from agent.model import limits as read_limits
from agent.model import names, problems

# the rest is imported where used: building the parser stays cheap (tests/cli/test_startup.py)
if TYPE_CHECKING:
    from agent.clients import axfr
    from agent.desired import policy
    from agent.load.sourcefile import SourceFile
    from agent.run import validation

EXIT_OK, EXIT_ERROR = 0, 2  # plan's own: agent/cli/plan.py
EXIT_INVALID = 1  # validate
EXIT_STALE = 1  # schemas --check
EXIT_NO_REPORT = 1  # report
EXIT_PARTIAL, EXIT_REJECTED, EXIT_UNREACHABLE = 1, 2, 3

# adds a verb's parser (its name and one-line help given)
AddVerb = Callable[..., argparse.ArgumentParser]


class Parser(argparse.ArgumentParser):
    usage_status = EXIT_ERROR  # `plan` exits 1 on a usage error, like every other error of it

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(Parser.usage_status, f"{self.prog}: error: {message}\n")


class KeepBrokenLines(argparse.HelpFormatter):
    """Wraps a description or epilog to the terminal like argparse does, unless the text breaks its
    own lines (a table): that is printed as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "\n".join(indent + line for line in text.splitlines())
        return super()._fill_text(text, width, indent)


def directory(value: str) -> pathlib.Path:
    path = pathlib.Path(value)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value!r} is not a directory")
    return path


def git_operand(what: str) -> Callable[[str], str]:
    """A flag whose value goes to git (a URL, branch or ref): one starting with `-` is a usage
    error, never an option of git (`--repo=--upload-pack=CMD`)."""
    def check(value: str) -> str:
        from agent.sources import git as git_source

        problem = git_source.option_like(value, what)
        if problem is not None:
            raise argparse.ArgumentTypeError(problem)
        return value
    return check


def readable_file(value: str) -> pathlib.Path:
    """A flag naming a file to read: it must be a regular file (a FIFO or a directory would hang or
    fail later)."""
    path = pathlib.Path(value)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{value!r}: no such file")
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{value!r} is not a regular file")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"{value!r} is not readable")
    return path


def positive(value: str) -> int:
    try:
        number = int(value.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} must be at least 1")
    return number


def seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not number >= 0 or number == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} must be a finite number of seconds, 0 or more")
    return number


def add_limit_flags(parser: argparse.ArgumentParser) -> None:
    """--max-file-bytes, --max-revision-bytes, --max-documents, --max-alias-nodes."""
    group = parser.add_argument_group("limits on what a revision may make the agent read")
    for field in dataclasses.fields(read_limits.Limits):
        group.add_argument(read_limits.flag(field.name), dest=field.name, type=positive,
                           default=field.default, metavar="N", help=read_limits.help_of(field.name))


def limits(args: argparse.Namespace) -> read_limits.Limits:
    """The limits given by the flags (defaults for any not given)."""
    defaults = read_limits.Limits()
    return read_limits.Limits(**{f.name: int(getattr(args, f.name, getattr(defaults, f.name)))
                                 for f in dataclasses.fields(read_limits.Limits)})


def add_transfer_flags(parser: argparse.ArgumentParser) -> None:
    """--max-transfer-bytes, --max-transfer-records: the bounds of one zone transfer
    (agent/clients/axfr.py)."""
    from agent.clients import axfr

    group = parser.add_argument_group("limits on what a DNS server's zone transfer may bring in")
    defaults = axfr.TransferLimits()
    group.add_argument("--max-transfer-bytes", type=positive, default=defaults.max_bytes,
                       metavar="N", help=axfr.BYTES_HELP)
    group.add_argument("--max-transfer-records", type=positive, default=defaults.max_records,
                       metavar="N", help=axfr.RECORDS_HELP)


def transfer_limits(args: argparse.Namespace) -> axfr.TransferLimits:
    from agent.clients import axfr

    return axfr.TransferLimits(int(args.max_transfer_bytes), int(args.max_transfer_records))


def print_problems(items: Sequence[problems.Problem], root: pathlib.Path | str, out: TextIO,
                   *, quiet: bool = False, errors_only: bool = False) -> None:
    """Every problem as `file:line: ...`, the file under `root` (a directory, or a prefix such as
    `main:`)."""
    for p in problems.sorted_problems(items):
        if (quiet or errors_only) and p.severity is problems.Severity.WARNING:
            continue
        prefix = "warning: " if p.severity is problems.Severity.WARNING else ""
        if p.origin:
            where = root + p.origin.file if isinstance(root, str) else str(root / p.origin.file)
            p = problems.Problem(problems.Origin(where, p.origin.line), p.obj, p.path, p.message,
                                 p.severity)
        terminal.write(out, f"{prefix}{p}\n", "warning" if prefix else "error")


def policy_settings(args: argparse.Namespace) -> policy.PolicySettings:
    """The policy flags of validate, plan and sync (repeatable or comma-separated; unset: the
    defaults)."""
    from agent.desired import policy

    values: dict[str, Any] = {}
    for field in dataclasses.fields(policy.PolicySettings):
        value = getattr(args, field.name, None)
        values[field.name] = ",".join(value) if isinstance(value, list) else value
    try:
        return policy.PolicySettings.of(**values)
    except ValueError as exc:
        print(f"bindy-agent: error: {exc}", file=sys.stderr)
        raise SystemExit(Parser.usage_status) from exc


def percent(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole percentage") from None
    if not 0 <= number <= 100:
        raise argparse.ArgumentTypeError(f"{value!r} must be from 0 to 100")
    return number


def delete_threshold(args: argparse.Namespace) -> float:
    """The share of a zone's records one plan may delete unless forced, for `validate` (a DNSZone's
    annotation may only be stricter): --delete-threshold-percent, else the default, as the gate
    takes it (agent/gate/safety.py `Policy.of`), without importing the gate, which `validate` does
    not run."""
    threshold = getattr(args, "delete_threshold_percent", None)
    return names.DEFAULT_DELETE_THRESHOLD if threshold is None else threshold / 100


def default_namespace(args: argparse.Namespace) -> str:
    """--namespace, else the first allowed namespace: a CR without one lands where the agent may
    write."""
    given: str | None = getattr(args, "namespace", None)
    return given or policy_settings(args).default_namespace


def validate(files: Sequence[SourceFile], args: argparse.Namespace, *,
             progress: validation.Progress | None = None) -> validation.Validated:
    """One revision's files checked as a sync checks them, without a cluster: references to Secrets
    the agent does not generate are then warnings."""
    from agent.run import validation

    return validation.validate(files, default_namespace=default_namespace(args),
                               repo_policy=policy_settings(args),
                               delete_threshold=delete_threshold(args), limits=limits(args),
                               progress=progress or validation.quiet)


def kubeconfig(explicit: str | os.PathLike[str] | None) -> str | None:
    """The kubeconfig kubectl would use: the flag, $KUBECONFIG, or ~/.kube/config if it exists."""
    if explicit:
        return os.fspath(explicit)
    from_env = os.environ.get("KUBECONFIG", "")
    if from_env.strip(os.pathsep).strip():
        return from_env
    default = pathlib.Path.home() / ".kube" / "config"
    return str(default) if default.is_file() else None


def cluster_requested(args: argparse.Namespace) -> bool:
    """For verbs whose cluster is optional: asked for with --kubeconfig or --context."""
    return bool(getattr(args, "kubeconfig", None) or getattr(args, "context", None))


def kube_api(args: argparse.Namespace) -> Any:
    """A client for the cluster of `args` (see the module docstring); KubeError when there is
    none."""
    from agent.clients import kubeapi
    from agent.errors import KubeError
    path = kubeconfig(args.kubeconfig)
    if path is None and "KUBERNETES_SERVICE_HOST" not in os.environ:
        raise KubeError("no kubeconfig: give --kubeconfig FILE, set $KUBECONFIG, or create "
                        "~/.kube/config (inside a pod, its ServiceAccount is used)",
                        reason="config")
    scope = policy_settings(args).kube_scope()
    return kubeapi.KubeApi.from_kubeconfig(path, context=args.context, namespaces=scope)
