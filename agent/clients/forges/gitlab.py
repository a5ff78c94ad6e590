"""GitLab: deliveries carry the shared secret itself in X-Gitlab-Token, events in X-Gitlab-Event
(Push Hook, Tag Push Hook); statuses POSTed to {api}/projects/{id or path}/statuses/{sha} with
PRIVATE-TOKEN (/api/v4), the project a path of any depth or a numeric id. GitLab answers 400 "Cannot
transition status" to a status posted twice in the same state (a resync of the same commit): posted
already."""

from __future__ import annotations

import hmac
import urllib.parse
from typing import TYPE_CHECKING

from agent.clients.forges.base import Forge, ForgeName
from agent.model.outcomes import Outcome

if TYPE_CHECKING:
    import httpx


class GitLab(Forge):
    name = ForgeName.GITLAB
    signature_header = "X-Gitlab-Token"
    event_header = "X-Gitlab-Event"
    push_events = frozenset({"push hook", "tag push hook"})
    states = {Outcome.PENDING: "running", Outcome.APPLIED: "success", Outcome.PARTIAL: "failed",
              Outcome.REJECTED: "failed"}
    status_name = "name"

    def signed(self, secret: bytes, body: bytes, value: str) -> bool:
        return hmac.compare_digest(value.strip().encode(), secret)

    def api_url(self, base: str, host: str) -> str:
        return f"{base}/api/v4"

    def project_problem(self, project: str) -> str | None:
        return None if project else "no project path in the repository URL"

    def status_request(self, api_url: str, project: str, revision: str,
                       token: str) -> tuple[str, dict[str, str]]:
        return (f"{api_url}/projects/{urllib.parse.quote(project, safe='')}/statuses/{revision}",
                {"PRIVATE-TOKEN": token, "Content-Type": "application/json"})

    def already_posted(self, response: httpx.Response) -> bool:
        return response.status_code == 400 and "Cannot transition status" in response.text
