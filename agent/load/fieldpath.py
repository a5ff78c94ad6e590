"""Field paths in a composed YAML document (pure): the line of a path such as ("spec",
"ipv4Addresses", 1), the path of a node, and the dotted form problems show
("spec.ipv4Addresses[1]"), both ways. A document's nodes carry line marks; these turn a field
path into the file:line a problem points at, and a node the constructor refused into its path.
"""

from __future__ import annotations

import re
from typing import Any

import yaml


def line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int:
    """The line of the deepest node along `loc` (a key's own line for the last mapping step)."""
    assert node is not None
    line = node.start_mark.line + 1
    for i, step in enumerate(loc):
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if key_node.value == step:
                    line = key_node.start_mark.line + 1
                    node = value_node
                    break
            else:  # a key with dots in it, as a label or an annotation has: the rest of the path
                # (a trailing dot, as a host name has, is not in loc)
                rest = ".".join(str(s) for s in loc[i:])
                return next((k.start_mark.line + 1 for k, _ in node.value
                             if k.value in (rest, rest + ".")), line)
        elif (isinstance(node, yaml.SequenceNode) and isinstance(step, int)
              and step < len(node.value)):
            node = node.value[step]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def dotted(loc: tuple[Any, ...]) -> str:
    """("spec", "ipv4Addresses", 1) -> "spec.ipv4Addresses[1]"."""
    out = ""
    for step in loc:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


def split(path: str) -> tuple[Any, ...]:
    """"spec.ipv4Addresses[1]" -> ("spec", "ipv4Addresses", 1); dots inside brackets stay."""
    loc: list[Any] = []
    for part in re.split(r"\.(?![^\[]*\])", path):
        name, *indexes = re.split(r"\[(\d+)\]", part)
        if name:
            loc.append(name)
        loc += [int(i) for i in indexes if i]
    return tuple(loc)


def path_to(root: yaml.Node, target: yaml.Node) -> tuple[Any, ...]:
    """The field path of a node in a document (a key: its mapping's path and the key), () if not
    found."""
    todo: list[tuple[yaml.Node, tuple[Any, ...]]] = [(root, ())]
    seen: set[int] = set()
    while todo:
        node, loc = todo.pop()
        if node is target:
            return loc
        if id(node) in seen:  # an alias: visited already
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                name = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
                if key_node is target:
                    return (*loc, name)
                todo.append((value_node, (*loc, name)))
        elif isinstance(node, yaml.SequenceNode):
            todo += [(item, (*loc, i)) for i, item in enumerate(node.value)]
    return ()
