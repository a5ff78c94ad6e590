"""Lists read as one list without being copied into one.

A revision of 100,000 records is kept as a list per file. Copying those into one list of 100,000
touches every object (a reference count each, scattered in memory): milliseconds per copy, on every
run, for a list that most runs never read. `Joined` is that list, made only if it is indexed.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import TypeVar, overload

T = TypeVar("T")


class Joined(Sequence[T]):
    def __init__(self, lists: Sequence[Sequence[T]]) -> None:
        self._lists = lists
        self._flat: list[T] | None = None

    def __iter__(self) -> Iterator[T]:
        return itertools.chain.from_iterable(self._lists)

    @property
    def parts(self) -> Sequence[Sequence[T]]:
        """The lists read as one, themselves (a step that works list by list:
        agent/plan/kubediff.py)."""
        return self._lists

    def __len__(self) -> int:
        return sum(map(len, self._lists))

    def __bool__(self) -> bool:
        return any(self._lists)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if self._flat is None:
            self._flat = list(self)
        return self._flat[index]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and all(
            a == b for a, b in zip(self, other, strict=True))

    def __repr__(self) -> str:
        return f"Joined({len(self)} items in {len(self._lists)} lists)"

    __hash__ = None  # type: ignore[assignment]
