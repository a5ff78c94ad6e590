"""The validated objects of a revision, or of one of its files (`Manifest`), with every problem
found and the indexes asked of it: objects by kind, where each key is defined. A revision whose
files define no key twice reads its files' lists as one (model/joined.py) and joins a kind's index
from theirs when first asked, so an unchanged file costs list operations, not a loop over its
objects.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

from agent.load.loaded import Loaded
from agent.load.sourcefile import FileText
from agent.model.joined import Joined
from agent.model.key import ObjectKey
from agent.model.problems import Origin, Problem, Severity


@dataclasses.dataclass
class Manifest:
    """A parsed revision: its valid objects (file order) and every problem found."""

    # a list; for a revision, its files' lists read as one (model/joined.py)
    objects: Sequence[Loaded]
    problems: list[Problem]
    files: int = 0
    documents: int = 0
    # the same objects, file by file
    by_file: list[Sequence[Loaded]] = dataclasses.field(default_factory=list)
    text: FileText | None = None  # one file's part: what its objects' text is read from
    # the indexes, built when first asked: a revision's files' parts (joined), kinds joined from
    # them, the objects by kind, where each key is defined
    _parts: list[Manifest] | None = dataclasses.field(default=None, init=False, repr=False,
                                                      compare=False)
    _asked: dict[str, list[Loaded]] | None = dataclasses.field(default=None, init=False, repr=False,
                                                               compare=False)
    _by_kind: dict[str, list[Loaded]] | None = dataclasses.field(default=None, init=False,
                                                                 repr=False, compare=False)
    _keys: dict[ObjectKey, Origin] | None = dataclasses.field(default=None, init=False, repr=False,
                                                              compare=False)

    @classmethod
    def joined(cls, parts: list[Manifest], asked: dict[str, list[Loaded]] | None) -> Manifest:
        """The revision of files' parts that define no key twice: their lists as they are, a kind's
        index when asked; `asked`: kinds already joined that are still right (from the last
        revision)."""
        total = cls(objects=[], problems=[], files=len(parts))
        total.documents = sum(part.documents for part in parts)
        total.problems = list(itertools.chain.from_iterable(part.problems for part in parts))
        total.by_file = [part.objects for part in parts]
        total.objects = Joined(total.by_file)
        total._parts, total._asked = parts, asked
        return total

    def add_file(self, kept: Sequence[Loaded],
                 kinds_of: dict[str, list[Loaded]] | None = None) -> None:
        """Appends one file's objects (those kept) and their kind index (`kinds_of`, else built)."""
        if self._by_kind is None:
            self._by_kind = {}
        _extend(self._by_kind, kinds_of if kinds_of is not None else _index(kept))
        self.by_file.append(kept)

    def asked(self) -> dict[str, list[Loaded]]:
        """The kinds joined so far from the files' indexes (`of_kind`), filled as they are asked."""
        if self._asked is None:
            self._asked = {}
        return self._asked

    @property
    def ok(self) -> bool:
        return not any(p.severity is Severity.ERROR for p in self.problems)

    def of_kind(self, *names: str) -> list[Loaded]:
        """The objects of these kinds, in load order (indexed once: a revision may hold 100,000)."""
        if len(names) == 1:
            return self._of_kind(names[0])
        return [o for name in names for o in self._of_kind(name)]

    def _of_kind(self, name: str) -> list[Loaded]:
        parts = self._parts
        if parts is None or self._by_kind is not None:
            return self.kinds().get(name, [])
        asked = self.asked()  # joined from the files' indexes
        found = asked.get(name)
        if found is None:
            kinds = (p.kinds().get(name, ()) for p in parts)
            found = asked[name] = list(itertools.chain.from_iterable(kinds))
        return found

    def kinds(self) -> dict[str, list[Loaded]]:
        """The objects by kind (built once; load_files builds it from its files' as it goes, or
        joins a kind from its files' when first asked)."""
        index = self._by_kind
        if index is None:
            parts = self._parts
            index = self._by_kind = (_index(self.objects) if parts is None else {})
            for part in parts or []:
                _extend(index, part.kinds())
        return index

    def keys(self) -> dict[ObjectKey, Origin]:
        """Where each object is defined (the first, when a key is defined twice); kept, like the
        kind index, with a file's part while it is cached."""
        found = self._keys
        if found is None:
            found = self._keys = {}
            for obj in self.objects:
                found.setdefault(obj.key, obj.origin)
        return found


def _index(objects: Sequence[Loaded]) -> dict[str, list[Loaded]]:
    index: dict[str, list[Loaded]] = {}
    for obj in objects:
        index.setdefault(obj.key.kind, []).append(obj)
    return index


def _extend(index: dict[str, list[Loaded]], kinds_of: dict[str, list[Loaded]]) -> None:
    """A revision's kind index, extended by the next file's."""
    for kind, found in kinds_of.items():
        index.setdefault(kind, []).extend(found)
