"""Plain Python data from a composed YAML document, in one pass that also counts its nodes (pure).

PyYAML's SafeConstructor is general (aliases, merge keys, sets, omaps, binary, recursive objects)
and pays for it on every node: at 100,000 documents it costs more than the C parser itself. A
repository document is almost always a plain tree of strings, numbers, booleans and nulls, so
that case is built here directly; scalars are converted by SafeConstructor's own methods, so the
result is the same. Anything else (an alias, a merge key, an explicit tag, a non-scalar key)
raises `Unusual`, and the caller constructs that document the general way.
"""

from __future__ import annotations

from typing import Any

import yaml

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_INT = "tag:yaml.org,2002:int"
_SCALARS = {
    "tag:yaml.org,2002:null": yaml.constructor.SafeConstructor.construct_yaml_null,
    "tag:yaml.org,2002:bool": yaml.constructor.SafeConstructor.construct_yaml_bool,
    "tag:yaml.org,2002:int": yaml.constructor.SafeConstructor.construct_yaml_int,
    "tag:yaml.org,2002:float": yaml.constructor.SafeConstructor.construct_yaml_float,
    "tag:yaml.org,2002:timestamp": yaml.constructor.SafeConstructor.construct_yaml_timestamp,
}


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


def _build(node: yaml.Node, constructor: yaml.constructor.SafeConstructor, duplicates: list[tuple[int, str]],
           count: list[int], strings: dict[str, str], ints: dict[str, int]) -> Any:
    count[0] += 1
    kind, tag = type(node), node.tag
    if kind is yaml.ScalarNode:
        if tag == _STR:
            value = node.value
            return strings.setdefault(value, value)
        if tag == _INT:
            value = node.value
            number = ints.get(value)
            if number is not None:
                return number
            if value.isdigit() and value[0] != "0":  # plain decimal (the int resolver admits ASCII only);
                number = ints[value] = int(value)    # YAML 1.1 reads a leading 0 as octal: the general way
                return number
        convert = _SCALARS.get(tag)
        if convert is None:
            raise Unusual(tag)
        return convert(constructor, node)  # type: ignore[arg-type]  # a ScalarNode, checked above
    if kind is yaml.MappingNode and tag == _MAP:
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if type(key_node) is not yaml.ScalarNode or key_node.tag not in _KEY_TAGS:
                raise Unusual(key_node.tag)
            key = _build(key_node, constructor, duplicates, count, strings, ints)
            if key in out:
                duplicates.append((key_node.start_mark.line + 1, key_node.value))
            out[key] = _build(value_node, constructor, duplicates, count, strings, ints)
        return out
    if kind is yaml.SequenceNode and tag == _SEQ:
        return [_build(item, constructor, duplicates, count, strings, ints) for item in node.value]
    raise Unusual(tag)


_KEY_TAGS = frozenset({_STR, *_SCALARS})  # the merge key `<<` and explicit tags go the general way
