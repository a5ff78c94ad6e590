"""The agent's HTTP endpoints: GET /healthz, /readyz, /metrics and the signed POST /hooks/git.

A delivery is checked for its signature first; then its body is read for the ref it pushed (each
forge's headers, events and signature: agent/clients/forges/): a push of the followed branch starts
a run (202 "sync requested"); a push of another branch, a tag or a notes ref - the agent's own
reports included - is answered 202 "ignored: ref X is not followed" and starts nothing (counted as
deliveries with result "ignored"); a forge's ping is answered 200 and starts nothing. A generic
delivery without a ref (any body that is not a JSON object with a string "ref") asks for a sync."""

from __future__ import annotations

import dataclasses
import logging
import pathlib
import re
from collections.abc import Callable, Iterable, Mapping
from wsgiref.types import StartResponse, WSGIEnvironment

import prometheus_client

from agent.clients import forges
from agent.clients.forges import base
from agent.outcome import delivery

log = logging.getLogger(__name__)

MIN_SECRET_LENGTH = 32
TEXT = "text/plain; charset=utf-8"
BRANCH_PREFIX = base.BRANCH_PREFIX
TAG_PREFIX = "refs/tags/"
COMMIT = re.compile(r"[0-9a-fA-F]{7,64}")


def read_secret(path: pathlib.Path) -> bytes:
    """The shared secret from its file; an empty or short one is refused. The value never appears in
    a message."""
    return delivery.read_key(path, what="webhook secret", minimum=MIN_SECRET_LENGTH,
                             use="give the same value to the Git server's webhook")


def verify_webhook(secret: bytes, body: bytes, headers: Mapping[str, str | None]) -> bool:
    """GitHub, Gitea, GitLab or generic signature (clients/forges/); constant-time comparisons of
    bytes only."""
    return forges.verify(secret, body, headers)


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


@dataclasses.dataclass(frozen=True)
class Reply:
    status: str
    body: bytes
    ctype: str = TEXT
    allow: str | None = None  # for 405

    def headers(self) -> list[tuple[str, str]]:
        out = [("Content-Type", self.ctype), ("Content-Length", str(len(self.body)))]
        return out + ([("Allow", self.allow)] if self.allow else [])


@dataclasses.dataclass(frozen=True)
class App:
    """The WSGI application. The server has already refused oversized and malformed requests."""

    alive: Callable[[], bool]
    ready: Callable[[], bool]
    exposition: Callable[[], bytes]  # the /metrics text
    secret: bytes | None
    deliveries: prometheus_client.Counter  # by result: accepted, ignored, refused, standby
    on_delivery: Callable[[], None]  # a push of a followed ref passed its signature check
    leading: Callable[[], bool] = lambda: True  # False on a standby replica: it does not sync
    followed: frozenset[str] = frozenset({"refs/heads/main"})  # the refs whose pushes start a run

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        reply = self._route(environ)
        start_response(reply.status, reply.headers())
        return [reply.body]

    def _route(self, environ: WSGIEnvironment) -> Reply:
        path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD", "")
        if path == "/hooks/git":
            if method != "POST":
                return Reply("405 Method Not Allowed", b"POST only\n", allow="POST")
            return self._hook(environ)
        if path not in ("/healthz", "/readyz", "/metrics"):
            return Reply("404 Not Found", b"not found\n")
        if method not in ("GET", "HEAD"):
            return Reply("405 Method Not Allowed", b"GET only\n", allow="GET, HEAD")
        return self._probe(path)

    def _probe(self, path: str) -> Reply:
        """/healthz, /readyz or /metrics."""
        if path == "/healthz":
            if not self.alive():
                return Reply("503 Service Unavailable", b"stopping\n")
            return Reply("200 OK", b"ok\n")
        if path == "/readyz":
            if not self.ready():
                return Reply("503 Service Unavailable",
                             b"not serving the newest good revision: none applied yet, or the "
                             b"newest commit was rejected\n")
            return Reply("200 OK", b"ready\n")
        return Reply("200 OK", self.exposition(), prometheus_client.CONTENT_TYPE_LATEST)

    def _hook(self, environ: WSGIEnvironment) -> Reply:
        """Checks the signature before anything else touches the body; then reads the ref pushed."""
        if self.secret is None:
            return Reply("404 Not Found", b"webhook disabled: no webhook secret configured\n")
        headers = {name: environ.get("HTTP_" + name.upper().replace("-", "_"))
                   for name in forges.HEADERS}
        body = b""
        if forges.signed(headers):
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        if not verify_webhook(self.secret, body, headers):
            self.deliveries.labels("refused").inc()
            log.warning("webhook call from %s with a missing or bad signature refused",
                        environ.get("REMOTE_ADDR"))
            return Reply("401 Unauthorized", b"bad or missing signature\n")
        push = forges.read(headers, body)
        ignored = self._ignored(push)
        if ignored is not None:
            return ignored
        if not self.leading():  # reached directly: the Service selects the leader's pod only
            self.deliveries.labels("standby").inc()
            return Reply("503 Service Unavailable",
                         b"this replica is a standby and does not sync: send webhooks "
                         b"to the Service bindy-agent, which selects the leader's pod\n")
        self.deliveries.labels("accepted").inc()
        self.on_delivery()
        return Reply("202 Accepted", b"sync requested\n")

    def _ignored(self, push: forges.Delivery) -> Reply | None:
        """The answer to a delivery that starts no run (a ping, another event, a ref not followed);
        None for a push of a followed ref (or a generic delivery naming none)."""
        refs = ", ".join(sorted(self.followed)) or "none"
        if push.ping:
            self.deliveries.labels("ignored").inc()
            return Reply("200 OK",
                         f"pong: {push.forge} ping received; pushes of {refs} start a "
                         f"run\n".encode())
        why = (f"event {push.event!r} is not a push" if not push.push
               else f"ref {push.ref} is not followed" if push.ref is not None
               and push.ref not in self.followed
               else "")
        if not why:
            return None
        self.deliveries.labels("ignored").inc()
        log.info("webhook delivery (%s) ignored: %s", push.forge, why)
        return Reply("202 Accepted", f"ignored: {why} (followed: {refs})\n".encode())
