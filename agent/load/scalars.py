"""The YAML schema Kubernetes manifests are read with: what a plain scalar means, which tags are
allowed (pure).

kubectl and Kubernetes' Go clients read YAML with sigs.k8s.io/yaml, which decodes with go-yaml v2
and converts the result to JSON. PyYAML's own resolver is YAML 1.1's and differs: it reads
`2001-12-14` as a date, `1:20:30` as a base-60 number (in time quadratic in its length), and
constructs `!!binary`, `!!set`, `!!omap`, `!!timestamp` into values JSON cannot carry. Here a
plain scalar means what go-yaml v2 makes of it:

    null   ~, null, Null, NULL and the empty scalar
    bool   true, yes, on, y and false, no, off, n (as written, Capitalised or UPPER; y/n: y Y n N)
    int    decimal, 0x hex, 0o or leading-0 octal, 0b binary; '_' is ignored
    float  1.5, .5, 1e3, 6.02e+23 (an integer written 09 too)
    str    everything else: dates, times and base-60 numbers included

Explicit tags are the core ones only (!!str, !!int, !!float, !!bool, !!null, !!map, !!seq), and a
tagged value must be of its tag's type (`!!float 1` is 1.0, `!!int 1.5` is an error); any other
tag is an error at its line. Numbers that JSON, and so Kubernetes, cannot carry are errors too:
beyond 64 bits, out of a double's range, infinities and NaN (go-yaml turns the first ones into a
rounded float or a string; quote such a value to mean text).
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

_TAG = "tag:yaml.org,2002:"
STR, INT, FLOAT, BOOL, NULL = (_TAG + t for t in ("str", "int", "float", "bool", "null"))
MAP, SEQ, MERGE = _TAG + "map", _TAG + "seq", _TAG + "merge"
CORE = frozenset({STR, INT, FLOAT, BOOL, NULL, MAP, SEQ})

_BOOLS = {spelling: value for words, value in (("y yes true on", True), ("n no false off", False))
          for word in words.split()
          for spelling in ((word, word.upper()) if len(word) == 1
                           else (word, word.capitalize(), word.upper()))}
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
# Every pattern here is linear in its input: no two quantifiers next to each other may take the
# same character (`[0-9_]*[0-9][0-9_]*` backtracked quadratically: 0b + 40,000 digits + 2 took 51
# s), so "at least one digit among digits and '_'" is written `_*[0-9][0-9_]*`.
_INT = re.compile(r"""[-+]?(?:0[xX]_*[0-9a-fA-F][0-9a-fA-F_]*
                    |0[oO]_*[0-7][0-7_]*
                    |0[bB]_*[01][01_]*
                    |0[0-7_]*
                    |[1-9][0-9_]*)\Z""", re.X)
_FLOAT = re.compile(r"""[-+]?(?:\.[0-9][0-9_]*|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?\Z""",
                    re.X)
_INFINITE = frozenset({".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
                       ".nan", ".NaN", ".NAN"})
_FLOAT_OR_SPECIAL = (r"(?:" + _FLOAT.pattern.removesuffix(r"\Z")
                     + r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))\Z")
_BASES = {"x": 16, "o": 8, "b": 2}
# after leading zeros: no integer of 64 bits needs more (binary), so none is converted
_MAX_DIGITS = 64
_SHOWN = 24  # characters of a value quoted in a message


class BadScalar(yaml.constructor.ConstructorError):
    """A scalar or tag Kubernetes cannot read, at its node's line."""

    def __init__(self, node: yaml.Node, message: str) -> None:
        super().__init__(None, None, message, node.start_mark)
        self.node = node
        self.line = node.start_mark.line + 1
        self.message = message


def shown(value: str) -> str:
    """A scalar as quoted in a message: its start, when it is long."""
    if len(value) <= _SHOWN:
        return repr(value)
    return f"{value[:_SHOWN]!r}... ({len(value):,} characters)"


def short_tag(tag: str) -> str:
    name = (f"!!{tag[len(_TAG):]}" if tag.startswith(_TAG) else tag if tag.startswith("!")
            else f"!<{tag}>")
    return name if len(name) <= 60 else name[:57] + "..."


_ADVICE = {
    _TAG + "binary": "Kubernetes carries binary data as base64 text: remove the tag and keep the "
                     "text",
    _TAG + "timestamp": "a date or time is text in Kubernetes: remove the tag",
    _TAG + "set": "write a list instead",
    _TAG + "omap": "write a mapping instead",
    _TAG + "pairs": "write a mapping instead",
}


def refuse_tag(_loader: object, node: yaml.Node) -> Any:
    """Any tag outside the core schema: an error naming it, with what to write instead."""
    tag = str(node.tag)
    advice = _ADVICE.get(tag) or ("a Python object is not data: write the value out"
                                  if tag.startswith(
        _TAG + "python/") else "remove the tag (and quote the value if it is text)")
    raise BadScalar(node, f"YAML tag {short_tag(tag)} is not in the core schema Kubernetes reads "
                    f"(only !!str, !!int, !!float, !!bool, !!null, !!map, !!seq); {advice}")


_KINDS = {yaml.ScalarNode: "value", yaml.MappingNode: "mapping", yaml.SequenceNode: "list"}


def _of_kind(node: yaml.Node, tag: str, kind: type[yaml.Node]) -> None:
    """BadScalar unless the node is of the kind its core tag makes (`!!map [1]`, `!!seq {}`, `!!str
    []`)."""
    if not isinstance(node, kind):
        what = _KINDS.get(type(node), "node")
        raise BadScalar(node, f"a {what} tagged {short_tag(tag)}: remove the tag, or write a "
                        f"{_KINDS[kind]} there")


def _scalar(node: yaml.Node, tag: str) -> str:
    _of_kind(node, tag, yaml.ScalarNode)
    return str(node.value)


def construct_str(loader: yaml.constructor.SafeConstructor, node: yaml.Node) -> str:
    _of_kind(node, STR, yaml.ScalarNode)
    return str(loader.construct_yaml_str(node))


def construct_map(loader: yaml.constructor.SafeConstructor, node: yaml.Node) -> Any:
    _of_kind(node, MAP, yaml.MappingNode)
    return loader.construct_yaml_map(node)


def construct_seq(loader: yaml.constructor.SafeConstructor, node: yaml.Node) -> Any:
    _of_kind(node, SEQ, yaml.SequenceNode)
    return loader.construct_yaml_seq(node)


def _not_a(node: yaml.Node, value: str, what: str, tag: str) -> BadScalar:
    return BadScalar(node, f"{shown(value)} is tagged {short_tag(tag)} but is not {what}; write "
                           f"{what}, or "
                     "remove the tag if it is text")


def construct_null(_loader: object, node: yaml.Node) -> None:
    value = _scalar(node, NULL)
    if value not in _NULLS:
        raise _not_a(node, value, "null (~)", NULL)


def construct_bool(_loader: object, node: yaml.Node) -> bool:
    value = _scalar(node, BOOL)
    found = _BOOLS.get(value)
    if found is None:
        raise _not_a(node, value, "true or false", BOOL)
    return found


def integer(node: yaml.Node, value: str) -> int:
    """An integer scalar's value; BadScalar when it does not fit in 64 bits (int64 or uint64, as
    go-yaml)."""
    text = value.replace("_", "")
    sign, digits = (-1, text[1:]) if text[0] == "-" else (1, text.lstrip("+"))
    base = 10
    if len(digits) > 1 and digits[0] == "0":
        base = _BASES.get(digits[1].lower(), 8)
        digits = digits[2:] if base != 8 or digits[1] in "oO" else digits[1:]
    digits = digits.lstrip("0") or "0"
    number = sign * int(digits, base) if len(digits) <= _MAX_DIGITS else None
    if number is None or not -(2**63) <= number < 2**64:
        raise BadScalar(node, f"the integer {shown(value)} does not fit in 64 bits, the most a "
                        "Kubernetes number holds; quote it if it is text")
    return number


def construct_int(_loader: object, node: yaml.Node) -> int:
    value = _scalar(node, INT)
    if not _INT.match(value):
        raise _not_a(node, value, "an integer", INT)
    return integer(node, value)


def construct_float(_loader: object, node: yaml.Node) -> float:
    value = _scalar(node, FLOAT)
    if _INT.match(value):
        number = float(integer(node, value))
    elif _FLOAT.match(value):
        number = float(value.replace("_", ""))
    elif value in _INFINITE:
        raise BadScalar(node, f"{value} is not a number JSON can carry, so Kubernetes cannot read "
                        "it; write a finite number, or quote it if it is text")
    else:
        raise _not_a(node, value, "a number", FLOAT)
    if math.isinf(number):
        raise BadScalar(node, f"the number {shown(value)} is out of range (a double's); write a "
                        "smaller number, or quote it if it is text")
    return number


def construct_merge_value(loader: yaml.constructor.SafeConstructor, node: yaml.Node) -> str:
    """`<<` anywhere but as a mapping key (where it merges) is the text `<<`, as in go-yaml."""
    return str(loader.construct_scalar(node))  # type: ignore[arg-type]


RESOLVERS: dict[Any, list[tuple[str, re.Pattern[str]]]] = {}


def _add(tag: str, pattern: str, first: str) -> None:
    compiled = re.compile(pattern, re.X)
    for char in first or [""]:
        RESOLVERS.setdefault(char, []).append((tag, compiled))


_add(BOOL, r"(?:" + "|".join(sorted(_BOOLS)) + r")\Z", "yYnNtTfFoO")
_add(INT, _INT.pattern, "-+0123456789")
_add(FLOAT, _FLOAT_OR_SPECIAL, "-+0123456789.")
_add(MERGE, r"<<\Z", "<")
_add(NULL, r"(?:~|null|Null|NULL|)\Z", "~nN")
RESOLVERS[""] = [(NULL, re.compile(r"\Z"))]


class Loader(yaml.CSafeLoader):
    """The C parser, the schema above."""

    yaml_implicit_resolvers = RESOLVERS
    yaml_constructors = dict(yaml.CSafeLoader.yaml_constructors)


for _tag in ("binary", "timestamp", "set", "omap", "pairs", "value"):
    Loader.yaml_constructors.pop(_TAG + _tag, None)
_CONSTRUCTORS: dict[str | None, Any] = {None: refuse_tag, NULL: construct_null,
                                        BOOL: construct_bool, INT: construct_int,
                                        FLOAT: construct_float, MERGE: construct_merge_value,
                                        STR: construct_str, MAP: construct_map, SEQ: construct_seq}
for _key, _construct in _CONSTRUCTORS.items():  # None: any tag without a constructor of its own
    Loader.add_constructor(_key, _construct)


class Dumper(yaml.SafeDumper):
    """Writes YAML that reads back the same with `Loader` (and kubectl): a string any resolver
    above would read as something else is quoted."""

    yaml_implicit_resolvers = RESOLVERS


def load(text: str) -> Any:
    """One document (settings, endpoint maps) read with this schema; a yaml.YAMLError (BadScalar
    among them) when it cannot be."""
    loader = Loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
