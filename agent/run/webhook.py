"""The agent's HTTP endpoints: GET /healthz, /readyz, /metrics and the signed POST /hooks/git."""

from __future__ import annotations

import hashlib
import hmac
import http.server
import logging
from typing import Any

import prometheus_client

log = logging.getLogger(__name__)


def verify_webhook(secret: bytes, body: bytes, headers: Any) -> bool:
    """GitHub, GitLab or generic HMAC signature; constant-time comparisons only."""
    for name in ("X-Hub-Signature-256", "X-Signature-256"):
        value = headers.get(name)
        if value:
            expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
            return hmac.compare_digest(value.strip(), expected)
    token = headers.get("X-Gitlab-Token")
    if token:
        return hmac.compare_digest(token.strip().encode(), secret)
    return False


class Handler(http.server.BaseHTTPRequestHandler):
    agent: Any  # the scheduler.Agent, set by server()

    def log_message(self, *args: Any) -> None:
        pass

    def _reply(self, status: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/healthz":
            alive = self.agent.worker.is_alive() and not self.agent.stopping.is_set()
            self._reply(200 if alive else 503, b"ok\n" if alive else b"stopping\n")
        elif self.path == "/readyz":
            ready = self.agent.is_ready()
            self._reply(200 if ready else 503, b"ready\n" if ready else b"no good revision yet\n")
        elif self.path == "/metrics":
            self._reply(200, prometheus_client.generate_latest(self.agent.metrics.registry),
                        prometheus_client.CONTENT_TYPE_LATEST)
        else:
            self._reply(404, b"not found\n")

    def do_POST(self) -> None:
        if self.path != "/hooks/git":
            self._reply(404, b"not found\n")
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.agent.secret is None:
            self._reply(404, b"webhook disabled: no webhook secret configured\n")
        elif not verify_webhook(self.agent.secret, body, self.headers):
            log.warning("webhook call with a missing or bad signature refused")
            self._reply(401, b"bad or missing signature\n")
        else:
            self.agent.trigger("webhook")
            self._reply(202, b"sync triggered\n")


def server(agent: Any, host: str, port: int) -> http.server.ThreadingHTTPServer:
    """The HTTP server for `agent` (a scheduler.Agent), not yet serving."""
    handler = type("AgentHandler", (Handler,), {"agent": agent})
    return http.server.ThreadingHTTPServer((host, port), handler)
