"""Modules stay one concept each (issue 24): in the whole of agent/, no module over 400 lines, no
function over 50, and every module says in its docstring what it is about."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import ROOT

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 50


def _modules() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "agent").rglob("*.py"))


@pytest.mark.parametrize("module", _modules())
def test_a_module_is_small_and_says_what_it_is(module: str) -> None:
    text = (ROOT / module).read_text()
    tree = ast.parse(text)
    lines = len(text.splitlines())
    assert lines <= MAX_MODULE_LINES, f"{module} has {lines} lines; split it by concept"
    long = [f"{module}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)"  # type: ignore[operator]
            for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES]  # type: ignore[operator]
    assert long == []
    assert ast.get_docstring(tree), f"{module} has no module docstring"
