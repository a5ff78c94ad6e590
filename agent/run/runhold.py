"""A run's hold on its source and its targets, for a sync and a standby's follow alike: every
Kubernetes API call and git command is cut to the run's deadline, and the source's lock is held so
that two runs on the same source never overlap (lock.Busy when another has it)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from agent.clients.deadline import UNBOUNDED, Deadline
from agent.run import lock
from agent.run.planner import Targets
from agent.run.revisions import RevisionSource


@contextlib.contextmanager
def bounded(source: RevisionSource, targets: Targets, deadline: Deadline, *,
            lock_wait: float) -> Iterator[None]:
    """Holds the source's lock with every API call and git command cut to `deadline`."""
    if targets.kube_api is not None:
        targets.kube_api.deadline = deadline
    source.bound(deadline.remaining)
    try:
        with lock.held(source.lock_path, wait=lock_wait):
            yield
    finally:
        source.bound(None)
        if targets.kube_api is not None:
            targets.kube_api.deadline = UNBOUNDED
