"""What expanding the last revision computed, reused for the next one when its inputs are the same.

A long-running agent loads unchanged files as the very same objects (agent/load/loader.FileCache),
so "the same inputs" is identity: a zone whose DNSZone and member records are the same objects as
last time has the same RRsets and the same problems. Entries not used by a revision are dropped
after it (`sweep`), so the memo holds one revision's worth. Pure: no I/O.

`each` does the same for a whole list (a result per file, per zone) at the cost of comparing the
lists, not of a lookup per item: a commit changes a few items of a list of thousands.
"""

from __future__ import annotations

import operator
import typing
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741 - an item of a list


class Memo:
    def __init__(self) -> None:
        self._entries: dict[Hashable, tuple[tuple[object, ...], Any]] = {}
        self._used: dict[Hashable, tuple[tuple[object, ...], Any]] = {}
        self.hits = self.misses = 0

    def get(self, key: Hashable, inputs: tuple[object, ...], compute: Callable[[], T]) -> T:
        """compute(), or its result from the last revision if `inputs` are the same objects."""
        found = self._entries.get(key) or self._used.get(key)
        if found is not None and len(found[0]) == len(inputs) and all(map(operator.is_, found[0], inputs)):
            self.hits += 1
            self._used[key] = found
            value: T = found[1]
            return value
        self.misses += 1
        value = compute()
        self._used[key] = (inputs, value)  # the inputs are held, so their ids cannot be reused
        return value

    def token(self, key: Hashable, fingerprint: Hashable) -> object:
        """An object that stays the same across revisions while `fingerprint` compares equal: for
        inputs that are re-read (a file changed) but say the same thing."""
        found = self._entries.get(key) or self._used.get(key)
        if found is not None and found[0] == (fingerprint,):
            self._used[key] = found
            return found[1]
        self._used[key] = ((fingerprint,), object())
        return self._used[key][1]

    def each(self, key: Hashable, items: Sequence[I], compute: Callable[[I], T], *, name: Callable[[I], Hashable],
             same: Callable[[I, I], bool] = operator.is_, shared: tuple[object, ...] = ()) -> list[T]:
        """[compute(item) for item in items], where an item that is `same` as the last call's item of
        its `name` (while `shared` are the same objects) takes that item's result. The usual case,
        a list of the same length, is compared position by position; only where it differs are
        names looked up."""
        found = self._entries.get(key) or self._used.get(key)
        if found is None or len(found[0]) != len(shared) + 1 or not all(map(operator.is_, found[0], shared)):
            results = [compute(item) for item in items]
            self.misses += len(items)
        else:
            old_items = typing.cast(Sequence[I], found[0][-1])
            old_results: list[T] = found[1]
            aligned = len(old_items) == len(items)
            if aligned:
                results = list(old_results)
                todo: Sequence[int] = [i for i, kept in enumerate(map(same, old_items, items)) if not kept]
            else:
                results, todo = [None] * len(items), range(len(items))  # type: ignore[list-item]
            computed = 0
            before: dict[Hashable, tuple[I, T]] | None = None
            for i in todo:
                item = items[i]
                if not (aligned and name(old_items[i]) == name(item)):  # not changed in place: moved, or new
                    if before is None:
                        before = {name(old): (old, result) for old, result in zip(old_items, old_results, strict=True)}
                    last = before.get(name(item))
                    if last is not None and same(last[0], item):
                        results[i] = last[1]
                        continue
                results[i], computed = compute(item), computed + 1
            self.misses += computed
            self.hits += len(items) - computed
        self._used[key] = ((*shared, list(items)), results)  # the items are held: their ids are not reused
        return results

    def sweep(self) -> None:
        """Keeps what this revision used, for the next one."""
        self._entries, self._used = self._used, {}
