"""Where `ci-plan` runs: the pull/merge request of a CI job, its base commit, and its comment.

    GitHub Actions  GITHUB_ACTIONS=true; the event file (GITHUB_EVENT_PATH) of a pull_request event
                    gives the number and the base commit; GITHUB_REPOSITORY, GITHUB_API_URL;
                    GITHUB_TOKEN; GITHUB_STEP_SUMMARY and GITHUB_OUTPUT receive the Markdown and
                    `changes=true|false`
    GitLab CI       GITLAB_CI=true; CI_MERGE_REQUEST_IID, CI_MERGE_REQUEST_DIFF_BASE_SHA (the merge
                    base), CI_PROJECT_ID, CI_API_V4_URL; GITLAB_TOKEN
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys
from collections.abc import Mapping
from typing import Any

from agent.errors import ConfigError, SourceError
from agent.plan.changes import Plan
from agent.sources import operatorfile

FORGES = ("github", "gitlab")
TOKENS = {"github": "GITHUB_TOKEN", "gitlab": "GITLAB_TOKEN"}
NOT_A_REQUEST = ("this job does not run for a pull request (GitHub Actions: a pull_request event) "
                 "nor a merge request (GitLab CI: a merge request pipeline)")


@dataclasses.dataclass(frozen=True)
class Where:
    forge: str | None
    base: str | None
    api_url: str = ""
    project: str = ""
    number: int | None = None


def _event(env: Mapping[str, str]) -> dict[str, Any]:
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    text = operatorfile.read_text(path, setting="GITHUB_EVENT_PATH", limit=operatorfile.EVENT_BYTES)
    try:
        event = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"GITHUB_EVENT_PATH {path}: not a JSON event (line "
                          f"{getattr(exc, 'lineno', '?')})") from exc
    return event if isinstance(event, dict) else {}


def _github(env: Mapping[str, str]) -> Where:
    request = _event(env).get("pull_request") or {}
    base = (request.get("base") or {}).get("sha")
    return Where("github", str(base) if base else None,
                 env.get("GITHUB_API_URL") or "https://api.github.com",
                 env.get("GITHUB_REPOSITORY", ""),
                 int(request["number"]) if request.get("number") else None)


def _gitlab(env: Mapping[str, str]) -> Where:
    iid = env.get("CI_MERGE_REQUEST_IID", "")
    return Where("gitlab", env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA") or None,
                 env.get("CI_API_V4_URL", ""), env.get("CI_PROJECT_ID", ""),
                 int(iid) if iid.isdigit() else None)


def detect(args: argparse.Namespace, env: Mapping[str, str]) -> Where:
    """The forge, the base and the request of this job (flags first); ConfigError when one is
    missing."""
    forge = args.forge or ("github" if env.get("GITHUB_ACTIONS") == "true" else
                           "gitlab" if env.get("GITLAB_CI") == "true" else None)
    found = (_github(env) if forge == "github" else _gitlab(env) if forge == "gitlab"
             else Where(None, None))
    where = dataclasses.replace(found, base=args.base or found.base)
    if where.base is None:
        raise ConfigError(f"no base revision: {NOT_A_REQUEST}; give --base REV")
    if args.comment and where.number is None:
        raise ConfigError(f"nothing to comment on: {NOT_A_REQUEST}; give --no-comment to print the "
                          f"comment only")
    if args.comment and not (where.api_url and where.project):
        raise ConfigError("the forge's API is unknown: run in GitHub Actions (GITHUB_REPOSITORY, "
                          "GITHUB_API_URL) or GitLab CI (CI_PROJECT_ID, CI_API_V4_URL)")
    return where


def base_commit(directory: pathlib.Path, base: str) -> str:
    """`base` as a commit of the work tree holding `directory`, fetched from origin when a shallow
    clone lacks it."""
    from agent.sources import gitrevs

    revs, _ = gitrevs.Revisions.local(directory)
    if revs.has(base):
        return base
    try:
        sha = revs.fetch_from_origin(base)
    except SourceError as exc:
        raise SourceError(f"the base {base} is not in this clone, and fetching it failed ({exc}); "
                          "fetch it before (git fetch --no-tags --depth=1 origin BASE), or check "
                          "out the whole history (actions/checkout with fetch-depth: 0; GitLab CI: "
                          "GIT_DEPTH: 0)") from exc
    print(f"fetched the base {base} from origin (the clone did not have it)", file=sys.stderr)
    return sha


def summarize(body: str, plan: Plan, env: Mapping[str, str]) -> None:
    """GitHub: the Markdown in the job summary, `changes` among the step's outputs."""
    for name, text in (("GITHUB_STEP_SUMMARY", body + "\n"),
                       ("GITHUB_OUTPUT", f"changes={'false' if plan.empty else 'true'}\n")):
        if env.get(name):
            with open(env[name], "a", encoding="utf-8") as out:
                out.write(text)


def post(where: Where, marker: str, body: str, token_env: str | None, env: Mapping[str, str],
         author: str | None = None) -> None:
    """The bot's comment of `marker` (`author`: the bot's login, default the token's user) updated
    to `body`, or created."""
    from agent.clients import stickycomment

    assert where.forge is not None and where.number is not None
    name = token_env or TOKENS[where.forge]
    token = env.get(name, "").strip()
    if not token:
        raise ConfigError(f"no API token in ${name}: set it (GitHub: GITHUB_TOKEN, given to the "
                          "step; GitLab: a project access token with the api scope in a masked "
                          "CI/CD variable), or give --no-comment")
    thread = stickycomment.Thread(where.forge, where.api_url, where.project, where.number, token,
                                  author)
    posted = stickycomment.upsert(thread, marker, body)
    print(f"comment {posted.action}: {posted.url or f'#{posted.comment_id}'}", file=sys.stderr)
