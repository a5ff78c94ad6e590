"""How the process's garbage collector runs: rarely, because a revision is millions of long-lived
objects.

Loading 100,000 records allocates millions of objects that all live until the run ends (or, in a
long-running agent, until the next revision replaces them). With CPython's default thresholds
(700, 10, 10) the cyclic collector runs thousands of times meanwhile, and each older-generation
collection walks everything allocated so far: a third of a 100,000-record plan's time went there
(25.5 s -> 17.4 s with these thresholds, the same peak memory). Reference counting still frees
everything at once; only cycles wait a little longer.

While a revision is built (`long_lived`), the collector does not run at all: nothing it could
find is garbage yet, and the young collections alone still cost a tenth of a 10,000-record plan.
What was built then joins the oldest generation in one step instead of being walked on its way
there; cycles among it are found by the next full collection, as they would be anyway.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

# allocations before a young collection; young, then middle collections per older
THRESHOLDS = (50_000, 20, 100)

_lock = threading.Lock()
_depth = 0  # nested or concurrent long_lived() blocks; the collector resumes when the last one ends
_resume = False  # whether it ran when the first of them began


def tune() -> None:
    """Called once when the process starts (the CLI's main, which `run` goes through too)."""
    gc.set_threshold(*THRESHOLDS)


@contextlib.contextmanager
def long_lived() -> Iterator[None]:
    """Pauses the cyclic collector while the block builds objects meant to outlive it, then moves
    every tracked object to the oldest generation (gc.freeze + unfreeze: O(1), no walk)."""
    global _depth, _resume
    with _lock:
        _depth += 1
        if _depth == 1:
            _resume = gc.isenabled()
            gc.disable()
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.freeze()
                gc.unfreeze()
                if _resume:
                    gc.enable()
