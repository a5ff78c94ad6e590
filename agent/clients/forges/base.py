"""What the agent knows of a forge (a Git server: GitHub, GitLab, Gitea, or a generic sender), as
one class per forge implementing `Forge`:

    webhook      the header carrying its signature and how it is checked; the header naming the
                 event, which events are pushes and which are pings; the ref a push names
    statuses     the state of a commit status per outcome (none: the forge takes no statuses), its
                 API URL by default, what a project must look like, the request that posts one, and
                 the answer that says it was posted already

The signature is checked before the body is read for anything (agent/run/webhook.py); the body is
then read for its `ref` only. No class does I/O: the request is posted by clients/httppost.py.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import urllib.parse
from collections.abc import Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    import httpx

BRANCH_PREFIX = "refs/heads/"


class ForgeName(StrEnum):
    GITHUB = "github"
    GITLAB = "gitlab"
    GITEA = "gitea"
    GENERIC = "generic"


@dataclasses.dataclass(frozen=True)
class Delivery:
    """A webhook delivery read: `run` it or not, and why not."""

    forge: str
    event: str  # the forge's event name ("" for a generic delivery)
    ref: str | None  # the full ref pushed (None: the delivery names none)
    push: bool  # the event is a push (of a branch, tag or other ref)
    ping: bool = False  # a forge's test delivery: answered, no run


def ref_of(body: bytes) -> str | None:
    """The `ref` of a JSON object body (or of a form body's `payload`, GitHub's other content type),
    as a full ref ("main" -> "refs/heads/main"); None without one."""
    if body.startswith(b"payload="):
        form = urllib.parse.parse_qs(body.decode("utf-8", "replace"))
        body = form.get("payload", [""])[0].encode()
    try:
        doc = json.loads(body) if body.strip() else None
    except (ValueError, RecursionError):
        return None
    ref = doc.get("ref") if isinstance(doc, dict) else None
    if not isinstance(ref, str) or not ref.strip():
        return None
    ref = ref.strip()
    return ref if ref.startswith("refs/") else BRANCH_PREFIX + ref


def hmac_sha256(secret: bytes, body: bytes) -> bytes:
    """The hex HMAC-SHA256 of `body`, as bytes (compared in constant time, as bytes only)."""
    return hmac.new(secret, body, hashlib.sha256).hexdigest().encode()


class Forge:
    """One forge (the table above). A subclass sets the class attributes it has and the methods of
    them."""

    name: ClassVar[ForgeName]
    signature_header: ClassVar[str]
    event_header: ClassVar[str] = ""  # none: every delivery is a push (a generic sender)
    push_events: ClassVar[frozenset[str]] = frozenset()  # lowercase
    ping_events: ClassVar[frozenset[str]] = frozenset()
    # Outcome (PENDING too) -> the status state; none: no statuses
    states: ClassVar[Mapping[str, str]] = {}
    status_name: ClassVar[str] = "context"  # the body's key naming the status

    def signed(self, secret: bytes, body: bytes, value: str) -> bool:
        """Whether `value` of its signature header signs `body` with `secret`."""
        raise NotImplementedError

    def read(self, headers: Mapping[str, str | None], body: bytes) -> Delivery:
        """The delivery (its signature checked): which event, which ref."""
        event = (headers.get(self.event_header) or "").strip() if self.event_header else ""
        push = not self.event_header or event.lower() in self.push_events
        return Delivery(self.name, event, ref_of(body), push,
                        ping=event.lower() in self.ping_events)

    def api_url(self, base: str, host: str) -> str:
        """The status API's base URL for a repository at `base` (scheme, host and port) on
        `host`."""
        raise NotImplementedError

    def project_problem(self, project: str) -> str | None:
        """Why `project` (from the repository URL or the setting) cannot take statuses, or None."""
        return None

    def status_request(self, api_url: str, project: str, revision: str,
                       token: str) -> tuple[str, dict[str, str]]:
        """The URL and headers of the POST of a status on `revision`."""
        raise NotImplementedError

    def already_posted(self, response: httpx.Response) -> bool:
        """An answer that is no success but says the status is there already."""
        return False


def owner_repo(project: str) -> str | None:
    """The project rule of GitHub and Gitea: owner/repo."""
    return None if project.count("/") == 1 else f"{project!r} is not owner/repo"
