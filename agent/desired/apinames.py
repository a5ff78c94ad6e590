"""What the Kubernetes API server would refuse in the objects a revision generates (pure).

Names grow on the way down the hierarchy: a Bind9Cluster `c` makes the instance `c-secondary-0`,
which makes a Service of that name (a DNS-1035 label, <= 63 characters) and carries the name in
label values (<= 63). A CR that is valid itself can so generate an object the server refuses at
apply time; this finds it at validate time and reports it at the CR that is the cause.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agent.load.loaded import Loaded
from agent.model import syntax
from agent.model.key import ObjectKey
from agent.model.problems import Problem

# kinds whose names are DNS-1035 labels; the others are DNS-1123 subdomains
_LABEL_NAMES = {"Service"}


def _errors(kind: str, name: str, body: dict[str, Any]) -> Iterable[str]:
    check = syntax.dns1035_error if kind in _LABEL_NAMES else syntax.subdomain_error
    if error := check(name):
        yield (f"generates the {kind} {syntax.brief(name)}, which Kubernetes refuses: the name "
               f"{error}")
    labels = body.get("metadata", {}).get("labels") or {}
    for key, value in sorted(labels.items()):
        if isinstance(value, str) and (error := syntax.label_value_error(value)):
            yield (f"generates the label {key}={syntax.brief(value)}, which Kubernetes refuses: it "
                   f"{error}")


def check(generated: Iterable[tuple[ObjectKey, dict[str, Any], ObjectKey | None]],
          written: dict[ObjectKey, Loaded]) -> list[Problem]:
    """Problems of generated objects (key, body, the CR written in Git that caused it), once per
    cause and message, at that CR's metadata.name."""
    seen: set[tuple[ObjectKey, str]] = set()
    out: list[Problem] = []
    for key, body, source in generated:
        if source is None:
            continue
        for message in _errors(key.kind, key.name, body):
            if (source, message) not in seen:
                seen.add((source, message))
                cause = written.get(source)
                out.append(Problem(cause.origin_at("metadata.name") if cause else None, str(source),
                                   "metadata.name",
                                   f"{message}; shorten the name (or label) it comes from"))
    return out
