"""The wall time of each step of a run, by name: fetch, load, validate, desired, observe, plan,
gate, apply_kubernetes, apply_dns, verify, status, report, push (a step that runs twice adds up)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

Steps = dict[str, float]


@contextlib.contextmanager
def timed(steps: Steps, name: str) -> Iterator[None]:
    """Adds the time the `with` block takes to `steps[name]`, also when it raises."""
    start = time.monotonic()
    try:
        yield
    finally:
        steps[name] = steps.get(name, 0.0) + time.monotonic() - start
