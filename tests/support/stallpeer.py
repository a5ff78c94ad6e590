"""A peer that accepts connections and then trickles: one byte every few seconds, forever.

Stands in for a zone API (or any HTTP peer) that is alive at the TCP level but stuck: every
per-read timeout is satisfied, so only a bound on the whole request (or the run) ends a call.
"""

from __future__ import annotations

import socket
import threading
import time

from tests.support.procs import free_port


class StallingPeer:
    def __init__(self, *, every: float = 3.0, data: bytes = b"HTTP/1.1 200 OK\r\nX-Slow: ") -> None:
        self.every, self.data = every, data
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.accepted = 0
        self.first_accept: float | None = None  # time.monotonic() of the first connection
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", self.port))
        self._threads: list[threading.Thread] = []

    def start(self) -> StallingPeer:
        self._spawn(self._accept)
        return self

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        self._sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            self.first_accept = self.first_accept or time.monotonic()
            self._spawn(self._trickle, conn)

    def _trickle(self, conn: socket.socket) -> None:
        with conn:
            for i in range(10_000):
                try:
                    conn.sendall(self.data[i % len(self.data):i % len(self.data) + 1])
                except OSError:
                    return
                if self._stop.wait(self.every):
                    return

    def stop(self) -> None:
        self._stop.set()
        self._sock.close()
        for thread in self._threads:
            thread.join(5)
