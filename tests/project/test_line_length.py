"""Lines of agent/ stay within 100 characters (issue 37), folder by folder as each is reflowed: the
folders listed here are checked; the global ruff line length (pyproject.toml) goes to 100 once every
folder of agent/ is in the list."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from tests.conftest import ROOT

BIN = pathlib.Path(sys.executable).parent
LIMIT = 100
REFLOWED = ["agent/*.py", "agent/cli", "agent/clients", "agent/desired", "agent/gate",
            "agent/load", "agent/model", "agent/outcome", "agent/plan", "agent/sources",
            "agent/reconcile",
            "agent/observe", "agent/podready", "agent/run"]
# modules of a reflowed folder left as they were: another change was moving them, or they wait for
# their split by concept
NOT_YET: set[str] = set()


def _paths(entry: str) -> list[str]:
    found = ROOT.glob(entry) if "*" in entry else (ROOT / entry).rglob("*.py")
    return sorted(path for path in (str(p.relative_to(ROOT)) for p in found)
                  if path not in NOT_YET)


@pytest.mark.parametrize("entry", REFLOWED)
def test_a_reflowed_folder_stays_within_100_characters(entry: str) -> None:
    paths = _paths(entry)
    assert paths, f"{entry} matches nothing"
    result = subprocess.run([str(BIN / "ruff"), "check", "--line-length", str(LIMIT),
                             "--select", "E501", "--output-format", "concise", *paths],
                            cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, "lines over 100 characters:\n" + result.stdout
