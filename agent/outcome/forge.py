"""Commit statuses on GitHub, GitLab and Gitea: pending once the gate passed a commit, then its
outcome.

    outcome     GitHub / Gitea   GitLab     description
    (gate ok)   pending          running    applying this commit
    applied     success          success    applied: 2 created, 1 updated, 0 deleted, 3 RRset
                                            changes, 0 errors
    partial     failure          failed     partial: 1 failed; 2 created, ...
    rejected    error            failed     rejected: 3 errors; nothing applied ...
    superseded  (none: the commit was never run, so it never got a pending status)

An invalid or refused commit gets only its final status: pending is posted after the gate, as the
first write of a run that applies. Here the statuses are configured and said (pure): `pending` is
built once, when a run's targets are put together (agent/run/options.py `Targets.pending`), and
posted when the run's writes begin (agent/run/execute.py); `finished` says and posts the outcome.

GitHub: POST {api}/repos/{owner}/{repo}/statuses/{sha} with a Bearer token; Gitea: the same path
with `Authorization: token ...`; GitLab: POST {api}/projects/{id}/statuses/{sha} with PRIVATE-TOKEN
(each forge's class: agent/clients/forges/; the post: agent/clients/commitstatus.py). A status that
cannot be posted is logged, never fatal to the run.
"""

from __future__ import annotations

import pathlib
import re
import urllib.parse
from typing import Any

from agent.clients import commitstatus, forges
from agent.clients.commitstatus import DEFAULT_CONTEXT as DEFAULT_CONTEXT
from agent.clients.commitstatus import CommitStatus
from agent.clients.commitstatus import ForgeSettings as ForgeSettings
from agent.errors import ConfigError
from agent.model.outcomes import Outcome
from agent.outcome import delivery

FORGES = forges.STATUSES
MAX_DESCRIPTION = 140  # GitHub refuses longer descriptions
# git@host:owner/repo.git
SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?!//)(?P<path>.+)$")
STATES = {name: forges.FORGES[name].states for name in FORGES}
PENDING_TEXT = "applying this commit"


def _split(repo_url: str) -> tuple[str, str, str] | None:
    """(web base URL, host, project path) of a repository URL; None for a local path."""
    scp = SCP_LIKE.match(repo_url)
    if scp and "://" not in repo_url:
        return f"https://{scp['host']}", scp["host"], scp["path"]
    url = urllib.parse.urlsplit(repo_url)
    if not url.hostname or url.scheme not in ("http", "https", "ssh", "git"):
        return None
    port = f":{url.port}" if url.port and url.scheme in ("http", "https") else ""
    scheme = url.scheme if url.scheme in ("http", "https") else "https"
    return f"{scheme}://{url.hostname}{port}", url.hostname, url.path


def configure(kind: str, *, repo: str, token_file: pathlib.Path | None, api_url: str | None = None,
              project: str | None = None, context: str = DEFAULT_CONTEXT,
              report_url: str | None = None,
              budget: delivery.Budget | None = None) -> ForgeSettings:
    """Derives the API URL and the project from the repository URL unless given; ConfigError if it
    cannot."""
    if kind not in FORGES:
        raise ConfigError(f"commit status: unknown forge {kind!r} "
                          f"(expected one of {', '.join(FORGES)})")
    if token_file is None:
        raise ConfigError(f"commit status on {kind}: a token file is needed "
                          "(commit_status_token_file)")
    where = _split(repo)
    if where is None and (api_url is None or project is None):
        raise ConfigError(f"commit status on {kind}: the repository is not a URL; "
                          "set commit_status_api_url and commit_status_project")
    base, host, path = where or ("", "", "")
    project = (project or path).strip("/").removesuffix(".git")
    forge = forges.FORGES[kind]
    if problem := forge.project_problem(project):
        raise ConfigError(f"commit status on {kind}: {problem}; set commit_status_project")
    api = (api_url or forge.api_url(base, host)).rstrip("/")
    return ForgeSettings(forge.name, api, project, token_file, context, report_url,
                         budget or delivery.Budget())


def description(doc: dict[str, Any]) -> str:
    """The outcome and its counts, short enough for every forge."""
    s = doc["summary"]
    k = s["kubernetes"]
    counts = (f"{k['create']} created, {k['update']} updated, {k['delete']} deleted, "
              f"{s['rrsetChanges']} RRset changes")
    if doc["outcome"] == Outcome.APPLIED:
        text = f"applied: {counts}, {s['errors']} errors"
    elif doc["outcome"] == Outcome.PARTIAL:
        text = f"partial: {s['failures']} failed; {counts}"
    elif doc.get("refusals"):
        zones = len(doc["refusals"])
        text = (f"refused as unsafe: {zones} zone{'s' if zones != 1 else ''}; nothing applied, "
                "see the report")
    else:
        text = (f"rejected: {s['errors']} errors; nothing applied, the last good revision keeps "
                "serving")
    return text if len(text) <= MAX_DESCRIPTION else text[:MAX_DESCRIPTION - 3] + "..."


def pending(settings: ForgeSettings | None) -> CommitStatus | None:
    """The status that marks a commit as being applied, posted once the gate passed it, before
    the run's first write to the world (None: statuses are off)."""
    if settings is None:
        return None
    return CommitStatus(settings, Outcome.PENDING, PENDING_TEXT)


def finished(settings: ForgeSettings | None, report_doc: dict[str, Any]) -> bool:
    """Posts the outcome of the report (Report.as_dict()) on its commit; superseded commits get
    none."""
    if settings is None or report_doc["outcome"] not in STATES[settings.kind]:
        return False
    status = CommitStatus(settings, report_doc["outcome"], description(report_doc))
    return commitstatus.post(status, report_doc["revision"])
