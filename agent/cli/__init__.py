"""The `bindy-agent` command line. Each verb is one module of this package (its flags, its help,
what it does); this one builds the parser of the verb a command line names and runs it.

    bindy-agent validate DIR               exit 0 valid, 1 invalid, 2 usage error
    bindy-agent plan DIR                   exit 0 planned, 1 error (--detailed-exitcode: 2 changes)
    bindy-agent plan [DIR] --base REV [--head REV] | DIR --base-dir OLD
                                           the delta a pull request makes, with the same exit status
    bindy-agent ci-plan DIR                the delta of a pull/merge request, as one comment on it
    bindy-agent schemas [--check]          write (or check) schemas/ from the models
    bindy-agent install-crds [--kubeconfig F]    apply the CRDs, wait until Established
    bindy-agent sync DIR --kubeconfig F [--dry-run]
                                           exit 0 applied/nothing to do, 1 partial,
                                           2 rejected (invalid), 3 could not run
    bindy-agent import --zone Z --server HOST:PORT   CR YAML from a live zone (AXFR)
    bindy-agent import --zone Z --zone-file FILE     CR YAML from a zone file
    bindy-agent export DIR --output-dir OUT          one zone file per DNSZone
    bindy-agent version | completion SHELL

Problems go to stderr as `file:line: Kind/ns/name: field.path: message`; the plan goes to stdout.
No traceback reaches a user: bad input is a message and an exit status (a bug still says so, and
`-v` shows its traceback). On a terminal, errors are red and a plan's + ~ - are coloured (not with
NO_COLOR set, nor into a pipe or a file).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from agent import __version__
from agent.cli import common, envflags, flagsets, terminal
from agent.run import collector

# Every verb, in the order --help lists them: its one-line help, and the module that adds the rest
# of it (its description, flags and examples: `build(add)`, and keyword arguments of build). Only
# the verb a command line names gets the rest, so that building the parser imports that verb's
# modules and no other's.
VERBS: dict[str, tuple[str, str, dict[str, bool]]] = {
    "validate": ("check a directory of CRs", "validate", {}),
    "plan": ("show what a sync would change (dry run), or what a pull request changes", "plan", {}),
    "ci-plan": ("comment on a pull/merge request what it changes (GitHub Actions, GitLab CI)",
                "ciplan", {}),
    "sync": ("apply a directory or a Git repository", "sync", {}),
    "run": ("the long-running agent: scheduled syncs, webhook, health, metrics", "run", {}),
    "report": ("print the report the agent attached to a commit", "report", {}),
    "install-crds": ("apply the CRDs and wait until Established", "installcrds", {}),
    "suspend": ("stop the agent's runs", "suspend", {"on": True}),
    "resume": ("restart the agent's runs", "suspend", {"on": False}),
    "schemas": ("write the JSON Schemas and CRDs generated from the models", "schemas", {}),
    "import": ("write CR YAML from a live zone (AXFR) or a zone file, to adopt it", "importzone",
               {}),
    "export": ("write a directory's zones as zone files", "export", {}),
    "version": ("print the version, the commit it was built from and the CRD API version",
                "version", {}),
    "completion": ("print the shell completion script of bash, zsh or fish", "completion", {}),
}
EXAMPLES = flagsets.examples(
    ("check a directory of CRs, then see everything it would create",
     "bindy-agent validate dns/ && "
     "bindy-agent plan dns/"),
    ("what a branch changes against main", "bindy-agent plan dns/ --base origin/main"),
    ("the flags of one verb", "bindy-agent plan --help"),
    ("completion in the current bash", "source <(bindy-agent completion bash)"))


def verb_of(argv: Sequence[str]) -> str | None:
    """The verb a command line names: its first word that is not an option (bindy-agent's own
    options,
    -h, --version and -v, take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_verb(verb: str, add: common.AddVerb) -> argparse.ArgumentParser:
    """Adds `verb` with its description, flags and examples; the parser it made."""
    _, module, options = VERBS[verb]
    made: list[argparse.ArgumentParser] = []

    def adding(**kwargs: object) -> argparse.ArgumentParser:
        kwargs.setdefault("formatter_class", common.KeepBrokenLines)
        made.append(add(**kwargs))
        return made[-1]

    importlib.import_module(f"agent.cli.{module}").build(adding, **options)
    flagsets.verbose(made[0], after_verb=True)
    envflags.apply(made[0], verb)
    return made[0]


def _parser(argv: Sequence[str] = (), *, every_verb: bool = False) -> argparse.ArgumentParser:
    """The parser of `argv`: every verb with its one-line help, and the flags of the verb `argv`
    names (of every verb with `every_verb`, for the completion scripts)."""
    parser = common.Parser(prog="bindy-agent",
                           description="GitOps agent for Bindy DNS custom resources: "
                           "validates a repository of bindy.firestoned.io/v1beta1 CRs and plans or "
                           "applies them to Kubernetes and BIND9.", epilog=EXAMPLES,
                           formatter_class=common.KeepBrokenLines)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    flagsets.verbose(parser, after_verb=False)
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=common.Parser)
    verbs.required = True
    named = verb_of(argv)
    for name, (summary, _, _) in VERBS.items():
        add = functools.partial(verbs.add_parser, name, help=summary)
        if name == named or every_verb:
            build_verb(name, add)
        else:
            add()
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Every verb, with sys.stderr escaped: nothing a repository wrote drives the terminal
    (agent/cli/terminal.py)."""
    with contextlib.redirect_stderr(terminal.escaped(sys.stderr)):
        return _main(argv)


ENDS_AT_ONCE = ("validate", "plan")
"""Verbs that leave nothing behind them when they return (no thread, no exit handler, no file to
close): their process ends as soon as its output is flushed (`entry`)."""


def entry() -> NoReturn:
    """The process `bindy-agent` and `python -m agent` run: `main`, then exit with its status.

    After `validate` or `plan` (ENDS_AT_ONCE), stdout and stderr are flushed and the process ends
    without the interpreter's teardown, which would free every object of the revision one at a time
    and collect the garbage once more: nothing a user sees, but 2-3% of the CPU time of a large
    `validate` (0.1 s of 4.9 s at 30,000 records). Any other verb, a usage error, and an output that
    cannot be flushed exit the usual way. `main` itself never ends the process."""
    argv = sys.argv[1:]
    status = main(argv)
    if verb_of(argv) in ENDS_AT_ONCE:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        # a closed or broken stream: the interpreter reports it as it would
        except (OSError, ValueError):
            pass
        else:
            os._exit(status)
    sys.exit(status)


def _usage_status(argv: Sequence[str]) -> int:
    """The exit status of a usage error: 1 for `plan` and `ci-plan`, whose every error is 1; else
    2."""
    return 1 if verb_of(argv) in ("plan", "ci-plan") else common.EXIT_ERROR


UNLOGGED = ("validate", "schemas", "version", "completion")
"""Verbs whose code logs nothing (their output is what they print): logging is not even imported
for them unless -v asks, a pre-commit hook's `validate` starting the sooner
(bench/cli_startup_bench.py)."""


def _log_to_stderr(args: argparse.Namespace) -> None:
    import logging

    level = {"debug": logging.DEBUG, "info": logging.INFO, "error": logging.ERROR}.get(
        # sync --log-level (run checks its own)
        getattr(args, "log_level", None) or "", logging.WARNING)
    logging.basicConfig(level=logging.DEBUG if args.verbose else level,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    collector.tune()
    common.Parser.usage_status = _usage_status(argv)
    args = _parser(argv).parse_args(argv)
    if args.verb not in UNLOGGED or args.verbose:
        _log_to_stderr(args)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("bindy-agent: interrupted", file=sys.stderr)
        return 130
    # the machine refused: a full disk, a directory that cannot be written, ...
    except OSError as exc:
        print(f"bindy-agent {args.verb}: error: {exc.strerror or exc}"
              + (f": {exc.filename}" if exc.filename else ""), file=sys.stderr)
        return common.EXIT_UNREACHABLE if args.verb in ("sync", "install-crds", "report", "run",
                                                        "import") \
            else common.Parser.usage_status
    except Exception as exc:  # the loop boundary of a command line: a bug, told as one
        if args.verbose:
            raise
        print(f"bindy-agent {args.verb}: internal error: {type(exc).__name__}: {exc} (a bug; run "
              "again with -v for the traceback, and report it)", file=sys.stderr)
        return 70
