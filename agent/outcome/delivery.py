"""What commit statuses and alerts need besides the post itself: the shared keys read from their
files (the webhook secret, the report key), refused when too short and registered for redaction.
The post, its budget, the secrets read from their files and the link to a commit's report are
clients/httppost.py's (named here too)."""

from __future__ import annotations

import pathlib

from agent.clients.httppost import Budget as Budget
from agent.clients.httppost import read_secret as read_secret
from agent.clients.httppost import redact as redact
from agent.clients.httppost import register_secret
from agent.clients.httppost import report_link as report_link
from agent.errors import ConfigError
from agent.sources import operatorfile


def read_key(path: pathlib.Path, *, what: str, minimum: int, use: str) -> bytes:
    """A shared key from its file (the webhook secret, the report key), surrounding whitespace
    dropped and registered for redaction; an unreadable, empty or short one is refused (an HMAC
    keyed with it would prove nothing). `use` says where the same value must also go. The value is
    never in a message."""
    key = operatorfile.read_bytes(path, setting=f"{what} file",
                                  limit=operatorfile.KEY_BYTES).strip()
    if len(key) < minimum:
        held = "is empty" if not key else f"holds only {len(key)} characters"
        raise ConfigError(f"{what} file {path} {held}: the {what} must be at least {minimum} "
                          f"characters. Generate one with `openssl rand -hex 32`, and {use}")
    register_secret(key.decode("utf-8", "replace"))
    return key
