"""GitHub: deliveries signed `X-Hub-Signature-256: sha256=<hex>`, events in X-GitHub-Event (push;
ping is answered and starts nothing); statuses POSTed to {api}/repos/{owner}/{repo}/statuses/{sha}
with a Bearer token (api.github.com, or /api/v3 of GitHub Enterprise)."""

from __future__ import annotations

import hmac
from typing import ClassVar

from agent.clients.forges.base import Forge, ForgeName, hmac_sha256, owner_repo
from agent.model.outcomes import Outcome


class GitHub(Forge):
    name = ForgeName.GITHUB
    signature_header = "X-Hub-Signature-256"
    event_header = "X-GitHub-Event"
    push_events = frozenset({"push"})
    ping_events = frozenset({"ping"})
    states = {Outcome.PENDING: "pending", Outcome.APPLIED: "success", Outcome.PARTIAL: "failure",
              Outcome.REJECTED: "error"}
    auth_scheme: ClassVar[str] = "Bearer"

    def signed(self, secret: bytes, body: bytes, value: str) -> bool:
        return hmac.compare_digest(value.strip().encode(), b"sha256=" + hmac_sha256(secret, body))

    def api_url(self, base: str, host: str) -> str:
        return "https://api.github.com" if host in ("github.com",
                                                    "www.github.com") else f"{base}/api/v3"

    def project_problem(self, project: str) -> str | None:
        return owner_repo(project)

    def status_request(self, api_url: str, project: str, revision: str,
                       token: str) -> tuple[str, dict[str, str]]:
        headers = {"Authorization": f"{self.auth_scheme} {token}",
                   "Accept": "application/vnd.github+json", "Content-Type": "application/json"}
        if self.name is ForgeName.GITHUB:
            headers["X-GitHub-Api-Version"] = "2022-11-28"
        return f"{api_url}/repos/{project}/statuses/{revision}", headers
