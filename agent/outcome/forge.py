"""Commit statuses on GitHub, GitLab and Gitea: pending once the gate passed a commit, then its outcome.

    outcome     GitHub / Gitea   GitLab     description
    (gate ok)   pending          running    applying this commit
    applied     success          success    applied: 2 created, 1 updated, 0 deleted, 3 RRset changes, 0 errors
    partial     failure          failed     partial: 1 failed; 2 created, ...
    rejected    error            failed     rejected: 3 errors; nothing applied ...
    superseded  (none: the commit was never run, so it never got a pending status)

An invalid or refused commit gets only its final status: pending is posted after the gate, as the
first write of a run that applies.

GitHub: POST {api}/repos/{owner}/{repo}/statuses/{sha} with a Bearer token; Gitea: the same path
with `Authorization: token ...`; GitLab: POST {api}/projects/{id}/statuses/{sha} with PRIVATE-TOKEN
(each forge's class: agent/clients/forges/). A status that cannot be posted is logged, never fatal to
the run.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re
import urllib.parse
from typing import Any

from agent.clients import forges, httppost
from agent.errors import ConfigError
from agent.model.calls import CallTarget
from agent.model.outcomes import Outcome
from agent.outcome import delivery

FORGES = forges.STATUSES
DEFAULT_CONTEXT = "bindy-agent"
MAX_DESCRIPTION = 140  # GitHub refuses longer descriptions
SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?!//)(?P<path>.+)$")  # git@host:owner/repo.git
STATES = {name: forges.FORGES[name].states for name in FORGES}


@dataclasses.dataclass(frozen=True)
class ForgeSettings:
    """Where commit statuses go; built by the caller (see run.settings.Settings.forge_settings)."""

    kind: str  # github | gitlab | gitea
    api_url: str  # https://api.github.com, https://gitlab.example/api/v4, https://gitea.example/api/v1
    project: str  # owner/repo (GitHub, Gitea), or a GitLab project path or numeric id
    token_file: pathlib.Path
    context: str = DEFAULT_CONTEXT
    report_url: str | None = None  # "{revision}" in it becomes the commit SHA
    budget: delivery.Budget = delivery.Budget()


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
              project: str | None = None, context: str = DEFAULT_CONTEXT, report_url: str | None = None,
              budget: delivery.Budget | None = None) -> ForgeSettings:
    """Derives the API URL and the project from the repository URL unless given; ConfigError if it cannot."""
    if kind not in FORGES:
        raise ConfigError(f"commit status: unknown forge {kind!r} (expected one of {', '.join(FORGES)})")
    if token_file is None:
        raise ConfigError(f"commit status on {kind}: a token file is needed (commit_status_token_file)")
    where = _split(repo)
    if where is None and (api_url is None or project is None):
        raise ConfigError(f"commit status on {kind}: the repository is not a URL; set commit_status_api_url "
                          "and commit_status_project")
    base, host, path = where or ("", "", "")
    project = (project or path).strip("/").removesuffix(".git")
    forge = forges.FORGES[kind]
    if problem := forge.project_problem(project):
        raise ConfigError(f"commit status on {kind}: {problem}; set commit_status_project")
    return ForgeSettings(forge.name, (api_url or forge.api_url(base, host)).rstrip("/"), project, token_file,
                         context, report_url, budget or delivery.Budget())


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
        text = f"refused as unsafe: {zones} zone{'s' if zones != 1 else ''}; nothing applied, see the report"
    else:
        text = f"rejected: {s['errors']} errors; nothing applied, the last good revision keeps serving"
    return text if len(text) <= MAX_DESCRIPTION else text[:MAX_DESCRIPTION - 3] + "..."


def _post(settings: ForgeSettings, revision: str, step: str, text: str) -> bool:
    token = delivery.read_secret(settings.token_file, f"{settings.kind} commit status")
    if token is None:
        return False
    forge = forges.FORGES[settings.kind]
    state = forge.states[step]
    body: dict[str, str] = {"state": state, "description": delivery.redact(text)}
    body[forge.status_name] = settings.context
    link = delivery.report_link(settings.report_url, revision)
    if link:
        body["target_url"] = link
    url, headers = forge.status_request(settings.api_url, settings.project, revision, token)
    return httppost.post(CallTarget.FORGE, f"{settings.kind} commit status {state} on {revision[:12]}", url,
                         body=json.dumps(body).encode(), headers=headers, budget=settings.budget,
                         accept=forge.already_posted)


def pending(settings: ForgeSettings | None, revision: str) -> bool:
    """Marks `revision` as being applied: once the gate passed it, before the run's first write to the
    world; False if not posted."""
    if settings is None:
        return False
    return _post(settings, revision, Outcome.PENDING, "applying this commit")


def finished(settings: ForgeSettings | None, report_doc: dict[str, Any]) -> bool:
    """Posts the outcome of the report (Report.as_dict()) on its commit; superseded commits get none."""
    if settings is None or report_doc["outcome"] not in STATES[settings.kind]:
        return False
    return _post(settings, report_doc["revision"], report_doc["outcome"], description(report_doc))
