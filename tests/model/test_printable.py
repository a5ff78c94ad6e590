"""Nothing a repository writes can drive a terminal: terminal control sequences, carriage returns, newlines
and bidi overrides in unknown keys and kinds, and a Git error carrying a path, are shown as visible escapes
in the problem lines of `validate`, `plan` (text, JSON, Markdown) and `sync`."""

from __future__ import annotations

import pathlib

import pytest

from tests.support import clirun
from tests.support.escapes import (
    OSC8,
    OSC8_SHOWN,
    _clean,
    _code_texts,
    _rendered,
    _yaml_dq,
    sample_with_unknown_key,
)
from tests.support.procs import free_port


def _hostile_repo(tmp_path: pathlib.Path) -> pathlib.Path:
    """The sample repository plus a file whose unknown key carries a hidden hyperlink, a CR, a newline
    that forges a line of its own and a bidi override, and a document with a kind that clears the screen."""
    key, kind = f"unknown{OSC8}\r\nforged: line\u202e", "TXTRecord\x1b[2J\x9b2J"
    return sample_with_unknown_key(tmp_path, key, more=f"""---
apiVersion: bindy.firestoned.io/v1beta1
kind: {_yaml_dq(kind)}
metadata:
  name: odd
  namespace: dns-system
spec:
  name: odd
  text: ["x"]
""")


def _assert_problems_escaped(stderr: str) -> None:
    _clean(stderr, "stderr")
    assert OSC8_SHOWN + r"\r\nforged: line\u202e: unknown field" in stderr
    assert not any(line.startswith("forged") for line in stderr.splitlines())  # no line of its own
    assert r"TXTRecord\x1b[2J\x9b2J" in stderr


def test_validate_shows_hostile_keys_and_kinds_escaped(tmp_path: pathlib.Path) -> None:
    result = clirun.main("validate", str(_hostile_repo(tmp_path)))
    assert result.returncode == 1, result.stderr
    _assert_problems_escaped(result.stderr)


@pytest.mark.parametrize("output", ["text", "json", "markdown"])
def test_plan_shows_hostile_keys_and_kinds_escaped(tmp_path: pathlib.Path, output: str) -> None:
    result = clirun.main("plan", str(_hostile_repo(tmp_path)), "-o", output)
    assert result.returncode == 1, result.stderr
    _assert_problems_escaped(result.stderr)
    _clean(result.stdout, "stdout")
    if output == "markdown":  # the errors, each on one line of its own, as text
        page = _rendered(result.stdout)
        assert any(OSC8_SHOWN + r"\r\nforged: line\u202e: unknown field" in text for text in _code_texts(page))
        assert "<p>forged" not in page


def test_sync_shows_hostile_keys_and_kinds_escaped(tmp_path: pathlib.Path) -> None:
    """Rejected before any server is reached (nothing listens at the endpoints)."""
    endpoints = tmp_path / "endpoints.yaml"
    endpoints.write_text(f"instances:\n  dns-system/dns-primary-0: {{dns: '127.0.0.1:{free_port()}', "
                         f"api: 'http://127.0.0.1:{free_port()}'}}\n")
    result = clirun.main("sync", str(_hostile_repo(tmp_path)), "--endpoints", str(endpoints),
                         "--state", str(tmp_path / "state"))
    assert result.returncode == 2, result.stderr
    _assert_problems_escaped(result.stderr)
    _clean(result.stdout, "stdout")


def test_a_git_error_carrying_a_path_is_escaped(tmp_path: pathlib.Path) -> None:
    """Whatever reaches stderr passes the CLI's one escaping stream, git's own messages too."""
    result = clirun.main("plan", "--repo", f"{tmp_path}/no\x1b[2J\u202erepo", "--base", "a", "--head", "b",
                         "--cache", str(tmp_path / "cache"))
    assert result.returncode == 1
    _clean(result.stderr, "stderr")
    assert r"no\x1b[2J\u202erepo" in result.stderr
