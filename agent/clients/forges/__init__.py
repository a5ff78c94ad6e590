"""The forges the agent knows, one class each (clients/forges/<name>.py, the protocol in base.py):
the webhook's signatures and events (agent/run/webhook.py) and the commit statuses
(agent/outcome/forge.py) read them from here, and the `commit_status` setting accepts the names of
those that take statuses.

    forge    signature header              event header     push events                  statuses
    GitHub   X-Hub-Signature-256 sha256=   X-GitHub-Event   push (ping: answered)        yes
    generic  X-Signature-256 sha256=       (none)           any                          no
    Gitea    X-Gitea-Signature <hex>       X-Gitea-Event    push                         yes
    GitLab   X-Gitlab-Token <secret>       X-Gitlab-Event   Push Hook, Tag Push Hook     yes
"""

from __future__ import annotations

from collections.abc import Mapping

from agent.clients.forges.base import Delivery, Forge, ForgeName, ref_of
from agent.clients.forges.generic import Generic
from agent.clients.forges.gitea import Gitea
from agent.clients.forges.github import GitHub
from agent.clients.forges.gitlab import GitLab

__all__ = ["Delivery", "Forge", "ForgeName", "ref_of"]

GITHUB, GITLAB, GITEA, GENERIC = GitHub(), GitLab(), Gitea(), Generic()
FORGES: dict[str, Forge] = {f.name: f for f in (GITHUB, GITLAB, GITEA, GENERIC)}
STATUSES = tuple(name for name, forge in FORGES.items() if forge.states)  # github, gitlab, gitea
SIGNED = (GITHUB, GENERIC, GITEA, GITLAB)  # the order signature headers are looked at
# Gitea also sends X-GitHub-Event: its own header is looked at first
BY_EVENT = (GITEA, GITLAB, GITHUB)
HEADERS = (*(f.signature_header for f in SIGNED), *(f.event_header for f in BY_EVENT))


def verify(secret: bytes, body: bytes, headers: Mapping[str, str | None]) -> bool:
    """Whether the first signature header sent signs `body` with `secret`; False without one."""
    for forge in SIGNED:
        value = headers.get(forge.signature_header)
        if value:
            return forge.signed(secret, body, value)
    return False


def signed(headers: Mapping[str, str | None]) -> bool:
    """Whether a delivery carries a signature header (only then is its body read)."""
    return any(headers.get(f.signature_header) for f in SIGNED)


def read(headers: Mapping[str, str | None], body: bytes) -> Delivery:
    """The delivery as its forge (named by its event header) sends it; generic without one."""
    forge = next((f for f in BY_EVENT if headers.get(f.event_header)), GENERIC)
    return forge.read(headers, body)
