"""The files of the last revision, parsed and validated, kept for the next one (`FileCache`): a file
whose content id (a Git blob id) did not change is neither read nor parsed again, and is charged
what it took of the read budget. Only the latest revision's files are kept, with where each object
was defined when none was defined twice (then only the changed files' keys are checked:
`changed_keys`); a change of default namespace or limits starts afresh. `NO_FILES` is the cache of
a one-shot run: it keeps nothing, so every file is read and the loader never branches on a cache.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from agent.load import readbudget
from agent.load.loaded import Loaded
from agent.load.manifest import Manifest
from agent.load.sourcefile import SourceFile
from agent.model.key import ObjectKey
from agent.model.problems import Origin

# what a file took of the read budget: bytes, documents, nodes, alias nodes
Spent = tuple[int, int, int, int]


@dataclasses.dataclass(frozen=True)
class Parsed:
    part: Manifest
    spent: Spent


@dataclasses.dataclass
class Positions:
    """What a revision's files were, position by position: the file objects, the cache key of each
    one that was cached (None: read again every time), and what the cached ones took together.
    Empty: the next revision is read in order."""

    files: list[SourceFile] = dataclasses.field(default_factory=list)
    keys: list[tuple[str, str] | None] = dataclasses.field(default_factory=list)
    spent: Spent = (0, 0, 0, 0)


def add_spent(spent: Iterable[Spent], sign: int = 1, start: Spent = (0, 0, 0, 0)) -> Spent:
    """`start` plus (or, with sign -1, minus) each of `spent`."""
    b, d, n, a = start
    for sb, sd, sn, sa in spent:
        b, d, n, a = b + sign * sb, d + sign * sd, n + sign * sn, a + sign * sa
    return b, d, n, a


class FileCache:
    """The last revision's files by (path, content id), its parts in file order, and their keys."""

    keeps = True  # what is parsed is kept for the next revision (NullFileCache: not)

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], Parsed] = {}
        self._context: tuple[object, ...] = ()
        self.parts: list[Manifest] = []  # the last revision's parts, in file order ...
        self._seen: dict[ObjectKey, Origin] | None = None  # ... and their keys; None: start afresh
        # ... and the kinds asked of it, joined (Manifest.of_kind)
        self._asked: dict[str, list[Loaded]] = {}
        # the kinds of the files that differ from the last revision's
        self._touched: set[str] = set()
        self.last = Positions()  # the last revision's files, position by position
        self.hits = self.misses = 0
        self.loaded = False  # a revision has been loaded through it

    def use(self, context: tuple[object, ...]) -> None:
        """Starts afresh unless `context` (default namespace, limits) is the last revision's."""
        if self._context != context:
            self.entries, self._context, self.parts, self._seen = {}, context, [], None
            self.last = Positions()

    def take(self, key: tuple[str, str], budget: readbudget.ReadBudget) -> Manifest | None:
        """The cached part of a file, charged to `budget`; None when it is not cached or would not
        fit."""
        parsed = self.entries.get(key)
        if parsed is None or not budget.afford(parsed.spent):
            return None  # read and parsed again, so that an exceeded limit is reported as usual
        budget.charge(parsed.spent)
        self.hits += 1
        return parsed.part

    def changed_keys(self, parts: list[Manifest]) -> dict[ObjectKey, Origin] | None:
        """The last revision's key map updated for the parts that differ (by identity) from its
        parts, when that can be done without changing a verdict: None when some key is now defined
        twice (or was last time), so that the caller merges in order and reports each duplicate at
        the right file."""
        seen, old = self._seen, self.parts
        # taken: whatever happens below, the next revision starts from what is left
        self._seen = None
        if seen is None:
            return None
        now, before = {id(p) for p in parts}, {id(p) for p in old}
        added = [p for p in parts if id(p) not in before]
        self._touched = set()
        for part in old:
            if id(part) not in now:
                self._touched.update(part.kinds())
                gone = part.keys()
                for key in gone:
                    # a key left behind by mistake could only force the full merge
                    seen.pop(key, None)
        for part in added:
            self._touched.update(part.kinds())
            keys = part.keys()
            if len(keys) != len(part.objects) or not seen.keys().isdisjoint(keys):
                return None
            seen.update(keys)
        return seen

    def asked(self) -> dict[str, list[Loaded]]:
        """The kinds the last revision joined that no changed file has: the very lists, still
        right."""
        return {k: v for k, v in self._asked.items() if k not in self._touched}

    def remember(self, parts: list[Manifest], seen: dict[ObjectKey, Origin] | None,
                 asked: dict[str, list[Loaded]]) -> None:
        """This revision's parts, their key map (None: none, start afresh), the kinds joined of
        it."""
        self.parts, self._seen, self._asked = parts, seen, asked

    def keep(self, entries: dict[tuple[str, str], Parsed], last: Positions) -> None:
        """This revision's cached files and positions, for the next one: a revision has been
        loaded."""
        self.entries, self.last, self.loaded = entries, last, True

    def count(self, *, hits: int = 0, misses: int = 0) -> None:
        """Files taken whole from the cache (`hits`; negative: taken back) and files parsed and
        kept."""
        self.hits += hits
        self.misses += misses


class NullFileCache(FileCache):
    """Keeps nothing (a one-shot run): every file is read and parsed. Holds no state, so one
    instance (`NO_FILES`) serves every caller."""

    keeps = False

    def use(self, context: tuple[object, ...]) -> None:
        pass

    def take(self, key: tuple[str, str], budget: readbudget.ReadBudget) -> Manifest | None:
        return None

    def changed_keys(self, parts: list[Manifest]) -> dict[ObjectKey, Origin] | None:
        return None

    def asked(self) -> dict[str, list[Loaded]]:
        return {}

    def remember(self, parts: list[Manifest], seen: dict[ObjectKey, Origin] | None,
                 asked: dict[str, list[Loaded]]) -> None:
        pass

    def keep(self, entries: dict[tuple[str, str], Parsed], last: Positions) -> None:
        pass

    def count(self, *, hits: int = 0, misses: int = 0) -> None:
        pass


NO_FILES: FileCache = NullFileCache()
