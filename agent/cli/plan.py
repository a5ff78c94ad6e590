"""`bindy-agent plan`: what one revision would change, or what a pull request changes.

One revision is planned offline, or, with a cluster, by the orchestrator's own planning: the plan
of its Kubernetes layer that `sync --dry-run` shows, refusals of the safety gate included. A delta
compares two revisions.

    plan DIR                                   exit 0 no changes, 1 changes, 2 error (like `flux diff`)
    plan DIR --base-dir OLD                    the delta OLD -> DIR             \\
    plan [DIR] --base REV [--head REV]         the delta REV -> REV (or -> DIR)  } exit 0 no changes, 2 changes,
    plan --repo URL --base REV --head REV      the same from a remote          /  1 error (`terraform plan
                                                                                   -detailed-exitcode`)

A delta never reaches a cluster or a DNS server: base is planned against an empty world, head
against the world base leaves (agent/plan/delta.py). Invalid input still yields a whole JSON or
Markdown document on stdout, with the errors; the text form prints them on stderr only.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agent.cli import common, links, progress
from agent.errors import AgentError
from agent.model import names, problems
from agent.plan import locate, render
from agent.plan.changes import Plan
from agent.run import collector, validation
from agent.sources import localdir

if TYPE_CHECKING:  # the rest only for a delta or a cluster: an offline plan needs no client, Git or gate (10 MB)
    from agent.desired.hierarchy import Desired
    from agent.load.sourcefile import SourceFile
    from agent.sources import gitrevs

DELTA_OK, DELTA_ERROR, DELTA_CHANGES = 0, 1, 2  # terraform plan -detailed-exitcode
EXIT_STATUS = "\n".join([
    f"{'exit status:':<26}no changes  changes  error",
    f"  {'plan DIR':<24}{common.EXIT_OK:>10}{common.EXIT_CHANGES:>9}{common.EXIT_ERROR:>7}",
    f"  {'plan --base/--base-dir':<24}{DELTA_OK:>10}{DELTA_CHANGES:>9}{DELTA_ERROR:>7}",
    "1 means changes for plan DIR (like `flux diff`) but an error for the delta",
    "(like `terraform plan -detailed-exitcode`)."])


def is_delta(argv: Sequence[str]) -> bool:
    """Whether a command line asks for a delta (decided before parsing, for the exit status of usage errors)."""
    return "plan" in argv and any(a in ("--base", "--base-dir") or a.startswith(("--base=", "--base-dir="))
                                  for a in argv)


def _emit(plan: Plan, args: argparse.Namespace, sources: locate.Sources = locate.NOWHERE) -> None:
    """The plan on stdout, written as it is rendered (the document is never held whole). A reader that
    stops early (`plan -o json | head`) ends the output quietly: the status stays the plan's. `sources`:
    where the Markdown plan's changes come from (links.sources)."""
    try:
        for chunk in render.chunks(plan, args.output, sources=sources):
            sys.stdout.write(chunk)
        sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()


def _discard_stdout() -> None:
    """Points stdout at /dev/null, so what is still buffered is not written again to the closed pipe at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def _invalid(args: argparse.Namespace, plan: Plan) -> None:
    """An invalid revision: the errors went to stderr; JSON and Markdown still get a whole document."""
    if args.output != "text":
        _emit(plan, args)


def show_plan(args: argparse.Namespace) -> int:
    if args.base is not None or args.base_dir is not None:
        return show_delta(args)
    usage = _single_usage(args)
    if usage:
        print(f"bindy-agent plan: error: {usage}", file=sys.stderr)
        return common.EXIT_ERROR
    report = progress.Reporter.for_stderr()
    try:
        planned = _planned(args, report)
    except AgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return common.EXIT_ERROR
    finally:
        report.done()
    validated, plan, error = planned
    found = validated.problems
    common.print_problems(found, args.directory, sys.stderr)
    if not validated.ok:
        print(f"{args.directory}: invalid: nothing planned ({len(problems.errors(found))} errors)", file=sys.stderr)
        _invalid(args, Plan([], found, invalid=("revision",)))
        return common.EXIT_ERROR
    if plan is None:
        print(f"error: {error}", file=sys.stderr)
        return common.EXIT_ERROR
    where = {locate.HEAD: links.directory(args.directory, localdir.revision(args.directory))} \
        if args.output == "markdown" and args.link_base else {}
    assert validated.desired is not None
    _emit(plan, args, links.sources(args, validated.desired, None, where))
    return common.EXIT_OK if plan.empty else common.EXIT_CHANGES


def _single_usage(args: argparse.Namespace) -> str | None:
    if args.directory is None:
        return "give DIR (or --base REV / --base-dir DIR to compare two revisions)"
    extra = [flag for flag, value in (("--head", args.head), ("--repo", args.repo), ("--path", args.path)) if value]
    return f"{', '.join(extra)} only go with --base REV" if extra else None


Planned = tuple[validation.Validated, Plan | None, str | None]  # the revision checked, its plan, why none


def _planned(args: argparse.Namespace, report: validation.Progress) -> Planned:
    """Offline unless a cluster is asked for (a kubeconfig in the environment never makes it online):
    against the empty world, every object, zone and RRset is a create. Against a cluster, the plan a
    `sync --dry-run` makes, by the orchestrator's own planning: its Kubernetes layer, gated."""
    if not common.cluster_requested(args):
        validated = common.validate(localdir.files(args.directory), args, progress=report)
        return validated, _offline(validated), None
    from agent.run import compose, planning  # only online: the offline plan never loads the cluster's clients

    built = compose.build(compose.Request(  # as a sync builds it; its store is read only with zone endpoints
        compose.options(vars(args), common.policy_settings(args)), directory=args.directory,
        limits=common.limits(args), cluster=True, kubeconfig=common.kubeconfig(args.kubeconfig), context=args.context))
    planned = planning.plan(built.source.snapshot(), built.targets, built.options, progress=report)
    return planned.validated, planned.plan, planned.error


