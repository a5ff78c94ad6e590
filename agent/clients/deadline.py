"""A run's deadline: every network call gets min(its own timeout, the time the run has left).

A stalled peer therefore ends the run as partial within the deadline instead of holding it: the
per-call timeouts bound each read, the deadline bounds their sum. `check()` between steps stops a
run that is out of time before it starts the next write.
"""

from __future__ import annotations

import math
import time

from agent.errors import ApplyError


class DeadlineExceeded(ApplyError):
    """The run used up its time; what was not done is left for the next run."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


class Deadline:
    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds if seconds else math.inf

    def remaining(self) -> float:
        return self.at - time.monotonic()

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0

    def timeout(self, default: float) -> float:
        """The timeout for one call: its own, cut to what the run has left (never below 1 ms)."""
        return max(0.001, min(default, self.remaining()))

    def check(self, what: str) -> None:
        if self.expired:
            raise DeadlineExceeded(f"the run's deadline ({self.seconds:.0f} s) passed before "
                                   f"{what}; "
                                   "the next run continues from where this one stopped")


UNBOUNDED = Deadline(None)
