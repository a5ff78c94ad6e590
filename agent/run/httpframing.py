"""How the agent's HTTP server reads where a request ends (RFC 9112 section 6), stricter than
waitress: any request whose length two HTTP implementations could read differently is refused with
400 and its connection closed, so that bytes one of them counts as body are never read as a second
request (request smuggling behind a proxy that frames otherwise).

    Content-Length and Transfer-Encoding together    400 (RFC 9112 6.1: "ought to be handled as an
                                                     error")
    Content-Length more than once (equal or not)     400 (6.3: a list or conflicting values)
    Transfer-Encoding more than once, or chunked     400 (6.1: chunked at most once, and last)
      twice in one list
    Transfer-Encoding in an HTTP/1.0 request         400 (6.1: faulty framing, close)
    a folded header line (obs-fold)                  400 (5.2: a server may reject it; we do)
    a chunk size over the body limit                 400 (7.1: a recipient must guard against huge
                                                     chunk sizes) - read from its digits, before a
                                                     byte of the chunk is
    a request line without an HTTP version           400 (3: method SP target SP version; no
                                                     HTTP/0.9)
    HTTP/1.1 without Host, or Host more than once    400 (3.2: "MUST respond with a 400")

waitress answers a parser error 400 and closes the connection (agent/run/httpserver.py lingers so
the client reads the reply). Everything else is waitress's own parsing.
"""

from __future__ import annotations

import re
from typing import Any

from waitress.parser import HTTPRequestParser, ParsingError
from waitress.receiver import ChunkedReceiver
from waitress.utilities import BadRequest

_VERSION = re.compile(rb"HTTP/[0-9]\.[0-9]")


def _lines(header_plus: bytes) -> tuple[bytes, list[bytes]]:
    first, _, rest = header_plus.partition(b"\r\n")
    return first, [line for line in rest.split(b"\r\n") if line]


def check(header_plus: bytes) -> None:
    """ParsingError (a 400) when the request's framing is ambiguous (see the module's table)."""
    first, lines = _lines(header_plus)
    version = _version(first)
    if any(line[:1] in (b" ", b"\t") for line in lines):
        raise ParsingError("a folded header line (obsolete line folding) is not accepted")
    names = [line.partition(b":")[0].strip().lower() for line in lines]
    _length(names, version)
    for name, line in zip(names, lines, strict=True):
        if name == b"transfer-encoding":
            codings = [c.strip().lower() for c in line.partition(b":")[2].split(b",")]
            if codings.count(b"chunked") > 1:
                raise ParsingError("chunked more than once in Transfer-Encoding")


def _version(first: bytes) -> bytes:
    """The request line's HTTP version; ParsingError when it has none."""
    parts = first.split(b" ")
    if len(parts) != 3 or not _VERSION.fullmatch(parts[2]):
        raise ParsingError("a request line without an HTTP version (method, target, HTTP/1.x)")
    return parts[2]


def _length(names: list[bytes], version: bytes) -> None:
    """ParsingError unless one header at most says where the body ends, in a way `version`
    allows (and HTTP/1.1 has exactly one Host)."""
    lengths, encodings = names.count(b"content-length"), names.count(b"transfer-encoding")
    if lengths and encodings:
        raise ParsingError("both Content-Length and Transfer-Encoding: the request's length is "
                           "ambiguous")
    if lengths > 1:
        raise ParsingError("more than one Content-Length")
    if version == b"HTTP/1.1" and names.count(b"host") != 1:
        raise ParsingError("an HTTP/1.1 request needs exactly one Host header")
    if encodings > 1:
        raise ParsingError("more than one Transfer-Encoding")
    if encodings and version == b"HTTP/1.0":
        raise ParsingError("Transfer-Encoding in an HTTP/1.0 request")


class _Chunks(ChunkedReceiver):  # type: ignore[misc]
    """waitress's chunked body reader, refusing a chunk announced larger than the body may be."""

    limit = 0
    error: BadRequest | None

    @property
    def chunk_remainder(self) -> int:
        return int(self.__dict__.get("_left", 0))

    @chunk_remainder.setter
    def chunk_remainder(self, size: int) -> None:
        # set once, from the chunk-size line: refused there
        if size > self.limit and self.error is None:
            self.error = BadRequest(f"a chunk of {size} bytes, over the body limit")
            self.all_chunks_received = self.completed = True
            size = 0
        self.__dict__["_left"] = size


class Parser(HTTPRequestParser):  # type: ignore[misc]
    """One request, framed as the module says."""

    body_rcv: Any

    def parse_header(self, header_plus: bytes) -> None:
        super().parse_header(header_plus)  # first: the reply then speaks the request's HTTP version
        check(header_plus)
        if self.chunked:
            chunks = _Chunks(self.body_rcv.getbuf())
            chunks.limit = self.adj.max_request_body_size - 1
            self.body_rcv = chunks
