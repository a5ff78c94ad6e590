"""HTTP/1.1 framing per RFC 9112 on the agent's listener (webhook, health, metrics), over raw sockets:
a request whose length is ambiguous - Content-Length with Transfer-Encoding, Content-Length twice or
in conflict, a chunk size over the body limit, a folded header line, Transfer-Encoding in HTTP/1.0,
an HTTP/1.1 request without exactly one Host, a request line without an HTTP version - is answered 400 and its connection closed, so that bytes one reading would count as body are never
read as a second request (request smuggling behind a proxy that frames differently)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agent.run.httpserver import HttpLimits, Server

SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: agent\r\n\r\n"


class _App:
    def __init__(self) -> None:
        self.seen: list[tuple[str, bytes]] = []

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        body = environ["wsgi.input"].read()
        self.seen.append((environ["PATH_INFO"], body))
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]


@pytest.fixture()
def served() -> Iterator[tuple[Server, _App]]:
    app = _App()
    srv = Server(app, host="127.0.0.1", port=0,
                 limits=HttpLimits(max_body=1024 * 1024, header_timeout=5, body_timeout=5, connection_limit=50))
    stop = threading.Event()
    thread = threading.Thread(target=srv.serve, args=(stop,), daemon=True)
    thread.start()
    yield srv, app
    stop.set()
    srv.wake()
    thread.join(10)


def _exchange(server: Server, raw: bytes, replies: int = 2) -> tuple[bytes, bool]:
    """What the server answers to `raw` (until it closes, or `replies` replies came), and whether it
    closed the connection (within 5 s)."""
    host, port = server.address.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(raw)
        reply, closed, until = b"", False, time.monotonic() + 5
        while time.monotonic() < until:
            try:
                data = sock.recv(65536)
            except TimeoutError:
                break
            except ConnectionResetError:
                closed = True
                break
            if not data:
                closed = True
                break
            reply += data
            if reply.count(b"HTTP/1.1 ") >= replies and reply.endswith(b"ok"):
                break
    return reply, closed


AMBIGUOUS = {
    "Content-Length and Transfer-Encoding": b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nContent-Length: %d\r\n"
                                            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" % (5 + len(SMUGGLED)) + SMUGGLED,
    "Transfer-Encoding then Content-Length": b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nTransfer-Encoding: chunked\r\n"
                                             b"Content-Length: 4\r\n\r\n0\r\n\r\n" + SMUGGLED,
    "Content-Length twice, the same": b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nContent-Length: 2\r\n"
                                      b"Content-Length: 2\r\n\r\n{}" + SMUGGLED,
    "Content-Length twice, in conflict": b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nContent-Length: 2\r\n"
                                         b"Content-Length: %d\r\n\r\n{}" % (2 + len(SMUGGLED)) + SMUGGLED,
    "Content-Length as a list": b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nContent-Length: 2, 2\r\n\r\n{}" + SMUGGLED,
    "a chunk size over the body limit": b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nTransfer-Encoding: chunked\r\n\r\n"
                                        b"200000\r\n" + b"x" * 1000,
    "a chunk size of 80 bits": b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nTransfer-Encoding: chunked\r\n\r\n"
                               b"ffffffffffffffffffff\r\nx\r\n0\r\n\r\n" + SMUGGLED,
    "a folded header line": b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nX-Hub-Signature-256: sha256=00\r\n"
                            b" 11\r\nContent-Length: 2\r\n\r\n{}" + SMUGGLED,
    "a folded Content-Length": b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nContent-Length:\r\n 2\r\n\r\n{}" + SMUGGLED,
    "Transfer-Encoding in HTTP/1.0": b"POST /hooks/git HTTP/1.0\r\nHost: agent\r\nTransfer-Encoding: chunked\r\n"
                                     b"Connection: keep-alive\r\n\r\n0\r\n\r\n" + SMUGGLED,
    "Transfer-Encoding twice": b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nTransfer-Encoding: chunked\r\n"
                               b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + SMUGGLED,
    "HTTP/1.1 without Host": b"POST /hooks/git HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}" + SMUGGLED,
    "Host twice": b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nHost: other\r\nContent-Length: 2\r\n\r\n{}" + SMUGGLED,
    "a request line without a version (HTTP/0.9)": b"GET /hooks/git\r\n\r\n" + SMUGGLED,
    "a request line with a bare version word": b"GET /hooks/git HTTP\r\nHost: agent\r\n\r\n" + SMUGGLED,
}


@pytest.mark.parametrize("case", sorted(AMBIGUOUS))
def test_an_ambiguously_framed_request_gets_400_and_its_connection_is_closed(
        case: str, served: tuple[Server, _App]) -> None:
    server, app = served
    reply, closed = _exchange(server, AMBIGUOUS[case])
    assert reply.startswith((b"HTTP/1.1 400 Bad Request\r\n", b"HTTP/1.0 400 Bad Request\r\n")), reply[:200]
    assert reply.count(b" 400 Bad Request") == 1 and b" 200 " not in reply and closed, reply
    assert app.seen == []  # neither the request nor what it would smuggle reached the application


def test_well_framed_requests_are_served_and_the_connection_kept(served: tuple[Server, _App]) -> None:
    server, app = served
    chunked = b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    sized = b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nContent-Length: 2\r\n\r\n{}"
    reply, closed = _exchange(server, chunked + sized + b"GET /last HTTP/1.1\r\nHost: agent\r\n\r\n", replies=3)
    assert reply.count(b"HTTP/1.1 200 OK") == 3 and not closed, reply
    assert app.seen == [("/hooks/git", b"{}"), ("/hooks/git", b"{}"), ("/last", b"")]
