"""The lists of Bindy kinds in deploy/'s RBAC, generated from model/kinds.py (pure): a new kind (a
record type of model/recordtypes/) is granted where every kind is, and `bindy-agent schemas --check`
fails while a committed list differs.

    deploy/target/role.yaml   resources: the namespaced kinds' plurals, and each one's "/status"
    deploy/rbac-crds.yaml     resourceNames: every kind's CRD name

A list is generated when it names the DNSZone's: a flow list `resources: [...]` or `resourceNames:
[...]` holding "dnszones", "dnszones/status" or "dnszones.bindy.firestoned.io"; the rest of each
file is the operator's text, kept as it is. A list is wrapped at WIDTH columns, its items aligned
after its `[`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from agent.model import kinds

FILES = ("target/role.yaml", "rbac-crds.yaml")  # relative to deploy/
WIDTH = 110
_LIST = re.compile(r"^(?P<lead>[ \t]*(?:resources|resourceNames): "
                   r"\[)(?P<items>[^\]\n]*(?:\n[^\]\n]*)*)\]",
                   re.MULTILINE)
_ITEM = re.compile(r'"([^"]*)"')


def _generated() -> dict[str, Callable[[], list[str]]]:
    """The items of each generated list, by the DNSZone's item that tells it."""
    zone = kinds.KINDS["DNSZone"]
    return {
        zone.plural: lambda: [k.plural for k in kinds.KINDS.values() if k.namespaced],
        zone.plural
        + "/status": lambda: [k.plural + "/status" for k in kinds.KINDS.values() if k.namespaced],
        zone.crd_name: lambda: [k.crd_name for k in kinds.KINDS.values()],
    }


def _wrapped(lead: str, items: list[str]) -> str:
    lines: list[list[str]] = [[]]
    indent = " " * len(lead)
    for item in (f'"{i}"' for i in items):
        line = lines[-1]
        if line and len((lead if len(lines) == 1 else indent)
                        + ", ".join([*line, item])) + 1 > WIDTH:
            lines.append([item])
        else:
            line.append(item)
    return ",\n".join((lead if n == 0 else indent) + ", ".join(line)
                      for n, line in enumerate(lines)) + "]"


def render(text: str) -> str:
    """`text` (one of FILES) with its generated lists as the kinds are now."""
    generated = _generated()

    def one(match: re.Match[str]) -> str:
        names = _ITEM.findall(match["items"])
        tell = next((generated[n] for n in names if n in generated), None)
        return match[0] if tell is None else _wrapped(match["lead"], tell())
    return _LIST.sub(one, text)


def rendered(committed: dict[str, str]) -> dict[str, str]:
    """Each of FILES given (relative path -> its text now) -> its exact text with the lists
    generated."""
    return {rel: render(text) for rel, text in committed.items()}
