"""The values at one of Bindy's field paths in a validated object (pure): "spec.volumes[*].name" is
the name of every item of the list, each with its location, read by Bindy's field names from the
pydantic model (or a plain mapping) - so a value the admission rules did not see cannot reach the
plan under another spelling.
"""

from __future__ import annotations

from typing import Any

from agent.model.base import Model

Loc = tuple[str | int, ...]
Found = list[tuple[Loc, Any]]  # the values a rule reads, each with its location


def steps(path: str) -> tuple[str, ...]:
    return tuple(path.replace("[*]", ".[*]").split("."))


_ABSENT: Any = object()
_ATTRIBUTES: dict[type, dict[str, str]] = {}  # per model class: Bindy's field name -> attribute name


def _child(node: Any, step: str) -> Any:
    """A field of a validated object (by Bindy's name; unset is absent) or a key of a mapping."""
    if type(node) is dict:
        return node.get(step, _ABSENT)
    names = _ATTRIBUTES.get(type(node))
    if names is None:
        if not isinstance(node, Model):
            return _ABSENT
        names = _ATTRIBUTES[type(node)] = {f.alias or n: n for n, f in type(node).model_fields.items()}
    value = node.__dict__.get(names.get(step, ""))  # where pydantic keeps a model's field values
    return _ABSENT if value is None else value


def select(doc: Any, steps: tuple[str, ...]) -> Found:
    """The values at a path ("spec.volumes[*].name": every item of the list) with their locations,
    in a validated object (or a plain mapping, as a document's data)."""
    if "[*]" not in steps:  # the common case: one value or none
        node = doc
        for step in steps:
            node = _child(node, step)
            if node is _ABSENT:
                return []
        return [(steps, node)]
    found: Found = [((), doc)]
    for step in steps:
        deeper: Found = []
        for loc, node in found:
            if step == "[*]":
                if isinstance(node, list):
                    deeper += [((*loc, i), item) for i, item in enumerate(node)]
            elif (child := _child(node, step)) is not _ABSENT:
                deeper.append(((*loc, step), child))
        found = deeper
    return found
