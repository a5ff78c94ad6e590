"""httpx client for the BIND9 sidecar's zone HTTP API (bindcar; see ../shared/bindcar-api.md).

Bearer token on every call, timeouts, and bounded retries with exponential backoff for connection
errors and 5xx answers - never for 4xx, which mean the request itself is wrong. Every failure
becomes a `ZoneApiError` naming the instance, the call and the answer.
"""

from __future__ import annotations

import collections
import logging
import re
import threading
import time
from typing import Any

import httpx

from agent.errors import ZoneApiError

log = logging.getLogger(__name__)
UNSAFE = re.compile(r'["{};\s]')


class ZoneApi:
    def __init__(self, base_url: str, *, token: str = "", instance: str = "", timeout: float = 10,
                 retries: int = 3, backoff: float = 0.2, transport: httpx.BaseTransport | None = None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=f"{base_url}/api/v1", headers=headers, timeout=timeout,
                                 transport=transport)
        self.instance = instance or base_url
        self.retries, self.backoff = retries, backoff
        self.calls: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    def close(self) -> None:
        self.http.close()

    def _request(self, method: str, path: str, *, json: Any = None, ok: tuple[int, ...] = (200, 201)) -> httpx.Response:
        with self._lock:
            self.calls[method] += 1
        for attempt in range(self.retries + 1):
            try:
                response = self.http.request(method, path, json=json)
            except httpx.TransportError as exc:
                if attempt == self.retries:
                    raise ZoneApiError(f"{self.instance}: {method} {path}: cannot reach the zone API: {exc}",
                                       retryable=True) from exc
                time.sleep(self.backoff * 2**attempt)
                continue
            if response.status_code >= 500 and attempt < self.retries:
                time.sleep(self.backoff * 2**attempt)
                continue
            if response.status_code in ok:
                return response
            detail = _message(response)
            raise ZoneApiError(f"{self.instance}: {method} {path}: HTTP {response.status_code}: {detail}",
                               retryable=response.status_code >= 500)
        raise AssertionError("unreachable")

    @staticmethod
    def check(value: str, what: str) -> str:
        """Refuses values the sidecar would interpolate unsafely into rndc configuration."""
        if UNSAFE.search(value):
            raise ZoneApiError(f"refusing {what} {value!r}: quotes, ';', braces and spaces are not allowed")
        return value

    def zones(self) -> list[str]:
        return list(self._request("GET", "/zones").json().get("zones", []))

    def get(self, zone: str) -> dict[str, Any] | None:
        response = self._request("GET", f"/zones/{self.check(zone, 'zone name')}", ok=(200, 404))
        return None if response.status_code == 404 else dict(response.json())

    def status(self, zone: str) -> dict[str, Any] | None:
        """`rndc zonestatus` through the API; None if the instance does not serve the zone."""
        response = self._request("GET", f"/zones/{self.check(zone, 'zone name')}/status", ok=(200, 404))
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
        body = {k: v for k, v in (("alsoNotify", also_notify), ("allowTransfer", allow_transfer)) if v is not None}
        self._request("PATCH", f"/zones/{self.check(zone, 'zone name')}", json=body)


def _message(response: httpx.Response) -> str:
    try:
        return str(response.json().get("message", response.text))[:300]
    except ValueError:
        return response.text[:300]
