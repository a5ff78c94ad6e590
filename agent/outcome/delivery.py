"""What commit statuses and alerts need besides the post itself (clients/httppost.py: the budget, the
retries, the redaction of secrets): the secrets read from their files, registered for redaction, and
the link to a commit's report."""

from __future__ import annotations

import logging
import pathlib

from agent.clients.httppost import Budget as Budget
from agent.clients.httppost import redact as redact
from agent.clients.httppost import register_secret
from agent.errors import ConfigError
from agent.sources import operatorfile

log = logging.getLogger(__name__)


def read_key(path: pathlib.Path, *, what: str, minimum: int, use: str) -> bytes:
    """A shared key from its file (the webhook secret, the report key), surrounding whitespace dropped
    and registered for redaction; an unreadable, empty or short one is refused (an HMAC keyed with it
    would prove nothing). `use` says where the same value must also go. The value is never in a message."""
    key = operatorfile.read_bytes(path, setting=f"{what} file", limit=operatorfile.KEY_BYTES).strip()
    if len(key) < minimum:
        held = "is empty" if not key else f"holds only {len(key)} characters"
        raise ConfigError(f"{what} file {path} {held}: the {what} must be at least {minimum} characters. "
                          f"Generate one with `openssl rand -hex 32`, and {use}")
    register_secret(key.decode("utf-8", "replace"))
    return key


def read_secret(path: pathlib.Path, what: str) -> str | None:
    """The stripped content of a secret file, registered for redaction; None (and a warning) if unusable."""
    try:
        value = operatorfile.read_text(path, setting=f"{what} file", limit=operatorfile.KEY_BYTES).strip()
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
