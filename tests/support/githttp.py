"""A real Git smart-HTTP server on loopback (`git http-backend` as CGI) that authenticates like
GitHub's git endpoint: HTTP Basic with the user `x-access-token` and the token as password; a Bearer
header is refused. For testing the agent's HTTPS token auth, fetch and notes push; `stall` holds the
requests it picks open without a byte of answer (a remote that accepts, then hangs)."""

from __future__ import annotations

import base64
import http.server
import pathlib
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from tests.support.procs import free_port, require


class GitHttpServer:
    def __init__(self, root: pathlib.Path, token: str, user: str = "x-access-token", host: str = "127.0.0.1") -> None:
        self.root, self.token, self.host = root, token, host
        self.expected = "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()
        self.authorizations: list[str] = []  # every Authorization header received, in order
        self.port = free_port(host)
        self.requests: list[tuple[str, str, int]] = []
        self.stall: Callable[[str, str], bool] | None = None  # (method, path) -> hold this request unanswered
        self.first_stall: float | None = None  # time.monotonic() of the first request held
        self._release = threading.Event()
        backend = [require("git", component="git"), "http-backend"]
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                server.authorizations.append(self.headers.get("Authorization", ""))
                if self.headers.get("Authorization") != server.expected:
                    server.requests.append((self.command, self.path, 401))
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="GitHub"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path, _, query = self.path.partition("?")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if server.stall is not None and server.stall(self.command, self.path):
                    server.first_stall = server.first_stall or time.monotonic()
                    server.requests.append((self.command, self.path, 0))
                    server._release.wait()  # accepted, read, never answered
                    return
                env = {"GIT_PROJECT_ROOT": str(server.root), "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
                       "QUERY_STRING": query, "REQUEST_METHOD": self.command, "REMOTE_USER": "agent",
                       "REMOTE_ADDR": "127.0.0.1", "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                       "CONTENT_LENGTH": str(len(body)), "GIT_HTTP_MAX_REQUEST_BUFFER": "100M"}
                if self.headers.get("Content-Encoding"):
                    env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
                out = subprocess.run(backend, input=body, env=env, capture_output=True, check=False).stdout
                head, _, payload = out.partition(b"\r\n\r\n")
                status = 200
                headers = []
                for line in head.decode(errors="replace").split("\r\n"):
                    key, _, value = line.partition(":")
                    if key.lower() == "status":
                        status = int(value.strip().split()[0])
                    elif key:
                        headers.append((key, value.strip()))
                server.requests.append((self.command, self.path, status))
                self.send_response(status)
                for key, value in headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = _serve
            do_POST = _serve

        self.httpd = http.server.ThreadingHTTPServer((host, self.port), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, repo: str) -> str:
        return f"http://{self.host}:{self.port}/{repo}"

    def start(self) -> GitHttpServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
