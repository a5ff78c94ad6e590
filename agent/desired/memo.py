"""What expanding the last revision computed, reused for the next one when its inputs are the same.

A long-running agent loads unchanged files as the very same objects (agent/load/loader.FileCache),
so "the same inputs" is identity: a zone whose DNSZone and member records are the same objects as
last time has the same RRsets and the same problems. Entries not used by a revision are dropped
after it (`sweep`), so the memo holds one revision's worth. Pure: no I/O.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


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

    def sweep(self) -> None:
        """Keeps what this revision used, for the next one."""
        self._entries, self._used = self._used, {}
