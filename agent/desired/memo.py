"""What expanding the last revision computed, reused for the next one when its inputs are the same.

The contract `Memo` relies on, and every step that hands it inputs must keep: **the same inputs are
the very same objects.** A long-running agent loads an unchanged file as the very same objects
(agent/load/filecache.FileCache), and each memoized step returns the very object it returned last
time while its own inputs are the same (a zone's placement, a file's assignment, a zone's RRsets,
a zone's plan), so the next step can compare by identity (`is`), not by value: a zone whose DNSZone
and member records are the same objects as last time has the same RRsets and the same problems.
The converse is what keeps it correct: anything that can change a result must be among its inputs,
and a step must never change an object it returned (or was given) in place. Inputs that are
re-read but say the same thing get a stable stand-in (`token`). tests/run/test_memory_cache_owner.py
holds the contract (changed input -> recomputed; unchanged -> the very same object) and
tests/run/test_planner_warm_equals_cold.py requires that plans made with a warm memo equal plans
made cold.

Entries not used by a revision are dropped after it (`sweep`), so the memo holds one revision's
worth. `each` does the same for a whole list (a result per file, per zone) at the cost of comparing
the lists, not of a lookup per item: a commit changes a few items of a list of thousands.

`NO_MEMO` is the memo of a one-shot run: it computes everything and remembers nothing, so callers
always have a memo and never branch on having one. Pure: no I/O.
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
        if (found is not None and len(found[0]) == len(inputs)
                and all(map(operator.is_, found[0], inputs))):
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

    def each(self, key: Hashable, items: Sequence[I], compute: Callable[[I], T], *,
             name: Callable[[I], Hashable], same: Callable[[I, I], bool] = operator.is_,
             shared: tuple[object, ...] = ()) -> list[T]:
        """[compute(item) for item in items], where an item that is `same` as the last call's item
        of its `name` (while `shared` are the same objects) takes that item's result. The usual
        case, a list of the same length, is compared position by position; only where it differs are
        names looked up. The list returned is the caller's; its items are shared with the next
        call."""
        found = self._entries.get(key) or self._used.get(key)
        if (found is None or len(found[0]) != len(shared) + 1
                or not all(map(operator.is_, found[0], shared))):
            results = [compute(item) for item in items]
            self.misses += len(items)
        else:
            old_items = typing.cast(Sequence[I], found[0][-1])
            old_results: list[T] = found[1]
            aligned = len(old_items) == len(items)
            if aligned:
                results = list(old_results)
                todo: Sequence[int] = [i for i, kept in enumerate(map(same, old_items, items))
                                       if not kept]
            else:
                results, todo = [None] * len(items), range(len(items))  # type: ignore[list-item]
            computed = 0
            before: dict[Hashable, tuple[I, T]] | None = None
            for i in todo:
                item = items[i]
                # not changed in place: moved, or new
                if not (aligned and name(old_items[i]) == name(item)):
                    if before is None:
                        before = {name(old): (old, result)
                                  for old, result in zip(old_items, old_results, strict=True)}
                    last = before.get(name(item))
                    if last is not None and same(last[0], item):
                        results[i] = last[1]
                        continue
                results[i], computed = compute(item), computed + 1
            self.misses += computed
            self.hits += len(items) - computed
        # the items are held: their ids are not reused
        self._used[key] = ((*shared, list(items)), results)
        # the caller's own list: appending to it must not change what is remembered
        return list(results)

    def sweep(self) -> None:
        """Keeps what this revision used, for the next one."""
        self._entries, self._used = self._used, {}

    def clear(self) -> None:
        """Forgets everything (nothing remembered may be trusted any more)."""
        self._entries, self._used = {}, {}


class NullMemo(Memo):
    """A memo that remembers nothing: every result is computed (a one-shot run). Holds no state, so
    one instance (`NO_MEMO`) serves every caller."""

    def get(self, key: Hashable, inputs: tuple[object, ...], compute: Callable[[], T]) -> T:
        return compute()

    def token(self, key: Hashable, fingerprint: Hashable) -> object:
        return object()  # never the same as another: whatever it stands for is computed again

    def each(self, key: Hashable, items: Sequence[I], compute: Callable[[I], T], *,
             name: Callable[[I], Hashable], same: Callable[[I, I], bool] = operator.is_,
             shared: tuple[object, ...] = ()) -> list[T]:
        return [compute(item) for item in items]

    def sweep(self) -> None:
        pass

    def clear(self) -> None:
        pass


NO_MEMO: Memo = NullMemo()
