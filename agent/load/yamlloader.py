"""The C YAML loader a revision is read with: Kubernetes' YAML schema (load/scalars.py), a record
of duplicate mapping keys (PyYAML silently keeps the last), and a faster way to the same tag for the
scalars no implicit resolver can match. A Python call per node costs a tenth of the parse, so the
composer's per-node hooks are builtins that do nothing, and short scalars' tags are remembered.
"""

from __future__ import annotations

from typing import Any

import yaml

from agent.load import construct, scalars

_MERGE_TAG = scalars.MERGE
_STR_TAG, _MAP_TAG, _SEQ_TAG = scalars.STR, scalars.MAP, scalars.SEQ
_SCALAR_NODE, _MAPPING_NODE = yaml.ScalarNode, yaml.MappingNode  # `resolve` runs once a node
# called as (parent node, index): returns the index, which the composer ignores
_IGNORE_TWO: Any = {}.get
_IGNORE_NONE: Any = tuple  # called with no arguments: returns (), ignored
_RESOLVED_FIRST = frozenset(scalars.Loader.yaml_implicit_resolvers)
_RESOLVED: dict[tuple[str, tuple[bool, bool]], str] = {}
assert None not in _RESOLVED_FIRST and not scalars.Loader.yaml_path_resolvers


class Loader(scalars.Loader):
    """The C loader with Kubernetes' YAML schema (load/scalars.py), plus a record of duplicate
    mapping keys (PyYAML silently keeps the last), and a faster way to the same tag for the scalars
    no implicit resolver can match."""

    duplicates: list[tuple[int, str]]

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        # The composer calls these two around every node, for path resolvers; there are none
        # (asserted at the top), so Resolver's own methods return at once - but a Python call per
        # node costs a tenth of the parse. Builtins that accept the same arguments and do nothing
        # cost far less.
        self.descend_resolver = _IGNORE_TWO  # type: ignore[method-assign]
        self.ascend_resolver = _IGNORE_NONE  # type: ignore[method-assign]
        self.shared = construct.Shared()  # a file's recurring values, one object each

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        # Exactly what Resolver.resolve answers when no path resolvers are set (asserted at the
        # top): a quoted scalar, or a plain one whose first character starts no implicit resolver,
        # is a str.
        if kind is not _SCALAR_NODE:
            return _MAP_TAG if kind is _MAPPING_NODE else _SEQ_TAG
        if not implicit[0] or (value and value[0] not in _RESOLVED_FIRST):
            return _STR_TAG
        if len(value) <= 32:  # keys and short values repeat: remember them
            tag = _RESOLVED.get((value, implicit))
            if tag is None:
                tag = _RESOLVED[(value, implicit)] = self._resolve(kind, value, implicit)
                if len(_RESOLVED) > 4096:
                    _RESOLVED.clear()
            return tag
        return self._resolve(kind, value, implicit)

    def _resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        return str(super().resolve(kind, value, implicit))  # type: ignore[no-untyped-call]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
                continue
            if key_node.value in seen:
                self.duplicates.append((key_node.start_mark.line + 1, key_node.value))
            seen.add(key_node.value)
        return super().construct_mapping(node, deep)

