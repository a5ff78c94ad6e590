"""A text log line (agent/run/logs.py) is one line, whatever a value it quotes holds: shown as visible escapes."""

from __future__ import annotations

import contextvars
import logging

from agent.run import logs


# -- log lines and the progress line --------------------------------------------------------------
def test_a_text_log_line_is_one_escaped_line() -> None:
    record = logging.LogRecord("agent.run", logging.WARNING, __file__, 1, "zone %s failed: %s", (
        "example.com", "\x1b[2J\r\nforged: line\u202e"), None)
    line = contextvars.Context().run(logs.TextFormatter().format, record)  # no run id of an earlier test
    assert line == r"warning agent.run: zone example.com failed: \x1b[2J\r\nforged: line\u202e"
