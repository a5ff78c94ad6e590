"""A small real HTTP server on loopback that records every request it receives and answers from a
script: for testing commit statuses (GitHub, GitLab, Gitea) and alerts (webhook, Slack) end to end."""

from __future__ import annotations

import dataclasses
import http.server
import json
import threading
import time
from typing import Any

from tests.support.procs import free_port


@dataclasses.dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclasses.dataclass
class Answer:
    status: int = 201
    body: bytes = b"{}"
    delay: float = 0.0  # seconds to wait before answering (a slow server)


class Recorder:
    """`answers` are used in order, the last one for every request after; default 201 {}."""

    def __init__(self, *answers: Answer) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.received: list[Received] = []
        self.answers = list(answers) or [Answer()]
        self._lock = threading.Lock()
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                answer = recorder.record(Received(self.command, self.path,
                                                  {k.lower(): v for k, v in self.headers.items()}, body))
                time.sleep(answer.delay)
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(answer.body)))
                    self.end_headers()
                    self.wfile.write(answer.body)
                except OSError:  # the client gave up waiting
                    pass

            do_GET = do_POST  # a GET is recorded and answered the same way

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="recorder", daemon=True)

    def record(self, request: Received) -> Answer:
        with self._lock:
            self.received.append(request)
            return self.answers[min(len(self.received), len(self.answers)) - 1]

    def __enter__(self) -> Recorder:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
