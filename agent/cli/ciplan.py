"""`bindy-agent ci-plan DIR`: what a pull/merge request changes, as one comment on it, kept up to
date.

The one script behind the GitHub Action (action.yml) and the GitLab CI template
(templates/gitlab/bindy-agent-plan.yml), so that both do the same and a test runs it as they do:

1. where it runs: GitHub Actions (GITHUB_ACTIONS, the event file's pull request) or GitLab CI
   (GITLAB_CI, the merge request's CI_MERGE_REQUEST_* variables), or --forge and --base given;
2. the base commit: a CI checkout is shallow, so the base is fetched from origin when the clone
lacks
   it (that one commit, no history);
3. the delta base -> head, as `plan --base --head -o markdown` makes it, its problems as annotations
   (--error-format github or gitlab) on the files;
4. the Markdown on stdout and, on GitHub, in the job summary; with a token, the bot's own comment
that
   starts with the hidden marker of DIR is updated, or created once (a comment someone else wrote
   starting with the marker is never edited).

Exit 0 planned (with or without changes; --detailed-exitcode: 2 with changes), 1 error (an invalid
revision, a base that cannot be fetched, a comment that cannot be posted).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys

from agent.cli import common, flagsets, links, prcontext
from agent.cli import plan as plan_verb
from agent.errors import AgentError
from agent.model import names

DESCRIPTION = ("Plan what the pull request (GitHub Actions) or merge request (GitLab CI) this job "
               "runs for changes in DIR, from its base to its head, and post it as one comment on "
               "it: the comment that starts with the hidden marker of DIR is updated in place on "
               "each push, or created once. A shallow checkout gets the base commit fetched from "
               "origin. Problems are annotations on the files. The Markdown is also printed, and "
               "added to the job summary on GitHub.")
EPILOG = "\n".join([
    "Exit status: 0 planned, with or without changes; 1 error (an invalid revision, a base that "
    "cannot be",
    "fetched, a comment that cannot be posted). With --detailed-exitcode: 0 no changes, 1 error, 2 "
    "changes.",
    "",
    "The token: on GitHub the workflow's GITHUB_TOKEN (with permissions: pull-requests: write); on "
    "GitLab",
    "GITLAB_TOKEN, a project access token with the api scope; or the variable --token-env names.",
    "",
    flagsets.examples(
        ("in a GitHub Actions job of a pull_request workflow (what action.yml runs)",
         "bindy-agent ci-plan dns/"),
        ("in a GitLab CI job of a merge request pipeline", "bindy-agent ci-plan dns/"),
        ("anywhere else: the comment body only, for a base you name",
         "bindy-agent ci-plan dns/ --base origin/main --no-comment"))])


def build(add: common.AddVerb) -> None:
    c = add(parents=[flagsets.guard()], description=DESCRIPTION, epilog=EPILOG)
    c.set_defaults(func=ci_plan, base_dir=None, repo=None, path="", output="markdown",
                   cache=names.CACHE_DIR / "git-plan")
    c.add_argument("directory", type=common.directory, metavar="DIR",
                   help="the directory of CRs in the checkout")
    flagsets.add_namespace(c)
    c.add_argument("--agent-namespace", default=names.DEFAULT_AGENT_NAMESPACE, metavar="NS",
                   help="namespace of the agent's inventory (default: %(default)s)")
    c.add_argument("--forge", choices=prcontext.FORGES,
                   help="github or gitlab (default: the CI this runs in)")
    c.add_argument("--base", metavar="REV",
                   help="the revision compared against (default: the pull request's "
                   "base commit; on GitLab its merge base)")
    c.add_argument("--head", metavar="REV", default="HEAD",
                   help="the revision compared (default: %(default)s, the "
                   "commit the job checked out)")
    c.add_argument("--no-comment", dest="comment", action="store_false",
                   help="print the comment's Markdown; post nothing")
    c.add_argument("--comment-author", metavar="LOGIN",
                   help="the login the token writes comments as, whose comment "
                   "is updated (default: the token's own user; with a workflow's GITHUB_TOKEN, "
                   "github-actions[bot])")
    c.add_argument("--token-env", metavar="NAME",
                   help="the environment variable holding the API token (default: "
                   "GITHUB_TOKEN on GitHub, GITLAB_TOKEN on GitLab)")
    c.add_argument("--detailed-exitcode", action="store_true",
                   help="exit 0 with no changes, 1 on error, 2 with changes (as terraform plan)")
    links.add_flag(c, "(default: the repository's file links on GitHub or GitLab)")
    common.add_limit_flags(c)
    group = c.add_argument_group("problems as CI annotations")
    group.add_argument("--error-format", choices=flagsets.ERROR_FORMATS,
                       help="text, github or gitlab (default: the forge's)")
    group.add_argument("--error-report", type=pathlib.Path,
                       default=pathlib.Path(flagsets.CODE_QUALITY_REPORT), metavar="FILE",
                       help=("where the GitLab Code Quality report is written (default: "
                             "%(default)s)"))


def marker(directory: pathlib.Path) -> str:
    """The hidden first line of the comment of DIR: one comment per directory of a repository."""
    return f"<!-- bindy-agent ci-plan: {directory.as_posix().strip('/') or '.'} -->"


def ci_plan(args: argparse.Namespace) -> int:
    try:
        where = prcontext.detect(args, os.environ)
    except AgentError as exc:
        print(f"bindy-agent ci-plan: error: {exc}", file=sys.stderr)
        return plan_verb.EXIT_FAILED
    args.error_format = args.error_format or where.forge or "text"
    args.link_base = args.link_base or links.from_ci(where.forge, os.environ)
    try:
        args.base = prcontext.base_commit(args.directory, str(where.base))
    except AgentError as exc:
        print(f"bindy-agent ci-plan: error: {exc}", file=sys.stderr)
        return plan_verb.EXIT_FAILED
    from agent.cli import plandelta
    from agent.plan import render

    plan, ok = plandelta.compute(args)
    if plan is None:
        return plan_verb.EXIT_FAILED
    head = marker(args.directory) + "\n"
    body = head + render.render_markdown(plan, limit=render.MARKDOWN_LIMIT - len(head))
    sys.stdout.write(body)
    sys.stdout.flush()
    prcontext.summarize(body, plan, os.environ)
    if args.comment:
        try:
            prcontext.post(where, marker(args.directory), body, args.token_env, os.environ,
                           args.comment_author)
        except AgentError as exc:
            print(f"bindy-agent ci-plan: error: {exc}", file=sys.stderr)
            return plan_verb.EXIT_FAILED
    return plan_verb.status(args, plan) if ok else plan_verb.EXIT_FAILED
