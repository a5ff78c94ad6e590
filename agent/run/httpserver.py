"""The agent's HTTP server: waitress, with the limits a port open to a network needs.

    connections   at most `connection_limit`, handled asynchronously: an idle or slow client holds
                  a socket, never a thread; THREADS worker threads only ever run complete requests
    timeouts      a request's headers must arrive within `header_timeout` of its first byte (an idle
                  connection is closed after as long), its body within `body_timeout` after them
    bodies        over `max_body` bytes: 413 as soon as the Content-Length is read (chunked: once
                  the limit is passed); at most INBUF_IN_MEMORY bytes of a body are held in memory
    framing       a request whose length could be read two ways (Content-Length with
                  Transfer-Encoding, either twice, a folded header, a chunk over the body limit):
                  400 (agent/run/httpframing.py)
    bad requests  waitress's 400 (431, 501) and one log line, never a traceback; the connection
                  then closes lingering: writes shut, what the client still sends read and dropped
                  for up to LINGER seconds (LINGER_BYTES), so the close does not reset the
                  connection before the client has read the reply
    identity      no Server header and no version in any response
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import socket
import threading
import time
from typing import Any

from waitress import wasyncore
from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.server import TcpWSGIServer
from waitress.task import ErrorTask
from waitress.utilities import RequestEntityTooLarge

from agent.run import httpframing

log = logging.getLogger(__name__)

THREADS = 4
MAX_HEADER_BYTES = 32 * 1024
INBUF_IN_MEMORY = 64 * 1024  # the rest of a body (up to max_body) waits in a temporary file
LINGER = 2.0  # seconds a refused client's bytes are still read (and dropped) after the reply
LINGER_BYTES = 16 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class HttpLimits:
    max_body: int
    header_timeout: float
    body_timeout: float
    connection_limit: int


class _NoTraceback(logging.Filter):
    """Turns waitress's exception logs into one line: the exception, without its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            record.msg, record.args = f"{record.getMessage()}: {record.exc_info[1]!r}", None
            record.exc_info = record.exc_text = None
        return True


def _detail(text: str) -> str:
    """waitress's reason, without the request text some reasons quote (a header may hold a
    token)."""
    return text.split('"')[0].strip()[:120]


class _RefusedTask(ErrorTask):  # type: ignore[misc]
    """waitress's error response to a request it refused while parsing, and one log line about
    it."""

    def execute(self) -> None:
        error = self.request.error
        if isinstance(error, RequestEntityTooLarge):
            limit = self.channel.server.limits.max_body
            error = self.request.error = RequestEntityTooLarge(f"the limit is {limit} bytes")
        log.warning("refused a request from %s: %s %s (%s)", self.channel.addr[0], error.code,
                    error.reason, _detail(error.body))
        self.channel.refused = True
        super().execute()


class _Channel(HTTPChannel):  # type: ignore[misc]
    """One connection; notes when the request being received started and when its headers ended."""

    error_task_class = _RefusedTask
    # RFC 9112 framing: an ambiguous length is a 400 (agent/run/httpframing.py)
    parser_class = httpframing.Parser
    refused = False  # a request was refused: the close lingers
    lingering_until: float | None = None
    dropped = 0

    def received(self, data: bytes) -> bool:
        result = bool(super().received(data))
        request = self.request
        if request is not None:
            now = time.monotonic()
            if getattr(request, "started_at", None) is None:
                request.started_at = now
            if request.headers_finished and getattr(request, "body_since", None) is None:
                request.body_since = now
        return result

    def handle_close(self) -> None:
        """After a refusal, writes are shut and the client's bytes drained before the socket closes:
        closed with unread data, the kernel resets the connection, and the reset may reach the
        client before it read the reply (its body was still on the way)."""
        if (self.refused and self.lingering_until is None and self.connected
            and not self.total_outbufs_len):
            try:
                self.socket.shutdown(socket.SHUT_WR)
                self.lingering_until = time.monotonic() + LINGER
                self.will_close = False
                return
            except OSError:
                pass
        super().handle_close()

    def readable(self) -> bool:
        return self.lingering_until is not None or bool(super().readable())

    def writable(self) -> bool:
        return self.lingering_until is None and bool(super().writable())

    def handle_read(self) -> None:
        if self.lingering_until is None:
            super().handle_read()
            return
        try:
            data = self.socket.recv(65536)
        except OSError:
            data = b""
        self.dropped += len(data)
        if not data or self.dropped > LINGER_BYTES or time.monotonic() > self.lingering_until:
            super().handle_close()

    @property
    def lingered(self) -> bool:
        """Lingering past its time (the client neither sends nor closes): the server closes it."""
        return self.lingering_until is not None and time.monotonic() > self.lingering_until


class Server(TcpWSGIServer):  # type: ignore[misc]
    """A WSGI application served on `host:port` within `limits`; `serve` runs it until stopped."""

    channel_class = _Channel

    def __init__(self, app: Any, *, host: str, port: int, limits: HttpLimits) -> None:
        self.limits = limits
        adj = Adjustments(host=host, port=port, threads=THREADS, ident="", expose_tracebacks=False,
                          connection_limit=limits.connection_limit, asyncore_use_poll=True,
                          max_request_body_size=limits.max_body + 1,  # waitress refuses >= this
                          max_request_header_size=MAX_HEADER_BYTES, inbuf_overflow=INBUF_IN_MEMORY,
                          channel_timeout=math.ceil(limits.header_timeout), cleanup_interval=1,
                          log_socket_errors=False)
        super().__init__(app, map={}, adj=adj)
        for name in ("waitress", "waitress.queue"):
            logger = logging.getLogger(name)
            if not any(isinstance(f, _NoTraceback) for f in logger.filters):
                logger.addFilter(_NoTraceback())

    @property
    def address(self) -> str:
        return f"{self.effective_host}:{self.effective_port}"

    def maintenance(self, now: float) -> None:
        """Closes connections that are idle, or slow to send their headers or body (runs every
        second)."""
        for channel in list(self.active_channels.values()):
            if channel.lingered:
                channel.handle_close()
                continue
            late = None if channel.requests or channel.will_close else self._late(channel, now)
            if late is not None:
                channel.will_close = True
                if late:  # an idle connection closes without a word
                    log.info("closed the connection from %s: %s", channel.addr[0], late)

    def _late(self, channel: Any, now: float) -> str | None:
        """What the connection failed to send in time ("" when it was just idle), or None."""
        request, clock, limits = channel.request, time.monotonic(), self.limits
        if request is None:  # nothing received since the last response
            return "" if now - channel.last_activity > limits.header_timeout else None
        if not request.headers_finished:
            late = clock - request.started_at > limits.header_timeout
            return (f"request headers not complete within {limits.header_timeout:g} "
                    f"s") if late else None
        late = clock - request.body_since > limits.body_timeout
        return f"request body not complete within {limits.body_timeout:g} s" if late else None

    def serve(self, stop: threading.Event) -> None:
        """Serves until `stop` is set (`wake` makes it notice at once), then closes every
        connection."""
        try:
            while not stop.is_set():
                wasyncore.loop(timeout=1, map=self._map, use_poll=True, count=1)
        finally:
            self.task_dispatcher.shutdown(timeout=5)
            wasyncore.close_all(self._map)

    def wake(self) -> None:
        """Makes `serve` notice `stop` at once; nothing to do once it has ended (its trigger is
        closed)."""
        with contextlib.suppress(OSError):
            self.pull_trigger()
