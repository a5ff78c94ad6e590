"""When the sync worker runs next: the schedule, the start and a new leadership at once; webhooks
throttled.

    schedule / start / leadership --> due now (the next free moment of the worker)
    webhook delivery --------------> due now if no webhook started a run within `min_interval`,
                                     else one trailing run when that interval ends

Every request made before a run starts is served by that run (it syncs the branch head), so a
burst of deliveries starts one run at once and at most one more per `min_interval`.

What the pod watch sees travels with its requests (`pods_waiting`, `pods_moved`): the worker takes
it (`pods_seen`) before the run it starts and hands it to the memory's one writer
(agent/run/memorize.py), so no other thread writes the memory.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable

from agent.model.key import ObjectKey

WEBHOOK = "webhook"


class Triggers:
    """Requests for a sync run, and the throttle of webhook-started runs. Thread-safe."""

    def __init__(self, min_interval: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.min_interval = min_interval
        self._clock = clock
        self._cond = threading.Condition()
        self._due: str | None = None  # a reason that runs as soon as the worker is free
        self._hook = False  # a webhook delivery waits for a run
        self._hook_started = -math.inf  # when the last webhook-started run began
        # whether a pod waits for its zones, as last seen (None: not since)
        self._waiting: bool | None = None
        # instances whose pods moved since the worker last took them
        self._moved: set[ObjectKey] = set()

    def request(self, why: str) -> None:
        with self._cond:
            if why == WEBHOOK:
                self._hook = True
            elif self._due is None:
                self._due = why
            self._cond.notify_all()

    def push_due(self) -> bool:
        """Whether a webhook delivery waits and may start a run now (not held back by the throttle):
        a start-up or resync reconcile then yields to it (agent/run/orchestrator.py, "pushes
        first")."""
        with self._cond:
            return self._hook and self._clock() >= self._hook_started + self.min_interval

    def pods_waiting(self, waiting: bool) -> None:
        with self._cond:
            self._waiting = waiting

    def pods_moved(self, keys: Iterable[ObjectKey]) -> None:
        with self._cond:
            self._moved.update(keys)

    def pods_seen(self) -> tuple[bool | None, frozenset[ObjectKey]]:
        """What the pod watch saw since the last call: whether a pod waits (None: not looked since),
        the instances whose pods moved."""
        with self._cond:
            seen = (self._waiting, frozenset(self._moved))
            self._waiting, self._moved = None, set()
            return seen

    def interrupt(self) -> None:
        """Wakes a waiting `take` (which then returns None unless a run is due): used to stop."""
        with self._cond:
            self._cond.notify_all()

    def take(self, timeout: float) -> str | None:
        """The reason of the next run once one is due, within `timeout` seconds; None if none is.
        Taking a run clears every pending request: the run serves them all."""
        with self._cond:
            why = self._take_due()
            if why is None:
                self._cond.wait(self._sleep(timeout))
                why = self._take_due()
            return why

    def _take_due(self) -> str | None:
        now = self._clock()
        why = self._due
        if why is None and self._hook and now >= self._hook_started + self.min_interval:
            why = WEBHOOK
            self._hook_started = now
        if why is not None:
            self._due, self._hook = None, False
        return why

    def _sleep(self, timeout: float) -> float:
        if not self._hook:
            return timeout
        return max(0.0, min(timeout, self._hook_started + self.min_interval - self._clock()))
