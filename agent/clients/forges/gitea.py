"""Gitea: deliveries signed `X-Gitea-Signature: <hex>`, events in X-Gitea-Event (it sends
X-GitHub-Event too: its own header is looked at first); its status API is GitHub's, under /api/v1,
with `Authorization: token ...`."""

from __future__ import annotations

import hmac

from agent.clients.forges.base import ForgeName, hmac_sha256
from agent.clients.forges.github import GitHub


class Gitea(GitHub):
    name = ForgeName.GITEA
    signature_header = "X-Gitea-Signature"
    event_header = "X-Gitea-Event"
    push_events = frozenset({"push"})
    ping_events = frozenset()
    auth_scheme = "token"

    def signed(self, secret: bytes, body: bytes, value: str) -> bool:
        return hmac.compare_digest(value.strip().encode(), hmac_sha256(secret, body))

    def api_url(self, base: str, host: str) -> str:
        return f"{base}/api/v1"
