"""One validated object of a revision (`Loaded`): its key, its model, where it was defined, and the
line of any of its fields, found again only when a problem asks (`origin_at`) by composing its
document once more from its file's text: keeping every node tree alive instead would cost far more
(memory, and garbage-collector scans). An object keeps its file's `FileText` and its document's
span.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

import yaml

from agent.load import fieldpath
from agent.load.sourcefile import FileText
from agent.model.base import Resource
from agent.model.key import ObjectKey
from agent.model.problems import Origin

T = TypeVar("T")
_SPAN = 1 << 32  # Loaded.span: start * _SPAN + end, one int instead of a tuple of two


def span(start: int, end: int) -> int:
    """Where a document's text is in its file, as `Loaded.span` keeps it."""
    return start * _SPAN + end


@dataclasses.dataclass(frozen=True, slots=True)
class Loaded:
    key: ObjectKey
    model: Resource
    origin: Origin
    text: FileText | None = dataclasses.field(default=None, repr=False, compare=False)  # its file's
    # where in it: span(start, end)
    span: int = dataclasses.field(default=0, repr=False, compare=False)
    # what later steps derived from this object alone (`derived`), once asked
    _derived: dict[Callable[[Any], Any], Any] | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False)

    def derived(self, compute: Callable[[Loaded], T]) -> T:
        """compute(self), computed once and kept with this object, which a long-running agent reuses
        while its file is unchanged (e.g. the Secrets a CR names, agent/desired/tenancy.py).
        `compute` must depend on nothing but the object: it is the key."""
        found = self._derived
        if found is None:
            found = {}
            object.__setattr__(self, "_derived", found)  # frozen for every other writer
        if compute not in found:
            found[compute] = compute(self)
        value: T = found[compute]
        return value

    def written(self, path: str) -> bool:
        """Whether the document as written has the field `path` (not one loading filled in, such as
        a namespace from --namespace); True when the file can no longer say."""
        node = self._node()
        if node is None:
            return True
        for step in fieldpath.split(path):
            if not isinstance(node, yaml.MappingNode):
                return False
            node = next((v for k, v in node.value if k.value == step), None)
        return node is not None

    def _node(self) -> yaml.Node | None:
        """The object's document composed again from its file, or None when that no longer defines
        it."""
        text = self.text.text() if self.text is not None else None
        if not text:
            return None
        start, end = divmod(self.span, _SPAN)
        try:
            node = yaml.compose(text[start:end], Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            return None
        return node if _defines(node, self.key) else None

    def origin_at(self, path: str) -> Origin:
        """file:line of a dotted field path such as "spec.ipv4Addresses[1]" in this document.

        Its own line when the file can no longer be read or no longer holds this object there.
        """
        node = self._node() if path else None
        if node is None:
            return self.origin
        return Origin(self.origin.file,
                      self.origin.line - 1 + fieldpath.line_of(node, fieldpath.split(path)))


def _defines(node: yaml.Node | None, key: ObjectKey) -> bool:
    """Whether a composed document is the object `key` (a local file may have changed since)."""
    def value(mapping: yaml.Node | None, name: str) -> yaml.Node | None:
        if isinstance(mapping, yaml.MappingNode):
            return next((v for k, v in mapping.value if k.value == name), None)
        return None

    kind, meta = value(node, "kind"), value(node, "metadata")
    name = value(meta, "name")
    return (isinstance(kind, yaml.ScalarNode) and kind.value == key.kind
            and isinstance(name, yaml.ScalarNode) and name.value == key.name)

