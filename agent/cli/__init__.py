"""The `bindy-agent` command line. The only module that prints.

    bindy-agent validate DIR               exit 0 valid, 1 invalid, 2 usage error
    bindy-agent plan DIR [--output FMT]    exit 0 no changes, 1 changes, 2 error (like `flux diff`)
    bindy-agent plan [DIR] --base REV [--head REV] | DIR --base-dir OLD
                                           the delta a pull request makes: exit 0 no changes,
                                           2 changes, 1 error (`terraform plan -detailed-exitcode`)
    bindy-agent schemas [--check]          write (or check) schemas/ from the models
    bindy-agent install-crds [--kubeconfig F]    apply the CRDs, wait until Established
    bindy-agent sync DIR --kubeconfig F [--dry-run]
                                           exit 0 applied/nothing to do, 1 partial,
                                           2 rejected (invalid), 3 could not run
    bindy-agent import --zone Z --server HOST:PORT   CR YAML from a live zone (AXFR)
    bindy-agent import --zone Z --zone-file FILE     CR YAML from a zone file
    bindy-agent export DIR --output-dir OUT          one zone file per DNSZone

Problems go to stderr as `file:line: Kind/ns/name: field.path: message`; the plan goes to stdout.
No traceback reaches a user: bad input is a message and an exit status (a bug still says so, and
`-v` shows its traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import pathlib
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from agent import __version__
from agent.cli import common, settingflags, terminal
from agent.model import names
from agent.run import collector


def _shared() -> argparse.ArgumentParser:
    """DIR, --namespace and the read limits: the flags of the verbs that read a directory."""
    shared = common.Parser(add_help=False)
    shared.add_argument("directory", type=common.directory, metavar="DIR",
                        help="directory of CR YAML files (searched recursively)")
    shared.add_argument("--namespace", metavar="NS", help=common.NAMESPACE_HELP)
    common.add_limit_flags(shared)
    return shared


def _guard() -> argparse.ArgumentParser:
    guard = common.Parser(add_help=False)
    settingflags.policy_flags(guard)
    return guard


AddVerb = Callable[..., argparse.ArgumentParser]  # verbs.add_parser with the verb's name and one-line help


def _validate_verb(add: AddVerb) -> None:
    """validate DIR"""
    from agent.cli import offline

    v = add(parents=[_shared(), _guard()],
            description="Parse and validate every YAML document below DIR; report every "
            "problem with file:line. Exit 0 valid, 1 invalid, 2 usage error.")
    v.set_defaults(func=offline.validate)
    v.add_argument("-q", "--quiet", action="store_true", help="do not print warnings")


def _kube_options() -> argparse.ArgumentParser:
    """The flags of every verb that may reach a cluster."""
    kube = common.Parser(add_help=False)
    kube.add_argument("--kubeconfig", metavar="FILE", type=common.readable_file,
                      help="kubeconfig of the cluster (default, as kubectl: $KUBECONFIG, then ~/.kube/config - "
                      "only where a cluster is the verb's one target, or with --context)")
    kube.add_argument("--context", help="kubeconfig context (default: the current one)")
    kube.add_argument("--agent-namespace", default=names.DEFAULT_AGENT_NAMESPACE, metavar="NS",
                      help="namespace of the agent's inventory (default: %(default)s)")
    return kube


def _plan_verb(add: AddVerb) -> None:
    """plan DIR, or the delta of a pull request"""
    from agent.cli import plan as plan_verb

    p = add(parents=[_kube_options(), _guard()],
            description="Compute the plan for DIR. Offline (without --kubeconfig or --context; a "
            "kubeconfig in $KUBECONFIG or ~/.kube/config is not used unless asked for), the world is "
            "empty, so the plan lists every Kubernetes object, every zone on every instance and every "
            "RRset. With --kubeconfig or --context, the Kubernetes layer is diffed against the live "
            "cluster (creates, field-level updates, drift, deletes, conflicts) and gated as a sync "
            "gates it (refusals are shown). With --base REV or --base-dir DIR: the delta from that "
            "base to the head (--head REV, or DIR), offline, as a pull-request comment with "
            "-o markdown. The two exit differently (below).",
            epilog=plan_verb.EXIT_STATUS, formatter_class=common.KeepBrokenLines)
    p.set_defaults(func=plan_verb.show_plan)
    plan_verb.add_arguments(p)
    common.add_limit_flags(p)


def _sync_verb(add: AddVerb) -> None:
    """sync DIR or --repo URL"""
    from agent.cli import sync

    sy = add(parents=[_kube_options(), _guard()],
             description="Validate a revision as a whole, then apply it: CRDs (unless "
             "--no-install-crds), the hierarchy of objects with server-side apply, prune of what the "
             "agent created and Git no longer has, zones and records (with --endpoints or "
             "--in-cluster-dns), and CR status. With --repo, the revision comes from Git and a "
             "report is attached to the commit as a git note. Exit 0 applied or nothing to do, "
             "1 partial, 2 rejected (invalid or unsafe), 3 could not run.")
    sy.set_defaults(func=sync.sync)
    sy.add_argument("directory", type=common.directory, metavar="DIR", nargs="?",
                    help="directory of CR YAML files (or use --repo)")
    sy.add_argument("--namespace", metavar="NS", help=common.NAMESPACE_HELP)
    sy.add_argument("--dry-run", action="store_true", help="plan against the live world; write nothing")
    sy.add_argument("--no-install-crds", dest="install_crds", action="store_false",
                    help="do not apply the CRDs first")
    sy.add_argument("--rotate-rndc-keys", action="store_true",
                    help="generate new RNDC keys for every generated key Secret")
    sy.add_argument("--endpoints", type=common.readable_file, metavar="FILE",
                    help="instance -> DNS/zone API/key map (see agent/clients/endpoints.py); enables the DNS steps")
    sy.add_argument("--in-cluster-dns", action="store_true",
                    help="reach instances through their Services and RNDC Secrets (when the agent runs in "
                    "the cluster); instead of --endpoints")
    sy.add_argument("--state", type=pathlib.Path, metavar="DIR",
                    help="where the agent keeps what it owns in DNS, for runs without a cluster (a directory; a "
                    "state file of an earlier version there is converted; default: "
                    "~/.cache/bindy-agent/state/<source digest>)")
    sy.add_argument("--force", action="store_true",
                    help="apply plans the safety gate refuses (mass deletes, whole-zone deletes, apex NS changes, "
                    "large Kubernetes prunes)")
    sy.add_argument("--allow-prune", action="store_true",
                    help="allow deleting more than 30%% of the Kubernetes objects the agent manages (only that)")
    sy.add_argument("--create-namespaces", action="store_true",
                    help="create missing namespaces (by default the agent never writes namespaces)")
    sy.add_argument("--deadline", type=common.seconds, default=names.DEFAULT_DEADLINE, metavar="SECONDS",
                    help="the most a run may take; a stalled server ends it as partial (0: no limit; "
                    "default: %(default)s)")
    sy.add_argument("--lock-wait", type=common.seconds, default=names.DEFAULT_LOCK_WAIT, metavar="SECONDS",
                    help="how long to wait for another sync of the same source to finish (default: %(default)s)")
    sy.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default=None,
                    help="the least important log lines written to stderr (default: warning; -v: debug)")
    sy.add_argument("--batch", type=common.positive, default=1000, metavar="N",
                    help="changes per DNS UPDATE message (default: %(default)s)")
    common.add_limit_flags(sy)
    common.add_transfer_flags(sy)
    _git_flags(sy)
    sync.add_arguments(sy)  # run's settings of the same names: commit statuses, alerts, the zone API token


def _git_flags(sy: argparse.ArgumentParser) -> None:
    """where sync finds the Git revision"""
    git_args = sy.add_argument_group("Git source")
    git_args.add_argument("--repo", metavar="URL", type=common.git_operand("the repository"),
                          help="Git repository (URL or local path) instead of DIR")
    git_args.add_argument("--branch", default="main", type=common.git_operand("the branch"),
                          help="branch to follow (default: %(default)s)")
    git_args.add_argument("--ref", type=common.git_operand("the ref"),
                          help="pin a tag or commit instead of following the branch")
    git_args.add_argument("--path", default="", help="sub-directory of the repository holding the CRs")
    git_args.add_argument("--cache", type=pathlib.Path, default=names.GIT_CACHE,
                          help="where the clone is kept (default: %(default)s)")
    git_args.add_argument("--ssh-key", type=common.readable_file, metavar="FILE", help="SSH deploy key")
    git_args.add_argument("--known-hosts", type=common.readable_file, metavar="FILE",
                          help="known_hosts for the SSH key")
    git_args.add_argument("--insecure-ignore-host-key", action="store_true",
                          help="do not check the Git server's SSH host key (not recommended)")
    git_args.add_argument("--token-file", type=common.readable_file, metavar="FILE",
                          help="HTTPS token, read from a file; sent as Basic auth with the user x-access-token "
                          "(GitHub, GitLab, Gitea), or write 'user:token' in the file for another user")
    git_args.add_argument("--no-push-notes", dest="push_notes", action="store_false",
                          help="keep the commit reports local instead of pushing refs/notes/bindy-agent")
    settingflags.report_key_flag(git_args, "signs each commit report (HMAC-SHA256)")
    git_args.add_argument("--resync-after", type=common.seconds, default=names.DEFAULT_RESYNC_AFTER,
                          metavar="SECONDS",
                          help="an unchanged revision is a no-op until this long after the last full "
                          "reconcile (default: %(default)s)")


def _run_verb(add: AddVerb) -> None:
    """the long-running agent"""
    from agent.cli import run
    from agent.run import settings as config

    rn = add(description="Sync a Git repository on an interval and on signed push webhooks; serve "
             "/healthz, /readyz, /metrics and POST /hooks/git. Settings come from flags, then "
             "BINDY_AGENT_* environment variables, then --config FILE. SIGTERM finishes the "
             "current run and exits.")
    rn.set_defaults(func=run.run)
    rn.add_argument("--config", type=common.readable_file, metavar="FILE", help="YAML file of settings")
    rn.add_argument("--print-config", action="store_true", help="print the effective settings and exit")
    for name, field in config.Settings.model_fields.items():
        settingflags.setting_flag(rn, name, field)


def _report_verb(add: AddVerb) -> None:
    """the report on a commit"""
    from agent.cli import sync

    rp = add(description="Fetch refs/notes/bindy-agent from the repository and print the report on "
             "REV (default: the head of --branch), checking its signature with --report-key-file. "
             "Exit 0 shown and verified, 1 no report, 2 unknown revision, 3 could not run, 4 shown "
             "but UNVERIFIED (no --report-key-file, no or a wrong signature, or a malformed note: "
             "the first line says why).")
    rp.set_defaults(func=sync.report)
    rp.add_argument("revision", nargs="?", metavar="REV",
                    help="a commit (full or abbreviated SHA), branch or tag (default: the head of --branch)")
    rp.add_argument("--repo", required=True, metavar="URL", type=common.git_operand("the repository"),
                    help="Git repository (URL or local path)")
    rp.add_argument("--branch", default="main", type=common.git_operand("the branch"),
                    help="branch whose head is shown by default")
    rp.add_argument("-o", "--output", choices=["text", "json"], default="text")
    rp.add_argument("--cache", type=pathlib.Path, default=names.GIT_CACHE)
    for name in ("ref", "ssh_key", "known_hosts", "token_file"):
        rp.set_defaults(**{name: None})
    rp.set_defaults(path="", insecure_ignore_host_key=False)
    rp.add_argument("--ssh-key", type=common.readable_file, metavar="FILE", help="SSH deploy key")
    rp.add_argument("--known-hosts", type=common.readable_file, metavar="FILE", help="known_hosts for the SSH key")
    rp.add_argument("--token-file", type=common.readable_file, metavar="FILE",
                    help="HTTPS token (or 'user:token'), read from a file; sent as Basic auth")
    settingflags.report_key_flag(rp, "checks that the agent wrote the report")


def _install_crds_verb(add: AddVerb) -> None:
    """install-crds"""
    from agent.cli import sync

    ic = add(parents=[_kube_options()],
             description="Apply the 12 CRDs generated from the models (schemas/crds) and wait "
             "until the API server serves them. The cluster: --kubeconfig, else $KUBECONFIG, else "
             "~/.kube/config, as kubectl finds it. Exit 0 done, 3 could not run.")
    ic.set_defaults(func=sync.install_crds)


def _suspend_verb(add: AddVerb, *, on: bool) -> None:
    """suspend, resume"""
    from agent.cli import sync

    sp = add(parents=[_kube_options()],
             description=("Suspend" if on else "Resume") + " the agent's runs: sets (or removes) "
             f"the annotation {names.SUSPEND_ANNOTATION}: \"true\" on its state ConfigMap in "
             "--agent-namespace (or, with --state DIR, a mark in that directory). While suspended, "
             "runs read and write nothing. Exit 0 done, 3 could not run.")
    sp.set_defaults(func=sync.suspend, suspend=on)
    sp.add_argument("--state", type=pathlib.Path, metavar="DIR", help="the state directory of runs without a "
                    "cluster")


def _schemas_verb(add: AddVerb) -> None:
    """schemas"""
    from agent.cli import offline

    s = add(description="Write schemas/json/<Kind>.json, schemas/crds/<crd>.yaml and "
            "schemas/crds/kustomization.yaml from the models. With --check, write nothing and "
            "exit 1 if they differ.")
    s.set_defaults(func=offline.schemas)
    s.add_argument("--dir", type=pathlib.Path, default=offline.DEFAULT_SCHEMAS, metavar="DIR",
                   help="output directory (default: %(default)s)")
    s.add_argument("--check", action="store_true", help="exit 1 if the files differ from the models")


def _export_verb(add: AddVerb) -> None:
    """zone files of a directory"""
    from agent.cli import export

    ex = add(parents=[_shared(), _guard()], description=export.DESCRIPTION)
    ex.set_defaults(func=export.run)
    export.add_arguments(ex)


def _import_verb(add: AddVerb) -> None:
    """import a live zone"""
    from agent.cli import importzone

    im = add(description=importzone.DESCRIPTION)
    im.set_defaults(func=importzone.run)
    importzone.add_arguments(im)


# Every verb, in the order --help lists them: its one-line help, and what adds the rest of it (its
# description and flags). Only the verb a command line names gets the rest, so that building the
# parser imports that verb's modules and no other's.
VERBS: dict[str, tuple[str, Callable[[AddVerb], None]]] = {
    "validate": ("check a directory of CRs", _validate_verb),
    "plan": ("show what a sync would change (dry run), or what a pull request changes", _plan_verb),
    "sync": ("apply a directory or a Git repository", _sync_verb),
    "run": ("the long-running agent: scheduled syncs, webhook, health, metrics", _run_verb),
    "report": ("print the report the agent attached to a commit", _report_verb),
    "install-crds": ("apply the CRDs and wait until Established", _install_crds_verb),
    "suspend": ("stop the agent's runs", functools.partial(_suspend_verb, on=True)),
    "resume": ("restart the agent's runs", functools.partial(_suspend_verb, on=False)),
    "schemas": ("write the JSON Schemas and CRDs generated from the models", _schemas_verb),
    "import": ("write CR YAML from a live zone (AXFR) or a zone file, to adopt it", _import_verb),
    "export": ("write a directory's zones as zone files", _export_verb),
}


def verb_of(argv: Sequence[str]) -> str | None:
    """The verb a command line names: its first word that is not an option (bindy-agent's own options,
    -h, --version and -v, take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def _parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser of `argv`: every verb with its one-line help, and the flags of the verb `argv` names."""
    parser = common.Parser(prog="bindy-agent", description="GitOps agent for Bindy DNS custom resources: "
                     "validates a repository of bindy.firestoned.io/v1beta1 CRs and plans or applies "
                     "them to Kubernetes and BIND9.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details to stderr")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=common.Parser)
    verbs.required = True
    named = verb_of(argv)
    for name, (summary, build) in VERBS.items():
        add = functools.partial(verbs.add_parser, name, help=summary)
        if name == named:
            build(add)
        else:
            add()
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Every verb, with sys.stderr escaped: nothing a repository wrote drives the terminal (agent/cli/terminal.py)."""
    with contextlib.redirect_stderr(terminal.escaped(sys.stderr)):
        return _main(argv)


ENDS_AT_ONCE = ("validate", "plan")
"""Verbs that leave nothing behind them when they return (no thread, no exit handler, no file to close):
their process ends as soon as its output is flushed (`entry`)."""


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
        except (OSError, ValueError):  # a closed or broken stream: the interpreter reports it as it would
            pass
        else:
            os._exit(status)
    sys.exit(status)


def _usage_status(argv: Sequence[str]) -> int:
    """The exit status of a usage error: `plan --base` exits 1 on any error (agent/cli/plan.py)."""
    if verb_of(argv) != "plan":
        return common.EXIT_ERROR
    from agent.cli import plan as plan_verb

    return plan_verb.DELTA_ERROR if plan_verb.is_delta(argv) else common.EXIT_ERROR


UNLOGGED = ("validate", "schemas")
"""Verbs whose code logs nothing (their output is what they print): logging is not even imported for them
unless -v asks, a pre-commit hook's `validate` starting the sooner (bench/cli_startup_bench.py)."""


def _log_to_stderr(args: argparse.Namespace) -> None:
    import logging

    level = {"debug": logging.DEBUG, "info": logging.INFO, "error": logging.ERROR}.get(
        getattr(args, "log_level", None) or "", logging.WARNING)  # sync --log-level (run checks its own)
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
    except OSError as exc:  # the machine refused: a full disk, a directory that cannot be written, ...
        print(f"bindy-agent {args.verb}: error: {exc.strerror or exc}"
              + (f": {exc.filename}" if exc.filename else ""), file=sys.stderr)
        return common.EXIT_UNREACHABLE if args.verb in ("sync", "install-crds", "report", "run", "import") \
            else common.Parser.usage_status
    except Exception as exc:  # the loop boundary of a command line: a bug, told as one
        if args.verbose:
            raise
        print(f"bindy-agent {args.verb}: internal error: {type(exc).__name__}: {exc} (a bug; run again with -v "
              "for the traceback, and report it)", file=sys.stderr)
        return 70
