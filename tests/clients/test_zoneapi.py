"""The zone API client's contract: bearer token, retries with backoff only for connection errors
and 5xx, never for 4xx, idempotent create/delete, unsafe names refused before sending."""

from __future__ import annotations

import httpx
import pytest

from agent.clients.zoneapi import Patience, ZoneApi
from agent.errors import ZoneApiError


def _client(handler: httpx.MockTransport) -> ZoneApi:
    return ZoneApi("http://zone-api", token="t0k", instance="dns/p0", transport=handler,
                   patience=Patience(backoff=0))


def test_token_and_retry_on_5xx_then_success() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(503 if len(seen) < 3 else 200, json={"zones": ["example.com"], "count": 1})

    assert _client(httpx.MockTransport(handle)).zones() == ["example.com"]
    assert len(seen) == 3 and seen[0].headers["authorization"] == "Bearer t0k"


def test_no_retry_on_4xx_and_the_error_names_instance_call_and_answer() -> None:
    calls: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        return httpx.Response(400, json={"message": "bad zone config"})

    with pytest.raises(ZoneApiError) as err:
        _client(httpx.MockTransport(handle)).create({"zoneName": "example.com", "zoneType": "primary"})
    assert calls == ["/api/v1/zones"]
    assert str(err.value) == "dns/p0: POST /zones: HTTP 400: bad zone config"
    assert not err.value.retryable


def test_connection_errors_are_retried_a_bounded_number_of_times() -> None:
    calls = []

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        raise httpx.ConnectError("refused")

    with pytest.raises(ZoneApiError) as err:
        _client(httpx.MockTransport(handle)).status("example.com")
    assert len(calls) == 4 and err.value.retryable and "cannot reach the zone API" in str(err.value)


def test_idempotent_create_delete_and_status() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(409, json={"message": "exists"})
        if request.method == "DELETE":
            return httpx.Response(404, json={"message": "no such zone"})
        return httpx.Response(200, json={"zoneName": "example.com", "status": "serial: 3"})

    api = _client(httpx.MockTransport(handle))
    assert api.create({"zoneName": "example.com", "zoneType": "primary"}) is False
    assert api.delete("example.com") is False
    assert api.status("example.com") == {"zoneName": "example.com", "status": "serial: 3"}


def test_unsafe_names_never_leave_the_agent() -> None:
    def handle(request: httpx.Request) -> httpx.Response:  # pragma: no cover - must not be called
        raise AssertionError("sent")

    with pytest.raises(ZoneApiError, match="refusing zone name"):
        _client(httpx.MockTransport(handle)).delete('x"; };')
