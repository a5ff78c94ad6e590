"""Outgoing HTTP posts: commit statuses to forges and alerts to webhooks, each a measured call
(target `forge` or `alert`, operation `post`: model/calls.py) with a time budget, bounded retries,
and every value read from a secret file (`read_secret`) redacted from what is logged."""

from __future__ import annotations

import dataclasses
import logging
import pathlib
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING

from agent.errors import DeliveryError
from agent.model import calls
from agent.sources import operatorfile

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("agent.outcome.delivery")  # the name its lines have always had
USER_AGENT = "bindy-agent"
REDACTED = "<secret>"
# every value read from a secret file: redacted from log lines and messages
_secrets: set[str] = set()
_lock = threading.Lock()
Accept = Callable[["httpx.Response"], bool]


@dataclasses.dataclass(frozen=True)
class Budget:
    """How long one delivery may take in all (retries and waits included), and how often it is
    retried."""

    timeout: float = 10.0
    retries: int = 3
    backoff: float = 0.5


def register_secret(value: str) -> None:
    """Redacts `value` (and, for a URL, its path and query, where webhook URLs keep their secret)
    from now on."""
    parts = [value]
    if "://" in value:
        url = urllib.parse.urlsplit(value)
        parts += [p for p in (url.path, url.query) if len(p) > 1]
    with _lock:
        _secrets.update(p for p in parts if len(p) >= 4)


def redact(text: str) -> str:
    with _lock:
        known = sorted(_secrets, key=len, reverse=True)
    for secret in known:
        text = text.replace(secret, REDACTED)
    return text


def read_secret(path: pathlib.Path, what: str) -> str | None:
    """The stripped content of a secret file, registered for redaction; None (and a warning) if
    unusable."""
    try:
        value = operatorfile.read_text(path, setting=f"{what} file",
                                       limit=operatorfile.KEY_BYTES).strip()
    except operatorfile.Unreadable as exc:
        log.warning("%s; not sent", exc)
        return None
    if not value:
        log.warning("%s: %s is empty; not sent", what, path)
        return None
    register_secret(value)
    return value


def report_link(template: str | None, revision: str) -> str | None:
    """The report's URL for a commit: "{revision}" in the template becomes its SHA."""
    return template.replace("{revision}", revision) if template else None


class _RedactLibraryLogs(logging.Filter):
    """httpx logs every request URL at INFO; a Slack webhook URL is a secret."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, ()
        return True


for _name in ("httpx", "httpcore"):
    logging.getLogger(_name).addFilter(_RedactLibraryLogs())


def _worth_retrying(response: httpx.Response) -> bool:
    return response.status_code == 429 or response.status_code >= 500


def _detail(response: httpx.Response) -> str:
    text = response.text.strip().replace("\n", " ")
    return redact(text[:200]) or response.reason_phrase


def _attempt(client: httpx.Client, url: str, *, body: bytes, headers: dict[str, str],
             timeout: float) -> httpx.Response | str:
    """One POST: the response, or why there was none."""
    import httpx

    try:
        return client.post(url, content=body, headers=headers, timeout=timeout)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        return redact(f"{type(exc).__name__}: {exc}".rstrip(": "))


def _deliver(what: str, url: str, *, body: bytes, headers: dict[str, str], budget: Budget,
             accept: Accept | None) -> None:
    """POSTs `body` until a 2xx (or a response `accept` takes as done) arrives, retrying connection
    errors, 429 and 5xx while `budget` allows; DeliveryError (logged) when it gives up."""
    import httpx  # here, not at the top: `plan DIR` and a run without deliveries never load it

    deadline = time.monotonic() + budget.timeout
    reason, tries = "no time left", 0
    with httpx.Client(headers={"User-Agent": USER_AGENT}, follow_redirects=False) as client:
        for attempt in range(budget.retries + 1):
            remaining = deadline - time.monotonic()
            if remaining <= 0.05:
                break
            tries += 1
            answer = _attempt(client, url, body=body, headers=headers, timeout=remaining)
            if isinstance(answer, httpx.Response):
                if answer.is_success or (accept is not None and accept(answer)):
                    log.debug("%s: delivered (HTTP %d)", what, answer.status_code)
                    return
                reason = f"HTTP {answer.status_code}: {_detail(answer)}"
                if not _worth_retrying(answer):
                    break
            else:
                reason = answer
            wait = min(budget.backoff * 2**attempt, deadline - time.monotonic())
            if attempt < budget.retries and wait > 0:
                time.sleep(wait)
    log.warning("%s: not delivered after %d attempt(s) in %.1f s: %s", what, tries,
                budget.timeout - max(deadline - time.monotonic(), 0), reason)
    raise DeliveryError(reason)


@calls.measured("forge", op="post")
def _status(what: str, url: str, *, body: bytes, headers: dict[str, str], budget: Budget,
            accept: Accept | None) -> None:
    _deliver(what, url, body=body, headers=headers, budget=budget, accept=accept)


@calls.measured("alert", op="post")
def _alert(what: str, url: str, *, body: bytes, headers: dict[str, str], budget: Budget,
           accept: Accept | None) -> None:
    _deliver(what, url, body=body, headers=headers, budget=budget, accept=accept)


def post(target: calls.CallTarget, what: str, url: str, *, body: bytes, headers: dict[str, str],
         budget: Budget, accept: Accept | None = None) -> bool:
    """POSTs `body` to a forge (CallTarget.FORGE) or an alert webhook (ALERT); True once delivered.
    Never raises: why it gave up is logged. `what` names the delivery in logs: never a URL or a
    token."""
    send = _status if target is calls.CallTarget.FORGE else _alert
    try:
        send(what, url, body=body, headers=headers, budget=budget, accept=accept)
    except DeliveryError:
        return False
    return True
