"""`bindy-agent plan`: what one revision would change, or what a pull request changes.

One revision is planned offline, or, with a cluster, by the orchestrator's own planning: the plan
of its Kubernetes layer that `sync --dry-run` shows, refusals of the safety gate included. A delta
compares two revisions (agent/cli/plandelta.py).

    plan DIR                                   one revision
    plan DIR --base-dir OLD                    the delta OLD -> DIR
    plan [DIR] --base REV [--head REV]         the delta REV -> REV (or -> DIR)
    plan --repo URL --base REV --head REV      the same from a remote

Exit status, one convention for all of them: 0 planned (changes or none), 1 error (usage, an invalid
revision, Git or the cluster). With --detailed-exitcode, as `terraform plan -detailed-exitcode`: 0
no changes, 1 error, 2 changes. Invalid input still yields a whole JSON or Markdown document on
stdout, with the errors; the text form prints them on stderr only.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import sys

from agent.cli import annotate, common, flagsets, links, progress, terminal
from agent.errors import AgentError
from agent.model import names, problems
from agent.plan import render
from agent.plan.changes import Plan
from agent.run import collector, validation
from agent.sources import localdir

EXIT_OK, EXIT_FAILED, EXIT_CHANGES = 0, 1, 2  # 2 only with --detailed-exitcode
DESCRIPTION = (
    "Compute the plan for DIR. Offline (without --kubeconfig or --context; a kubeconfig in "
    "$KUBECONFIG or ~/.kube/config is not used unless asked for), the world is empty, so the plan "
    "lists every Kubernetes object, every zone on every instance and every RRset. With "
    "--kubeconfig or --context, the Kubernetes layer is diffed against the live cluster (creates, "
    "field-level updates, drift, deletes, conflicts) and gated as a sync gates it (refusals are "
    "shown). With --base REV or --base-dir DIR: the delta from that base to the head (--head REV, "
    "or DIR), offline, as a pull-request comment with -o markdown.")
EPILOG = "\n".join([
    "Exit status: 0 planned, with or without changes; 1 error (usage, an invalid revision, "
    "Git, the",
    "cluster). With --detailed-exitcode (as terraform plan): 0 no changes, 1 error, 2 changes.",
    "",
    flagsets.examples(
        ("every object, zone and RRset the directory makes (offline)", "bindy-agent plan dns/"),
        ("what this branch changes against main, as a pull-request comment",
         "bindy-agent plan dns/ --base origin/main -o markdown"),
        ("two commits of the repository, without a checkout of either",
         "bindy-agent plan --repo https://git.example.com/dns.git --base main --head pr-12 --path "
         "dns"),
        ("against the live cluster, as `sync --dry-run` plans it",
         "bindy-agent plan dns/ --context prod"),
        ("in a script: exit 2 when there are changes",
         "bindy-agent plan dns/ --detailed-exitcode"))])


def build(add: common.AddVerb) -> None:
    p = add(parents=[flagsets.kube(), flagsets.guard()], description=DESCRIPTION, epilog=EPILOG)
    p.set_defaults(func=show_plan)
    add_arguments(p)
    common.add_limit_flags(p)
    flagsets.error_format(p)


def status(args: argparse.Namespace, plan: Plan) -> int:
    """0 planned; 2 changes with --detailed-exitcode."""
    return EXIT_CHANGES if args.detailed_exitcode and not plan.empty else EXIT_OK


def emit(plan: Plan, args: argparse.Namespace) -> None:
    """The plan on stdout, written as it is rendered (the document is never held whole), coloured on
    a terminal. A reader that stops early (`plan -o json | head`) ends the output quietly."""
    out = terminal.plan_stream(sys.stdout) if args.output == "text" else sys.stdout
    try:
        for chunk in render.chunks(plan, args.output):
            out.write(chunk)
        out.flush()
    except BrokenPipeError:
        _discard_stdout()


def _discard_stdout() -> None:
    """Points stdout at /dev/null, so what is still buffered is not written again to the closed pipe
    at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def invalid(args: argparse.Namespace, plan: Plan) -> None:
    """An invalid revision: the errors went to stderr; JSON and Markdown still get a whole
    document."""
    if args.output != "text":
        emit(plan, args)


