"""Peers that hold a client: one that accepts connections and then trickles one byte every few
seconds, forever (a zone API, or any HTTP peer, alive at the TCP level but stuck: every per-read
timeout is satisfied, so only a bound on the whole request, or the run, ends a call); and a DNS
server whose zone transfer never ends (`AxfrPeer`: a flood of records, huge messages, or a trickle).
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Self

import dns.exception
import dns.message
import dns.rrset

from tests.support.procs import free_port


class _Peer:
    """A TCP server on loopback that serves each connection in a thread of its own (`_serve`)."""

    def __init__(self, address: str = "127.0.0.1") -> None:
        self.address, self.port = address, free_port(address)
        self.accepted = 0
        self.first_accept: float | None = None  # time.monotonic() of the first connection
        self._stop = threading.Event()
        self._sock = socket.create_server((self.address, self.port))
        self._threads: list[threading.Thread] = []

    def start(self) -> Self:
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
            self._spawn(self._serve, conn)

    def _serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self._stop.set()
        self._sock.close()
        for thread in self._threads:
            thread.join(5)


class StallingPeer(_Peer):
    def __init__(self, *, every: float = 3.0, data: bytes = b"HTTP/1.1 200 OK\r\nX-Slow: ") -> None:
        super().__init__()
        self.every, self.data = every, data
        self.url = f"http://127.0.0.1:{self.port}"

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            for i in range(10_000):
                try:
                    conn.sendall(self.data[i % len(self.data):i % len(self.data) + 1])
                except OSError:
                    return
                if self._stop.wait(self.every):
                    return


class AxfrPeer(_Peer):
    """A hostile DNS server on loopback (TCP): it answers any AXFR with the zone's SOA and then more
    records, never the closing SOA. `mode` "flood": messages of `per_message` A records as fast as
    the client reads them; "huge": messages of the largest size DNS allows (TXT records); "trickle":
    one small message every `every` seconds. `sent` counts the records it has sent."""

    def __init__(self, mode: str = "flood", *, per_message: int = 500, every: float = 2.0) -> None:
        assert mode in ("flood", "huge", "trickle")
        super().__init__()
        self.mode, self.per_message, self.every = mode, per_message, every
        self.sent = 0

    def _messages(self, query: dns.message.Message) -> Iterator[bytes]:
        """The SOA, then records without end, composed on the wire (dnspython would be the bottleneck):
        each owner is a new label under the question's name (a compression pointer to offset 12)."""
        zone = query.question[0].name
        soa = dns.message.make_response(query)
        soa.answer.append(dns.rrset.from_text(zone, 300, "IN", "SOA",
                                              f"ns1.{zone} hostmaster.{zone} 1 3600 600 604800 300"))
        yield soa.to_wire()
        head = soa.to_wire()[:12]
        question = b"".join(bytes((len(label),)) + label for label in zone.labels) + struct.pack("!HH", 252, 1)
        index = 0
        while True:
            if self.mode == "huge":  # about 56 KB: 200 TXT RRs of one 250-octet string
                count, rtype, rdata = 200, 16, bytes((250,)) + b"x" * 250
            else:
                count, rtype, rdata = (1 if self.mode == "trickle" else self.per_message), 1, b""
            records = []
            for i in range(index, index + count):
                label = f"h{i}".encode()
                data = rdata or struct.pack("!I", 0x0A000000 | (i & 0xFFFFFF))
                records.append(bytes((len(label),)) + label + b"\xc0\x0c" + struct.pack("!HHIH", rtype, 1, 300, len(data))
                               + data)
            index += count
            self.sent += count
            yield head[:4] + struct.pack("!HHHH", 1, count, 0, 0) + question + b"".join(records)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(5)
                length = struct.unpack("!H", _recv_exactly(conn, 2))[0]
                query = dns.message.from_wire(_recv_exactly(conn, length))
                for wire in self._messages(query):
                    conn.sendall(struct.pack("!H", len(wire)) + wire)
                    if self._stop.is_set() or (self.mode == "trickle" and self._stop.wait(self.every)):
                        return
            except (OSError, EOFError, dns.exception.DNSException):
                return

def _recv_exactly(conn: socket.socket, count: int) -> bytes:
    out = b""
    while len(out) < count:
        chunk = conn.recv(count - len(out))
        if not chunk:
            raise EOFError
        out += chunk
    return out
