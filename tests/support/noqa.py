"""Where agent/ silences a ruff rule with `noqa`: the project checks that say no module may."""

from __future__ import annotations

from collections.abc import Iterable

from tests.conftest import ROOT


def silenced(rules: Iterable[str]) -> list[str]:
    """`path:line` of every line of agent/ with a `noqa` naming one of `rules`."""
    codes = tuple(rules)
    return [f"{path.relative_to(ROOT)}:{number}"
            for path in sorted((ROOT / "agent").rglob("*.py"))
            for number, line in enumerate(path.read_text().splitlines(), 1)
            if "noqa" in line and any(code in line for code in codes)]
