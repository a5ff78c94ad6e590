"""The flags several verbs share, and how every verb's help ends: its examples.

    directory()     DIR, -n/--namespace and the read limits (validate)
    guard()         the policy flags (validate, plan, sync)
    kube()          --kubeconfig, --context, --agent-namespace (the verbs that may reach a cluster)
    verbose()       -v/--verbose, accepted before and after the verb
    error_format()  --error-format text|github|gitlab and --error-report FILE (validate, plan)
    examples(...)   the `Examples:` epilog of a verb's --help
"""

from __future__ import annotations

import argparse
import pathlib

from agent.cli import common, settingflags
from agent.model import names

NAMESPACE_HELP = ("namespace for namespaced objects that name none (default: the first allowed "
                  f"namespace, {names.DEFAULT_NAMESPACE} unless --allowed-namespaces says "
                  f"otherwise)")


def add_namespace(parser: argparse.ArgumentParser | argparse._ArgumentGroup,
                  help_text: str = NAMESPACE_HELP) -> None:
    """-n/--namespace; unset (None), the first allowed namespace (common.default_namespace)."""
    parser.add_argument("-n", "--namespace", metavar="NS", help=help_text)


def alias(parser: argparse.ArgumentParser, flag: str, short: str) -> None:
    """`short` as another name of `flag` (a flag another module made: run's settings)."""
    action = parser._option_string_actions[flag]
    action.option_strings = [short, *action.option_strings]
    parser._option_string_actions[short] = action


def directory() -> argparse.ArgumentParser:
    """DIR, -n/--namespace and the read limits: the flags of the verbs that read a directory."""
    shared = common.Parser(add_help=False)
    shared.add_argument("directory", type=common.directory, metavar="DIR",
                        help="directory of CR YAML files (searched recursively)")
    add_namespace(shared)
    common.add_limit_flags(shared)
    return shared


def guard() -> argparse.ArgumentParser:
    guarded = common.Parser(add_help=False)
    settingflags.policy_flags(guarded)
    return guarded


def kube() -> argparse.ArgumentParser:
    """The flags of every verb that may reach a cluster."""
    options = common.Parser(add_help=False)
    options.add_argument("--kubeconfig", metavar="FILE", type=common.readable_file,
                         help="kubeconfig of the cluster (default, as kubectl: $KUBECONFIG, then "
                         "~/.kube/config - only where a cluster is the verb's one target, or with "
                         "--context)")
    options.add_argument("--context", help="kubeconfig context (default: the current one)")
    options.add_argument("--agent-namespace", default=names.DEFAULT_AGENT_NAMESPACE, metavar="NS",
                         help="namespace of the agent's inventory (default: %(default)s)")
    return options


def verbose(parser: argparse.ArgumentParser, *, after_verb: bool) -> None:
    """-v: before the verb it defaults to off; after it, it is set only when given (argparse copies
    a verb's values over the top-level ones, so a default there would undo a -v given before the
    verb)."""
    default = argparse.SUPPRESS if after_verb else False
    parser.add_argument("-v", "--verbose", action="store_true", default=default,
                        help="log debug details to stderr (and show the traceback of an internal "
                             "error)")


ERROR_FORMATS = ("text", "github", "gitlab")
CODE_QUALITY_REPORT = "gl-code-quality-report.json"


def error_format(parser: argparse.ArgumentParser) -> None:
    """--error-format and --error-report: problems as CI annotations."""
    group = parser.add_argument_group("problems as CI annotations")
    group.add_argument("--error-format", choices=ERROR_FORMATS, default="text",
                       help="how problems are reported: text lines on stderr (default); github: "
                       "workflow commands on stderr that GitHub Actions shows as annotations on "
                       "the files; gitlab: the text lines, and a Code Quality report written to "
                       "--error-report")
    group.add_argument("--error-report", type=pathlib.Path,
                       default=pathlib.Path(CODE_QUALITY_REPORT), metavar="FILE",
                       help="where --error-format gitlab writes its Code Quality report "
                       "(default: %(default)s; declare it as artifacts:reports:codequality)")


def examples(*lines: tuple[str, str]) -> str:
    """An `Examples:` epilog: each command under the comment that says what it does."""
    body = "\n".join(f"  # {what}\n  {command}\n" for what, command in lines)
    return "Examples:\n" + body.rstrip("\n")
