"""Every module of agent/ says in its docstring what it is about. (How big a function may grow is
bounded by ruff's complexity limits, tests/project/test_complexity.py, and how long a line by
tests/project/test_line_length.py; they replaced the old 400-line/50-line caps, which were met by
squeezing code onto fewer, longer lines rather than by splitting it.)"""

from __future__ import annotations

import ast

import pytest

from tests.conftest import ROOT


def _modules() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "agent").rglob("*.py"))


@pytest.mark.parametrize("module", _modules())
def test_a_module_says_what_it_is(module: str) -> None:
    tree = ast.parse((ROOT / module).read_text())
    assert ast.get_docstring(tree), f"{module} has no module docstring: say what it is about"