def _offline(validated: validation.Validated) -> Plan | None:
    """`planning.offline` without importing a run's planning (its clients, TLS and Git: 10 MB and a
    fifth of a second of every offline plan): the valid revision against the empty world."""
    if not validated.ok or validated.desired is None:
        return None
    from agent.plan import build

    with collector.long_lived():
        return build.offline(validated.desired)


# -- the delta between two revisions ---------------------------------------------------------------
@dataclasses.dataclass
class Side:
    """One input of a delta: its revision, its files, the prefix its problems are printed with, and how
    people name it."""

    revision: str
    files: Sequence[SourceFile]
    where: pathlib.Path | str
    label: str = ""
    repo: links.Where = links.Where(None)  # its commit and its root's path in the repository (--link-base)


def _delta_usage(args: argparse.Namespace) -> str | None:
    if args.base is not None and args.base_dir is not None:
        return "--base and --base-dir exclude each other"
    if common.cluster_requested(args):
        return "a delta is planned offline from the two revisions: --kubeconfig and --context do not apply"
    if args.base_dir is not None:
        if args.head or args.repo or args.path:
            return "--base-dir compares two directories: give DIR, not --head, --repo or --path"
        return None if args.directory is not None else "--base-dir OLD needs the new directory: plan DIR --base-dir OLD"
    if args.repo and args.directory is not None:
        return "give either DIR (a directory in a Git work tree) or --repo URL"
    if args.head is None and args.directory is None:
        return "give --head REV, or DIR to compare its files with --base"
    if args.repo and args.head is None:
        return "with --repo, give --head REV too"
    return None


def _git_side(revs: gitrevs.Revisions, rev: str, path: str) -> Side:
    sha = revs.resolve(rev)
    label = sha[:12] if sha.startswith(rev.lower()) else f"{rev} ({sha[:12]})"
    return Side(sha, revs.files(sha, path), f"{rev}:{path + '/' if path else ''}", label, links.Where(sha, path))


def _sides(args: argparse.Namespace) -> tuple[Side, Side]:
    if args.base_dir is not None:
        return _dir_side(args.base_dir, args), _dir_side(args.directory, args)
    from agent.sources import gitrevs
    from agent.sources.git import GitSource

    if args.repo:
        source = GitSource(args.repo, args.cache, ssh_key=args.ssh_key, known_hosts=args.known_hosts,
                           insecure_ignore_host_key=args.insecure_ignore_host_key, token_file=args.token_file)
        revs, path = gitrevs.Revisions.remote(source), args.path.strip("/")
    else:
        revs, rel = gitrevs.Revisions.local(args.directory or pathlib.Path.cwd())
        path = args.path.strip("/") if args.path else rel
    base = _git_side(revs, args.base, path)
    if args.head is not None:
        return base, _git_side(revs, args.head, path)
    return base, _dir_side(args.directory, args)


def _dir_side(directory: pathlib.Path, args: argparse.Namespace) -> Side:
    revision = localdir.revision(directory, common.limits(args))
    short = revision if revision.startswith("sha256:") else revision[:12] + revision[40:]  # keeps "-dirty"
    return Side(revision, localdir.files(directory), directory, f"{directory} ({short})",
                links.directory(directory, revision))


def _load(side: Side, args: argparse.Namespace, what: str) -> tuple[Desired | None, list[problems.Problem]]:
    report = progress.Reporter.for_stderr(f"{what}: ")
    try:
        validated = common.validate(side.files, args, progress=report)
    finally:
        report.done()
    return (validated.desired if validated.ok else None), validated.problems


def _labels(*sides: Side) -> dict[str, str]:
    return {side.revision: side.label for side in sides if side.label}


def show_delta(args: argparse.Namespace) -> int:
    usage = _delta_usage(args)
    if usage:
        print(f"bindy-agent plan: error: {usage}", file=sys.stderr)
        return DELTA_ERROR
    try:
        base_side, head_side = _sides(args)
    except AgentError as exc:
        print(f"bindy-agent plan: error: {exc}", file=sys.stderr)
        return DELTA_ERROR
    base, base_found = _load(base_side, args, "base")
    head, head_found = _load(head_side, args, "head")
    common.print_problems(base_found, base_side.where, sys.stderr, errors_only=True)
    common.print_problems(head_found, head_side.where, sys.stderr)
    if base is None or head is None:
        invalid = tuple(what for what, state in (("base", base), ("head", head)) if state is None)
        for what, found in (("base", base_found), ("head", head_found)):
            if what in invalid:
                side = base_side if what == "base" else head_side
                print(f"{what} {side.label or side.revision}: invalid "
                      f"({len(problems.errors(found))} errors)", file=sys.stderr)
        print("nothing planned", file=sys.stderr)
        _invalid(args, Plan([], head_found, head_side.revision, base=base_side.revision,
                            base_problems=base_found, invalid=invalid, labels=_labels(base_side, head_side)))
        return DELTA_ERROR
    from agent.gate import safety
    from agent.plan import delta

    result = delta.delta(base, head, base_revision=base_side.revision, head_revision=head_side.revision,
                         agent=args.agent_namespace)
    result.labels = _labels(base_side, head_side)
    result.refusals = safety.check(result, common.safety_policy(args))
    _emit(result, args, links.sources(args, head, base, {locate.HEAD: head_side.repo, locate.BASE: base_side.repo}))
    return DELTA_OK if result.empty else DELTA_CHANGES


def add_arguments(p: argparse.ArgumentParser) -> None:
    """plan's own flags (besides --kubeconfig, --context and --agent-namespace, shared with sync)."""
    p.add_argument("directory", type=common.directory, metavar="DIR", nargs="?",
                   help="directory of CR YAML files (searched recursively); with --base, the head (its files "
                   "as they are on disk, or with --head the directory's path inside the repository)")
    p.add_argument("--namespace", metavar="NS", help=common.NAMESPACE_HELP)
    p.add_argument("-o", "--output", choices=render.FORMATS, default="text",
                   help="plan format (default: %(default)s); markdown fits a pull-request comment")
    links.add_flag(p)
    d = p.add_argument_group("delta (what a pull request changes; exit 0 no changes, 2 changes, 1 error)")
    d.add_argument("--base", metavar="REV", help="the revision to compare against: a branch, tag or commit")
    d.add_argument("--head", metavar="REV", help="the revision compared (default: DIR's files on disk)")
    d.add_argument("--base-dir", type=common.directory, metavar="DIR", help="compare DIR with this directory")
    d.add_argument("--repo", metavar="URL", type=common.git_operand("the repository"),
                   help="a remote (or the path of a repository) instead of the work "
                   "tree holding DIR")
    d.add_argument("--path", default="", metavar="P",
                   help="directory of CRs inside the repository (default: DIR's, or the top)")
    d.add_argument("--cache", type=pathlib.Path, default=names.CACHE_DIR / "git-plan", metavar="DIR",
                   help="where a --repo clone is kept (default: %(default)s)")
    d.add_argument("--ssh-key", type=common.readable_file, metavar="FILE", help="SSH deploy key for --repo")
    d.add_argument("--known-hosts", type=common.readable_file, metavar="FILE", help="known_hosts for the SSH key")
    d.add_argument("--insecure-ignore-host-key", action="store_true",
                   help="do not check the Git server's SSH host key (not recommended)")
    d.add_argument("--token-file", type=common.readable_file, metavar="FILE",
                   help="HTTPS token for --repo, read from a file")
