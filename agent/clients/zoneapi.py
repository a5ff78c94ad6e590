"""httpx client for the BIND9 sidecar's zone HTTP API (bindcar; see ../shared/bindcar-api.md).

Bearer token on every call, timeouts, and bounded retries with exponential backoff for connection
errors and 5xx answers - never for 4xx, which mean the request itself is wrong. Every failure
becomes a `ZoneApiError` naming the instance, the call and the answer.

httpx's timeouts bound each read, so a peer that trickles one byte every few seconds would hold a
request forever; the transport here also bounds each request as a whole (`call_timeout`, cut to
the run's deadline) by shortening every socket operation to the time the request has left.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import math
import re
import threading
import time
import typing
from typing import Any

import httpcore
import httpx

from agent.clients.deadline import UNBOUNDED, Deadline
from agent.errors import ZoneApiError
from agent.model import calls

log = logging.getLogger(__name__)
UNSAFE = re.compile(r'["{};\s]')


class _RequestDeadline(threading.local):
    at: float = math.inf


_REQUEST = _RequestDeadline()  # the deadline of the request running in this thread


def _left(timeout: float | None) -> float:
    remaining = _REQUEST.at - time.monotonic()
    if remaining <= 0:
        raise httpcore.ReadTimeout("the request's time is up")
    return remaining if timeout is None else min(timeout, remaining)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.inner.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, _left(timeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: typing.Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self.inner.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str) -> typing.Any:
        return self.inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    """httpcore's sync backend, with every socket operation cut to the request's deadline."""

    def __init__(self) -> None:
        self.inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: typing.Iterable[typing.Any] | None = None,
                    ) -> httpcore.NetworkStream:
        return _Stream(self.inner.connect_tcp(host, port, _left(timeout), local_address,
                                              socket_options))

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def bounded_transport() -> httpx.HTTPTransport:
    """An httpx transport whose requests end when their deadline passes, however the peer
    trickles."""
    transport = httpx.HTTPTransport()
    # httpx offers no hook for the network backend; its pool is replaced with one that has ours
    transport._pool = httpcore.ConnectionPool(ssl_context=httpx.create_ssl_context(),
                                              network_backend=_Backend())
    return transport


@dataclasses.dataclass(frozen=True)
class Patience:
    """How long a request may take and how often it is tried: `timeout` bounds each read,
    `call_timeout` the request as a whole; a connection that fails is tried again `retries` times,
    after `backoff` seconds, doubled each time."""

    timeout: float = 10
    call_timeout: float = 30
    retries: int = 3
    backoff: float = 0.2


PATIENCE = Patience()


class ZoneApi:
    def __init__(self, base_url: str, *, token: str = "", instance: str = "",
                 patience: Patience = PATIENCE, transport: httpx.BaseTransport | None = None,
                 deadline: Deadline = UNBOUNDED) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=f"{base_url}/api/v1", headers=headers,
                                 timeout=patience.timeout,
                                 transport=transport or bounded_transport())
        self.instance = instance or base_url
        self.retries, self.backoff = patience.retries, patience.backoff
        self.call_timeout = patience.call_timeout
        self.deadline = deadline
        self.calls: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    def _send(self, method: str, path: str, json: Any) -> httpx.Response:
        _REQUEST.at = min(time.monotonic() + self.call_timeout, self.deadline.at)
        try:
            return self.http.request(method, path, json=json)
        finally:
            _REQUEST.at = math.inf

    def close(self) -> None:
        self.http.close()

    @calls.measured("zone_api", op=lambda self, method, *args, **kwargs: method)
    def _request(self, method: str, path: str, *, json: Any = None,
                 ok: tuple[int, ...] = (200, 201)) -> httpx.Response:
        with self._lock:
            self.calls[method] += 1
        for attempt in range(self.retries + 1):
            last = attempt == self.retries or self.deadline.remaining() < self.backoff * 2**attempt
            limit = min(self.call_timeout, self.deadline.remaining())
            try:
                response = self._send(method, path, json)
            except httpx.TransportError as exc:
                if last or isinstance(exc, httpx.TimeoutException):  # a stalled peer is not retried
                    raise ZoneApiError(f"{self.instance}: {method} {path}: "
                                       f"{self._failure(exc, limit)}",
                                       retryable=True) from exc
                time.sleep(self.backoff * 2**attempt)
                continue
            if response.status_code >= 500 and not last:
                time.sleep(self.backoff * 2**attempt)
                continue
            if response.status_code in ok:
                return response
            detail = _message(response)
            raise ZoneApiError(f"{self.instance}: {method} {path}: HTTP {response.status_code}: "
                               f"{detail}",
                               retryable=response.status_code >= 500)
        raise AssertionError("unreachable")

    def _failure(self, exc: httpx.TransportError, limit: float) -> str:
        if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
            cut = " (all the run's deadline left)" if limit < self.call_timeout else ""
            return (f"no complete answer within {max(limit, 0):.0f} s{cut}; the zone API accepted "
                    f"but stalled")
        return f"cannot reach the zone API: {exc or type(exc).__name__}"

    @staticmethod
    def check(value: str, what: str) -> str:
        """Refuses values the sidecar would interpolate unsafely into rndc configuration."""
        if UNSAFE.search(value):
            raise ZoneApiError(f"refusing {what} {value!r}: quotes, ';', braces and spaces are not "
                               f"allowed")
        return value

    def zones(self) -> list[str]:
        return list(self._request("GET", "/zones").json().get("zones", []))

    def get(self, zone: str) -> dict[str, Any] | None:
        response = self._request("GET", f"/zones/{self.check(zone, 'zone name')}", ok=(200, 404))
        return None if response.status_code == 404 else dict(response.json())

    def status(self, zone: str) -> dict[str, Any] | None:
        """`rndc zonestatus` through the API; None if the instance does not serve the zone."""
        response = self._request("GET", f"/zones/{self.check(zone, 'zone name')}/status",
                                 ok=(200, 404))
        return None if response.status_code == 404 else dict(response.json())

    def create(self, body: dict[str, Any]) -> bool:
        """Creates a zone; False if it already existed (409)."""
        self.check(body["zoneName"], "zone name")
        response = self._request("POST", "/zones", json=body, ok=(200, 201, 409))
        return response.status_code != 409

    def delete(self, zone: str) -> bool:
        response = self._request("DELETE", f"/zones/{self.check(zone, 'zone name')}", ok=(200, 404))
        return response.status_code != 404

    def notify(self, zone: str) -> None:
        self._request("POST", f"/zones/{self.check(zone, 'zone name')}/notify")

    def modify(self, zone: str, *, also_notify: list[str] | None = None,
               allow_transfer: list[str] | None = None) -> None:
        body = {k: v for k, v in (("alsoNotify", also_notify), ("allowTransfer", allow_transfer))
                if v is not None}
        self._request("PATCH", f"/zones/{self.check(zone, 'zone name')}", json=body)


def _message(response: httpx.Response) -> str:
    try:
        return str(response.json().get("message", response.text))[:300]
    except ValueError:
        return response.text[:300]
