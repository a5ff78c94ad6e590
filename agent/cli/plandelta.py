"""`plan --base REV` / `plan DIR --base-dir OLD`: the delta between two revisions, as a pull request
makes it. It never reaches a cluster or a DNS server: base is planned against an empty world, head
against the world base leaves (agent/plan/delta.py)."""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agent.cli import annotate, common, links, progress
from agent.cli import plan as plan_verb
from agent.errors import AgentError
from agent.model import problems
from agent.plan.changes import Plan
from agent.sources import localdir

if TYPE_CHECKING:
    from agent.desired.hierarchy import Desired
    from agent.load.sourcefile import SourceFile
    from agent.sources import gitrevs


@dataclasses.dataclass
class Side:
    """One input of a delta: its revision, its files, the prefix its problems are printed with, and
    how people name it."""

    revision: str
    files: Sequence[SourceFile]
    where: pathlib.Path | str
    label: str = ""
    # its commit and its root's path in the repository (--link-base)
    repo: links.Where = links.Where(None)


def _delta_usage(args: argparse.Namespace) -> str | None:
    if args.base is not None and args.base_dir is not None:
        return "--base and --base-dir exclude each other"
    if common.cluster_requested(args):
        return ("a delta is planned offline from the two revisions: --kubeconfig and --context do "
                "not apply")
    if args.base_dir is not None:
        return _dirs_usage(args)
    return _revisions_usage(args)


def _dirs_usage(args: argparse.Namespace) -> str | None:
    """What is wrong with `plan DIR --base-dir OLD`, which compares two directories."""
    if args.head or args.repo or args.path:
        return "--base-dir compares two directories: give DIR, not --head, --repo or --path"
    return None if args.directory is not None else ("--base-dir OLD needs the new directory: "
                                                    "plan DIR --base-dir OLD")


def _revisions_usage(args: argparse.Namespace) -> str | None:
    """What is wrong with `plan --base REV`, which compares two revisions of a repository."""
    if args.repo and args.directory is not None:
        return "give either DIR (a directory in a Git work tree) or --repo URL"
    if args.head is None and args.directory is None:
        return "give --head REV, or DIR to compare its files with --base"
    if args.repo and args.head is None:
        return "with --repo, give --head REV too"
    return None


def _git_side(revs: gitrevs.Revisions, rev: str, path: str, *, base: bool = False) -> Side:
    """One revision of the repository. A base without the directory is an empty revision: the pull
    request that adds the directory plans everything in it as new (a head without it is an error: a
    wrong --path)."""
    sha = revs.resolve(rev)
    label = sha[:12] if sha.startswith(rev.lower()) else f"{rev} ({sha[:12]})"
    where = f"{rev}:{path + '/' if path else ''}"
    if base and not revs.holds(sha, path):
        print(f"base {label} has no directory {path!r}: planned as an empty revision",
              file=sys.stderr)
        return Side(sha, [], where, label, links.Where(sha, path))
    return Side(sha, revs.files(sha, path), where, label, links.Where(sha, path))


def _sides(args: argparse.Namespace) -> tuple[Side, Side]:
    if args.base_dir is not None:
        return _dir_side(args.base_dir, args), _dir_side(args.directory, args)
    from agent.run import gitsource
    from agent.sources import gitrevs

    # the branches and tags the delta names are fetched: no branch, ref or path of its own
    if args.repo:
        git = gitsource.Git(args.repo, args.cache, ssh_key=args.ssh_key,
                            known_hosts=args.known_hosts,
                            insecure_ignore_host_key=args.insecure_ignore_host_key,
                            token_file=args.token_file)
        source = gitsource.source(git, common.limits(args))
        revs, path = gitrevs.Revisions.remote(source), args.path.strip("/")
    else:
        revs, rel = gitrevs.Revisions.local(args.directory or pathlib.Path.cwd())
        path = args.path.strip("/") if args.path else rel
    base = _git_side(revs, args.base, path, base=True)
    if args.head is not None:
        return base, _git_side(revs, args.head, path)
    return base, _dir_side(args.directory, args)


def _dir_side(directory: pathlib.Path, args: argparse.Namespace) -> Side:
    revision = localdir.revision(directory, common.limits(args))
    # keeps "-dirty"
    short = revision if revision.startswith("sha256:") else revision[:12] + revision[40:]
    return Side(revision, localdir.files(directory), directory, f"{directory} ({short})",
                links.directory(directory, revision))


def _load(side: Side, args: argparse.Namespace,
          what: str) -> tuple[Desired | None, list[problems.Problem]]:
    report = progress.Reporter.for_stderr(f"{what}: ")
    try:
        validated = common.validate(side.files, args, progress=report)
    finally:
        report.done()
    return (validated.desired if validated.ok else None), validated.problems


def _labels(*sides: Side) -> dict[str, str]:
    return {side.revision: side.label for side in sides if side.label}


def show_delta(args: argparse.Namespace) -> int:
    """plan --base / --base-dir: the delta on stdout (a whole document even when invalid, but in
    text)."""
    plan, ok = compute(args)
    if plan is None:
        return plan_verb.EXIT_FAILED
    if not ok:
        plan_verb.invalid(args, plan)
        return plan_verb.EXIT_FAILED
    plan_verb.emit(plan, args)
    return plan_verb.status(args, plan)


def compute(args: argparse.Namespace) -> tuple[Plan | None, bool]:
    """The delta `args` ask for, its problems and errors told on stderr: (the plan, whether both
    sides are valid); an invalid side gives a plan that lists the problems, an error before reading
    gives None."""
    usage = _delta_usage(args)
    if usage:
        print(f"bindy-agent {args.verb}: error: {usage}", file=sys.stderr)
        return None, False
    try:
        base_side, head_side = _sides(args)
    except AgentError as exc:
        print(f"bindy-agent {args.verb}: error: {exc}", file=sys.stderr)
        return None, False
    base, base_found = _load(base_side, args, "base")
    head, head_found = _load(head_side, args, "head")
    annotate.report_sides([(base_found, base_side.where, True),
                           (head_found, head_side.where, False)], args)
    if base is None or head is None:
        invalid = tuple(what for what, state in (("base", base), ("head", head)) if state is None)
        for what, found in (("base", base_found), ("head", head_found)):
            if what in invalid:
                side = base_side if what == "base" else head_side
                print(f"{what} {side.label or side.revision}: invalid "
                      f"({len(problems.errors(found))} errors)", file=sys.stderr)
        print("nothing planned", file=sys.stderr)
        return Plan([], head_found, head_side.revision, base=base_side.revision,
                    base_problems=base_found, invalid=invalid,
                    labels=_labels(base_side, head_side)), False
    from agent.gate import safety, verdict
    from agent.plan import delta

    result = delta.delta(base, head, base_revision=base_side.revision,
                         head_revision=head_side.revision, agent=args.agent_namespace)
    result = verdict.approve(result, safety.Policy.of(vars(args)))
    return dataclasses.replace(result, labels=_labels(base_side, head_side), sources=links.sources(
        args, head, base, {links.HEAD: head_side.repo, links.BASE: base_side.repo})), True
