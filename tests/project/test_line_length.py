"""Lines of agent/ stay within 100 characters: the project's ruff line length is 100 (bench/ keeps
120, tests/ quote expected messages whole), every module of agent/ passes E501 at that length, and
none of them silences it."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import tomllib

from tests.conftest import ROOT
from tests.support import noqa

BIN = pathlib.Path(sys.executable).parent
LIMIT = 100


def test_the_project_line_length_is_100() -> None:
    with (ROOT / "pyproject.toml").open("rb") as file:
        assert tomllib.load(file)["tool"]["ruff"]["line-length"] == LIMIT


def test_agent_stays_within_100_characters() -> None:
    result = subprocess.run([str(BIN / "ruff"), "check", "--line-length", str(LIMIT),
                             "--select", "E501", "--output-format", "concise", "agent"],
                            cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, "lines over 100 characters:\n" + result.stdout


def test_no_module_of_agent_silences_the_line_length() -> None:
    assert noqa.silenced(["E501"]) == []
