"""Plain Python data from a composed YAML document, in one pass that also counts its nodes (pure).

PyYAML's SafeConstructor is general (aliases, merge keys, recursive objects) and pays for it on
every node: at 100,000 documents it costs more than the C parser itself. A repository document is
almost always a plain tree of strings, numbers, booleans and nulls, so that case is built here
directly; scalars are converted by the schema's own constructors (load/scalars.py), so the result
is the same. Anything else (an alias, a merge key, a tag outside the core schema, a non-scalar key,
a scalar the schema refuses) raises `Unusual`, and the caller constructs that document the general
way, which reports what is wrong at its line.
"""

from __future__ import annotations

from typing import Any

import yaml

from agent.load import scalars

_STR, _MAP, _SEQ, _INT = scalars.STR, scalars.MAP, scalars.SEQ, scalars.INT
_SCALARS = {
    scalars.NULL: scalars.construct_null,
    scalars.BOOL: scalars.construct_bool,
    scalars.INT: scalars.construct_int,
    scalars.FLOAT: scalars.construct_float,
}
_SHORT_INT = 18  # decimal digits: any such number fits in 64 bits
_SCALAR_NODE, _MAPPING_NODE, _SEQUENCE_NODE = yaml.ScalarNode, yaml.MappingNode, yaml.SequenceNode


class Unusual(Exception):
    """The document needs PyYAML's general constructor."""


class Shared:
    """The strings and numbers already built from one file: a value that recurs (a zone name, a TTL,
    a label, a target) is then one object, not one per document (16 MB at 100,000 records)."""

    __slots__ = ("strings", "ints")

    def __init__(self) -> None:
        self.strings: dict[str, str] = {}
        self.ints: dict[str, int] = {}


def tree(node: yaml.Node, constructor: yaml.constructor.SafeConstructor,
         duplicates: list[tuple[int, str]], shared: Shared | None = None) -> tuple[Any, int]:
    """(the document's data, its node count). Duplicate mapping keys are appended to
    `duplicates` as (line, key); the last value wins, as in PyYAML."""
    count = [0]
    shared = shared or Shared()
    data = _build(node, constructor, duplicates, count, shared.strings, shared.ints)
    return data, count[0]


def _build(node: yaml.Node, constructor: yaml.constructor.SafeConstructor,
           duplicates: list[tuple[int, str]], count: list[int], strings: dict[str, str],
           ints: dict[str, int]) -> Any:
    # A call per collection, not per node: its scalars (keys, most values) are built and counted in
    # its loop.
    kind, tag = type(node), node.tag
    if kind is _SCALAR_NODE:
        count[0] += 1
        return _scalar(node, tag, constructor, strings, ints)
    if kind is _MAPPING_NODE and tag == _MAP:
        return _mapping(node, constructor, duplicates, count, strings, ints)
    if kind is _SEQUENCE_NODE and tag == _SEQ:
        return _sequence(node, constructor, duplicates, count, strings, ints)
    raise Unusual(tag)


def _mapping(node: yaml.Node, constructor: yaml.constructor.SafeConstructor,
             duplicates: list[tuple[int, str]], count: list[int], strings: dict[str, str],
             ints: dict[str, int]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    pairs = node.value
    nodes = 1 + len(pairs)  # the mapping and its keys
    for key_node, value_node in pairs:
        if type(key_node) is not _SCALAR_NODE:
            raise Unusual(key_node.tag)
        key_tag, key = key_node.tag, key_node.value
        if key_tag == _STR:
            key = strings.setdefault(key, key)
        elif key_tag in _KEY_TAGS:
            key = _scalar(key_node, key_tag, constructor, strings, ints)
        else:
            raise Unusual(key_tag)
        if key in out:
            duplicates.append((key_node.start_mark.line + 1, key_node.value))
        if type(value_node) is _SCALAR_NODE:
            nodes += 1
            # most values: as `_scalar` does, without the call
            if (value_tag := value_node.tag) == _STR:
                value = value_node.value
                out[key] = strings.setdefault(value, value)
            else:
                out[key] = _scalar(value_node, value_tag, constructor, strings, ints)
        else:
            out[key] = _build(value_node, constructor, duplicates, count, strings, ints)
    count[0] += nodes
    return out


def _sequence(node: yaml.Node, constructor: yaml.constructor.SafeConstructor,
              duplicates: list[tuple[int, str]], count: list[int], strings: dict[str, str],
              ints: dict[str, int]) -> list[Any]:
    items: list[Any] = []
    nodes = 1
    for item in node.value:
        if type(item) is _SCALAR_NODE:
            nodes += 1
            if (item_tag := item.tag) == _STR:
                value = item.value
                items.append(strings.setdefault(value, value))
            else:
                items.append(_scalar(item, item_tag, constructor, strings, ints))
        else:
            items.append(_build(item, constructor, duplicates, count, strings, ints))
    count[0] += nodes
    return items


def _scalar(node: yaml.Node, tag: str, constructor: yaml.constructor.SafeConstructor,
            strings: dict[str, str], ints: dict[str, int]) -> Any:
    if tag == _STR:
        value = node.value
        return strings.setdefault(value, value)
    if tag == _INT:
        value = node.value
        number = ints.get(value)
        if number is not None:
            return number
        # plain decimal (a leading 0 is octal, and `!!int` may tag any digits: the schema's way)
        if len(value) <= _SHORT_INT and value.isdigit() and value.isascii() and value[0] != "0":
            number = ints[value] = int(value)
            return number
    convert = _SCALARS.get(tag)
    if convert is None:
        raise Unusual(tag)
    try:
        return convert(constructor, node)
    except scalars.BadScalar as exc:  # the general way reports it, at its line
        raise Unusual(tag) from exc


_KEY_TAGS = frozenset({_STR, *_SCALARS})  # the merge key `<<` and other tags go the general way