def show_plan(args: argparse.Namespace) -> int:
    if args.base is not None or args.base_dir is not None:
        from agent.cli import plandelta

        return plandelta.show_delta(args)
    usage = _single_usage(args)
    if usage:
        print(f"bindy-agent plan: error: {usage}", file=sys.stderr)
        return EXIT_FAILED
    report = progress.Reporter.for_stderr()
    try:
        planned = _planned(args, report)
    except AgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        report.done()
    validated, plan, error = planned
    found = validated.problems
    annotate.report(found, args.directory, args)
    if not validated.ok:
        print(f"{args.directory}: invalid: nothing planned ({len(problems.errors(found))} errors)",
              file=sys.stderr)
        invalid(args, Plan([], found, invalid=("revision",)))
        return EXIT_FAILED
    if plan is None:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED
    where = {links.HEAD: links.directory(args.directory, localdir.revision(args.directory))} \
        if args.output == "markdown" and args.link_base else {}
    assert validated.desired is not None
    plan = dataclasses.replace(plan, sources=links.sources(args, validated.desired, None, where))
    emit(plan, args)
    return status(args, plan)


def _single_usage(args: argparse.Namespace) -> str | None:
    if args.directory is None:
        return "give DIR (or --base REV / --base-dir DIR to compare two revisions)"
    extra = [flag for flag, value in (("--head", args.head), ("--repo", args.repo),
                                      ("--path", args.path)) if value]
    return f"{', '.join(extra)} only go with --base REV" if extra else None


# the revision checked, its plan, why none
Planned = tuple[validation.Validated, Plan | None, str | None]


def _planned(args: argparse.Namespace, report: validation.Progress) -> Planned:
    """Offline unless a cluster is asked for (a kubeconfig in the environment never makes it
    online): against the empty world, every object, zone and RRset is a create. Against a cluster,
    the plan a `sync --dry-run` makes, by the orchestrator's own planning: its Kubernetes layer,
    gated."""
    if not common.cluster_requested(args):
        validated = common.validate(localdir.files(args.directory), args, progress=report)
        return validated, _offline(validated), None
    # only online: the offline plan never loads the cluster's clients
    from agent.model.scope import ALL
    from agent.run import compose, planner
    from agent.run import options as run_options

    # as a sync builds it; its store is read only with zone endpoints
    built = compose.build(compose.Request(
        run_options.of({**vars(args), "dry_run": True}, common.policy_settings(args)),
        directory=args.directory, limits=common.limits(args), cluster=True,
        kubeconfig=common.kubeconfig(args.kubeconfig), context=args.context))
    planned = planner.plan(built.source.snapshot(), ALL, planner.WHOLE,
                           planner.Planning(built.targets, built.options, progress=report))
    return planned.validated, planned.plan, planned.error


def _offline(validated: validation.Validated) -> Plan | None:
    """`planner.offline` without importing a run's planning (its clients, TLS and Git: 10 MB and a
    fifth of a second of every offline plan): the valid revision against the empty world."""
    if not validated.ok or validated.desired is None:
        return None
    from agent.plan import build

    with collector.long_lived():
        return build.offline(validated.desired)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """plan's own flags (besides --kubeconfig, --context and --agent-namespace, shared with
    sync)."""
    p.add_argument("directory", type=common.directory, metavar="DIR", nargs="?",
                   help="directory of CR YAML files (searched recursively); with --base, the head "
                   "(its files as they are on disk, or with --head the directory's path inside the "
                   "repository)")
    flagsets.add_namespace(p)
    p.add_argument("-o", "--output", choices=render.FORMATS, default="text",
                   help="plan format (default: %(default)s); markdown fits a pull-request comment")
    links.add_flag(p)
    p.add_argument("--detailed-exitcode", action="store_true",
                   help="exit 0 with no changes, 1 on error, 2 with changes (as terraform plan)")
    d = p.add_argument_group("delta (what a pull request changes)")
    d.add_argument("--base", metavar="REV",
                   help="the revision to compare against: a branch, tag or commit")
    d.add_argument("--head", metavar="REV",
                   help="the revision compared (default: DIR's files on disk)")
    d.add_argument("--base-dir", type=common.directory, metavar="DIR",
                   help="compare DIR with this directory")
    d.add_argument("--repo", metavar="URL", type=common.git_operand("the repository"),
                   help="a remote (or the path of a repository) instead of the work "
                   "tree holding DIR")
    d.add_argument("--path", default="", metavar="P",
                   help="directory of CRs inside the repository (default: DIR's, or the top)")
    d.add_argument("--cache", type=pathlib.Path, default=names.CACHE_DIR / "git-plan",
                   metavar="DIR", help="where a --repo clone is kept (default: %(default)s)")
    d.add_argument("--ssh-key", type=common.readable_file, metavar="FILE",
                   help="SSH deploy key for --repo")
    d.add_argument("--known-hosts", type=common.readable_file, metavar="FILE",
                   help="known_hosts for the SSH key")
    d.add_argument("--insecure-ignore-host-key", action="store_true",
                   help="do not check the Git server's SSH host key (not recommended)")
    d.add_argument("--token-file", type=common.readable_file, metavar="FILE",
                   help="HTTPS token for --repo, read from a file")
