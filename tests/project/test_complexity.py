"""Functions in agent/ stay simple enough to read: ruff's complexity limits (C901 max-complexity
10, PLR0912 max-branches 12, PLR0911 max-returns 6, PLR0913 max-args 8, PLR0915 max-statements 50)
hold on every module of agent/, none of them exempt."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import tomllib

from tests.conftest import ROOT
from tests.support import noqa

BIN = pathlib.Path(sys.executable).parent
RULES = ["C901", "PLR0911", "PLR0912", "PLR0913", "PLR0915"]
LIMITS = {"max-branches": 12, "max-returns": 6, "max-args": 8, "max-statements": 50}


def _ruff(*config: str) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "ruff"), "check", "--select", ",".join(RULES), "--output-format",
               "concise"]
    for item in config:
        command += ["--config", item]
    return subprocess.run([*command, "agent"], cwd=ROOT, capture_output=True, text=True,
                          check=False)


def _lint() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        lint: dict[str, object] = tomllib.load(file)["tool"]["ruff"]["lint"]
    return lint


def test_the_limits_are_the_agreed_ones() -> None:
    lint = _lint()
    assert set(RULES) <= set(lint["select"])  # type: ignore[call-overload]
    assert lint["mccabe"] == {"max-complexity": 10}
    assert lint["pylint"] == LIMITS


def test_agent_is_within_the_complexity_limits() -> None:
    result = _ruff()
    assert result.returncode == 0, "split these functions by concept:\n" + result.stdout


def test_no_module_of_agent_is_exempt() -> None:
    """Every function of agent/ is within the limits by itself: no per-file exemption of a rule for
    a module of agent/, and no `noqa` of one in its code."""
    ignores: dict[str, list[str]] = _lint()["per-file-ignores"]  # type: ignore[assignment]
    exempt = {path: codes for path, codes in ignores.items()
              if path.startswith("agent") and set(codes) & set(RULES)}
    assert exempt == {}, "split these functions by concept instead"
    assert noqa.silenced(RULES) == []
    found = re.findall(r"^(agent/\S+?):\d+:\d+: (\w+) ", _ruff("lint.per-file-ignores = {}").stdout,
                       re.MULTILINE)
    assert found == []
