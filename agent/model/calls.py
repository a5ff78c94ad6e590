"""The process-wide tally of external calls: every I/O client, at any layer, marks its calls with
`@calls.measured(target, op=...)`, and whoever listens (the long-running agent's /metrics,
agent/run/metrics.py) hears each one as (target, operation, result, seconds).

    target       operation                      one call is
    git          ls-remote, fetch, push, ...    one git command (sources/git.py)
    kubernetes   get, list, create, update,     one request to the API server (clients/kubeapi.py)
                 patch, apply, delete
    zone_api     GET, POST, PATCH, DELETE, ...  one request with its retries (clients/zoneapi.py)
    dns_update   update                         one RFC 2136 UPDATE message (clients/rfc2136.py)
    axfr         axfr                           one zone transfer (clients/axfr.py)
    soa_query    soa                            the SOA serials of a batch of zones on one server
    dns_query    query                          a batch of verification queries to one server
    forge        post                           one commit status, with its retries
                 (clients/httppost.py)
    alert        post                           one alert to a webhook or Slack, with its retries

`result` is "ok" when the call returned and "error" when it raised (a post: not delivered). Nothing
here formats a name, an address or a value: the labels are the fixed words above, so a repository
cannot grow the series.
Pure bookkeeping (no I/O): without a listener a call costs two clock reads and a counter.
"""

from __future__ import annotations

import collections
import functools
import threading
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
Listener = Callable[[str, str, str, float], None]  # (target, operation, result, seconds)


class CallTarget(StrEnum):
    """The `target` of a measured call (the table above), and the outgoing HTTP posts."""

    GIT = "git"
    KUBERNETES = "kubernetes"
    ZONE_API = "zone_api"
    DNS_UPDATE = "dns_update"
    AXFR = "axfr"
    SOA_QUERY = "soa_query"
    DNS_QUERY = "dns_query"
    FORGE = "forge"  # a commit status posted to GitHub, GitLab or Gitea
    ALERT = "alert"  # an alert posted to a webhook


_lock = threading.Lock()
_listeners: list[Listener] = []
_totals: collections.Counter[tuple[str, str, str]] = collections.Counter()


def listen(listener: Listener) -> Callable[[], None]:
    """Hears every call from now on; returns the function that stops it."""
    with _lock:
        _listeners.append(listener)

    def stop() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)
    return stop


def totals() -> dict[tuple[str, str, str], int]:
    """The calls so far in this process by (target, operation, result)."""
    with _lock:
        return dict(_totals)


def record(target: str, operation: str, result: str, seconds: float) -> None:
    with _lock:
        _totals[(target, operation, result)] += 1
        listeners = list(_listeners)
    for listener in listeners:
        listener(target, operation, result, seconds)


def measured(target: str,
             op: str | Callable[..., str] = "") -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorates an I/O function: each call is counted and timed. `op` is the operation, or a
    function of the call's arguments that names it (e.g. the HTTP method)."""
    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            operation = op(*args, **kwargs) if callable(op) else op
            started = time.monotonic()
            result = "error"
            try:
                value = fn(*args, **kwargs)
                result = "ok"
                return value
            finally:
                record(target, operation, result, time.monotonic() - started)
        return call
    return wrap


def kube_verb(method: str, path: str, *args: Any, content_type: str = "", **kwargs: Any) -> str:
    """The Kubernetes verb of a request to the API server, as its audit log names them."""
    del args, kwargs
    if method == "GET":
        # after /api/v1 or /apis/GROUP/VERSION: a collection has an odd number of segments
        # (configmaps, namespaces/NS/configmaps), an object an even one
        # (namespaces/NS/configmaps/NAME)
        parts = path.strip("/").split("/")
        rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
        return "list" if len(rest) % 2 else "get"
    if method == "PATCH":
        return "apply" if "apply-patch" in content_type else "patch"
    return {"POST": "create", "PUT": "update", "DELETE": "delete"}.get(method, method.lower())
