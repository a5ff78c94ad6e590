"""What a forge's webhook delivery asks for: a push of which ref (one class per forge).

    forge    event header                push events                   the ref
    GitHub   X-GitHub-Event              push (ping: answered, no run) body "ref"
    GitLab   X-Gitlab-Event              Push Hook, Tag Push Hook      body "ref"
    Gitea    X-Gitea-Event               push                          body "ref"
    generic  (none)                      any                           body "ref"; none: a sync request

The agent runs only for a push of the branch it follows (`followed`); a push of another branch, a tag
or a notes ref (the agent's own reports, refs/notes/bindy-agent, included) is answered and ignored.
A generic delivery without a ref (any body that is not a JSON object with a string "ref") asks for
a sync, as before refs were read. The body is parsed only after its signature was checked.
"""

from __future__ import annotations

import dataclasses
import json
import re
import urllib.parse
from collections.abc import Mapping

BRANCH_PREFIX = "refs/heads/"
TAG_PREFIX = "refs/tags/"
COMMIT = re.compile(r"[0-9a-fA-F]{7,64}")


@dataclasses.dataclass(frozen=True)
class Delivery:
    """A delivery read: `run` it or not, and why not."""

    forge: str
    event: str  # the forge's event name ("" for a generic delivery)
    ref: str | None  # the full ref pushed (None: the delivery names none)
    push: bool  # the event is a push (of a branch, tag or other ref)
    ping: bool = False  # a forge's test delivery: answered, no run


class Forge:
    """One forge's deliveries: the header naming its event, and which events are pushes."""

    name = "generic"
    event_header = ""
    push_events: frozenset[str] = frozenset()
    ping_events: frozenset[str] = frozenset()

    def read(self, headers: Mapping[str, str | None], body: bytes) -> Delivery:
        event = (headers.get(self.event_header) or "").strip() if self.event_header else ""
        push = not self.event_header or event.lower() in self.push_events
        return Delivery(self.name, event, ref_of(body), push, ping=event.lower() in self.ping_events)


class GitHub(Forge):
    name = "github"
    event_header = "X-GitHub-Event"
    push_events = frozenset({"push"})
    ping_events = frozenset({"ping"})


class GitLab(Forge):
    name = "gitlab"
    event_header = "X-Gitlab-Event"
    push_events = frozenset({"push hook", "tag push hook"})


class Gitea(Forge):
    name = "gitea"
    event_header = "X-Gitea-Event"  # Gitea also sends X-GitHub-Event: its own header is looked at first
    push_events = frozenset({"push"})


FORGES: tuple[Forge, ...] = (Gitea(), GitLab(), GitHub())
GENERIC = Forge()
EVENT_HEADERS = tuple(f.event_header for f in FORGES)


def read(headers: Mapping[str, str | None], body: bytes) -> Delivery:
    """The delivery as its forge (named by its event header) sends it; generic without one."""
    forge = next((f for f in FORGES if headers.get(f.event_header)), GENERIC)
    return forge.read(headers, body)


def ref_of(body: bytes) -> str | None:
    """The `ref` of a JSON object body (or of a form body's `payload`, GitHub's other content type), as a
    full ref ("main" -> "refs/heads/main"); None without one."""
    if body.startswith(b"payload="):
        body = urllib.parse.parse_qs(body.decode("utf-8", "replace")).get("payload", [""])[0].encode()
    try:
        doc = json.loads(body) if body.strip() else None
    except (ValueError, RecursionError):
        return None
    ref = doc.get("ref") if isinstance(doc, dict) else None
    if not isinstance(ref, str) or not ref.strip():
        return None
    ref = ref.strip()
    return ref if ref.startswith("refs/") else BRANCH_PREFIX + ref


def followed(branch: str, pinned: str | None) -> frozenset[str]:
    """The refs whose pushes start a run: the branch followed; a pinned tag's or branch's ref (a
    pinned commit moves with no push: none)."""
    if pinned is None:
        return frozenset({BRANCH_PREFIX + branch})
    if COMMIT.fullmatch(pinned):
        return frozenset()
    if pinned.startswith("refs/"):
        return frozenset({pinned})
    return frozenset({BRANCH_PREFIX + pinned, TAG_PREFIX + pinned})
