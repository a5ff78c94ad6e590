"""Commit statuses posted on a forge: where they go (`ForgeSettings`, configured by
agent/outcome/forge.py), what one says (`CommitStatus`, built there: pure), and the post itself: the
token read from its file, the forge's request (agent/clients/forges/), a measured call with a time
budget (clients/httppost.py). A status that cannot be posted is logged, never fatal to the run."""

from __future__ import annotations

import dataclasses
import json
import pathlib

from agent.clients import forges, httppost
from agent.model.calls import CallTarget

DEFAULT_CONTEXT = "bindy-agent"


@dataclasses.dataclass(frozen=True)
class ForgeSettings:
    """Where commit statuses go; built by the caller (see run.settings.Settings.forge_settings)."""

    kind: str  # github | gitlab | gitea
    # https://api.github.com, https://gitlab.example/api/v4, https://gitea.example/api/v1
    api_url: str
    project: str  # owner/repo (GitHub, Gitea), or a GitLab project path or numeric id
    token_file: pathlib.Path
    context: str = DEFAULT_CONTEXT
    report_url: str | None = None  # "{revision}" in it becomes the commit SHA
    budget: httppost.Budget = httppost.Budget()


@dataclasses.dataclass(frozen=True)
class CommitStatus:
    """A status for a commit, but for which: where it goes, the step it reports (an Outcome, PENDING
    too: the forge's state of it) and its description."""

    settings: ForgeSettings
    step: str
    text: str


def post(status: CommitStatus | None, revision: str) -> bool:
    """Posts `status` on `revision`; False if there is none or it was not posted (why is logged)."""
    if status is None:
        return False
    settings = status.settings
    token = httppost.read_secret(settings.token_file, f"{settings.kind} commit status")
    if token is None:
        return False
    forge = forges.FORGES[settings.kind]
    state = forge.states[status.step]
    body: dict[str, str] = {"state": state, "description": httppost.redact(status.text)}
    body[forge.status_name] = settings.context
    link = httppost.report_link(settings.report_url, revision)
    if link:
        body["target_url"] = link
    url, headers = forge.status_request(settings.api_url, settings.project, revision, token)
    what = f"{settings.kind} commit status {state} on {revision[:12]}"
    return httppost.post(CallTarget.FORGE, what, url, body=json.dumps(body).encode(),
                         headers=headers, budget=settings.budget, accept=forge.already_posted)
