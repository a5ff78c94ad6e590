"""The values at one of Bindy's field paths in a validated object (pure): "spec.volumes[*].name" is
the name of every item of the list, each with its location, read by Bindy's field names from the
pydantic model (or a plain mapping) - so a value the admission rules did not see cannot reach the
plan under another spelling.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from agent.model.base import Model

Loc = tuple[str | int, ...]
Found = list[tuple[Loc, Any]]  # the values a rule reads, each with its location


def steps(path: str) -> tuple[str, ...]:
    return tuple(path.replace("[*]", ".[*]").split("."))


_ABSENT: Any = object()
# per model class: Bindy's field name -> attribute name
_ATTRIBUTES: dict[type, dict[str, str]] = {}


def _child(node: Any, step: str) -> Any:
    """A field of a validated object (by Bindy's name; unset is absent) or a key of a mapping."""
    if type(node) is dict:
        return node.get(step, _ABSENT)
    names = _ATTRIBUTES.get(type(node))
    if names is None:
        if not isinstance(node, Model):
            return _ABSENT
        names = _ATTRIBUTES[type(node)] = {f.alias or n: n
                                           for n, f in type(node).model_fields.items()}
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


def reachable(model: type, steps: tuple[str, ...]) -> bool:
    """Whether `select` can find anything at `steps` in a validated instance of `model`: False only
    when a step names no field of a model class the path surely goes through (a field annotated
    with a model class, or that class or None, holds an instance of it or nothing)."""
    return _walk(model, steps) is not False


def attributes(model: type, steps: tuple[str, ...]) -> tuple[str, ...] | None:
    """The attribute names `steps` read, one per step, when each step is a field of a model class
    the path surely goes through: then `select` in a validated instance of `model` is `pick` of
    them. None when the path goes through a list, a mapping or a union, or cannot hold anything."""
    walked = _walk(model, steps)
    return walked if isinstance(walked, tuple) else None


def pick(doc: Any, attributes: tuple[str, ...], steps: tuple[str, ...]) -> Found:
    """`select(doc, steps)`, by the attribute names `attributes` gave for `doc`'s class."""
    node = doc
    for name in attributes:
        node = node.__dict__.get(name)  # where pydantic keeps a model's field values; unset is None
        if node is None:
            return []
    return [(steps, node)]


def _walk(model: type, steps: tuple[str, ...]) -> tuple[str, ...] | bool:
    """The attribute names of `steps` through model classes; True when the path leaves them (a list,
    a mapping, a union: anything may be there), False when a step names no field of its class."""
    node: Any = model
    names: list[str] = []
    for step in steps:
        if step == "[*]" or not (isinstance(node, type) and issubclass(node, Model)):
            return True
        found = [(n, f) for n, f in node.model_fields.items() if (f.alias or n) == step]
        if not found:
            return False
        name, field = found[0]
        names.append(name)
        node = _model_class(field.annotation)
    return tuple(names)


def _model_class(annotation: Any) -> type | None:
    """The model class a field annotated so holds (or None in its place); None for anything else."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    held = [a for a in (typing.get_args(annotation) if union else (annotation,))
            if a is not type(None)]
    if len(held) == 1 and isinstance(held[0], type) and issubclass(held[0], Model):
        return held[0]
    return None
