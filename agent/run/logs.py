"""Logging, with the run id and the revision on every line.

JSON lines for `bindy-agent run`, human text for the CLI. Nothing here ever formats a secret:
callers log names, never values."""

from __future__ import annotations

import contextvars
import datetime
import json
import logging
import sys

from agent.model import printable

run_id: contextvars.ContextVar[str] = contextvars.ContextVar("run_id", default="")
revision: contextvars.ContextVar[str] = contextvars.ContextVar("revision", default="")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "ts": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "runId": run_id.get() or None,
            "revision": revision.get() or None,
        }
        if record.exc_info:
            doc["error"] = self.formatException(record.exc_info)
        return json.dumps(doc, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ctx = " ".join(f"{k}={v}" for k, v in (("run", run_id.get()), ("rev", revision.get()[:12])) if v)
        text = f"{record.levelname.lower()} {record.name}: {record.getMessage()}" + (f" [{ctx}]" if ctx else "")
        return printable.line(text)  # one line, whatever a name or a message in it holds


def configure(fmt: str, level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("apscheduler", "urllib3", "httpx", "httpcore", "git"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
