"""The agent's HTTP server closes a refused connection lingering (agent/run/httpserver.py): a client
whose body was still on the way when the 413 was sent finishes sending what it had in flight and reads
that reply, instead of a connection reset on its next write (a socket closed with unread bytes answers
them with a reset; a client that reports its failed write, as most do, never shows the 413)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agent.run.httpserver import HttpLimits, Server


def _app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]


@pytest.fixture()
def server() -> Iterator[Server]:
    limits = HttpLimits(max_body=1024 * 1024, header_timeout=5, body_timeout=5, connection_limit=50)
    srv = Server(_app, host="127.0.0.1", port=0, limits=limits)
    stop = threading.Event()
    thread = threading.Thread(target=srv.serve, args=(stop,), daemon=True)
    thread.start()
    yield srv
    stop.set()
    srv.wake()
    thread.join(10)


def test_a_client_still_sending_its_body_reads_the_413_not_a_reset(server: Server) -> None:
    host, port = server.address.split(":")
    for _ in range(3):
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nContent-Length: %d\r\n\r\n" % (100 * 1024 * 1024))
            time.sleep(0.3)  # the server has replied 413 by now; the client, busy, has not read it yet
            error = None
            try:
                for _ in range(64):  # 4 MiB more of its body: bytes the server never wanted
                    sock.sendall(b"x" * 65536)
                    time.sleep(0.005)
            except OSError as exc:
                error = exc
            reply = b""
            try:
                while data := sock.recv(65536):
                    reply += data
            except ConnectionResetError:
                pass
        assert error is None  # not reset while it sent
        assert reply.startswith(b"HTTP/1.1 413 "), reply[:80]
