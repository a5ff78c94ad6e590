"""Logging, with the run id and the revision on every line.

JSON lines for `bindy-agent run`, human text for the CLI. Nothing here ever formats a secret:
callers log names, never values. A line may carry structured fields (`extra={"fields": {...}}`):
JSON puts them at the top level, text appends them as key=value."""

from __future__ import annotations

import contextvars
import datetime
import json
import logging
import sys
from typing import Any

from agent.model import printable

LEVELS = ("debug", "info", "warning", "error")

run_id: contextvars.ContextVar[str] = contextvars.ContextVar("run_id", default="")
revision: contextvars.ContextVar[str] = contextvars.ContextVar("revision", default="")


def _timestamp(created: float) -> str:
    """A record's time as JSON lines give it: UTC, to the millisecond."""
    return datetime.datetime.fromtimestamp(created, datetime.UTC).isoformat(timespec="milliseconds")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "ts": _timestamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "runId": run_id.get() or None,
            "revision": revision.get() or None,
        }
        for key, value in fields(record).items():
            doc.setdefault(key, value)
        if record.exc_info:
            doc["error"] = self.formatException(record.exc_info)
        return json.dumps(doc, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        context = (("run", run_id.get()), ("rev", revision.get()[:12]))
        ctx = " ".join(f"{k}={v}" for k, v in context if v)
        text = f"{record.levelname.lower()} {record.name}: {record.getMessage()}"
        if ctx:
            text += f" [{ctx}]"
        extra = " ".join(f"{k}={_text(v)}" for k, v in fields(record).items())
        # one line, whatever a name or message holds
        return printable.line(text + (f" {extra}" if extra else ""))


def fields(record: logging.LogRecord) -> dict[str, Any]:
    found = getattr(record, "fields", None)
    return found if isinstance(found, dict) else {}


def _text(value: Any) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}:{_text(v)}" for k, v in value.items())
    return f"{round(value, 3):g}" if isinstance(value, float) else str(value)


def level(name: str) -> int:
    """A level by its name (debug, info, warning, error), as --log-level and BINDY_AGENT_LOG_LEVEL
    give it."""
    return int(getattr(logging, name.upper()))


def configure(fmt: str, level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("apscheduler", "urllib3", "httpx", "httpcore", "git"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
