"""Lint and strict typing of agent/ stay clean (ruff, mypy --strict with the pydantic plugin); the docs site's
hook is linted too."""

from __future__ import annotations

import pathlib
import subprocess
import sys

from tests.conftest import ROOT

BIN = pathlib.Path(sys.executable).parent


def test_ruff_is_clean() -> None:
    result = subprocess.run([str(BIN / "ruff"), "check", "agent", "tests", "bench", "docs/hooks"], cwd=ROOT,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


def test_mypy_strict_is_clean() -> None:
    result = subprocess.run([str(BIN / "mypy"), "agent"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout
