"""What asks the sync worker for a run, and the word operators see for it (the run's start line, the
`trigger` label of the metrics, the Events): the agent started or became the leader is "start-up", a
push and the push-first run it asks again for a cut reconcile are "webhook", the resumed reconcile
is "resync"."""

from __future__ import annotations

from enum import StrEnum


class Trigger(StrEnum):
    SCHEDULE = "schedule"  # the interval
    START = "start"  # the agent started
    LEADERSHIP = "leadership"  # this replica took the Lease
    WEBHOOK = "webhook"  # a push delivery
    PUSH = "push"  # a reconcile was cut for a push: the push's run
    RESUME = "resume"  # the reconcile a push cut, resumed
    RETRY = "retry"  # a run that may succeed later, again
    PODS = "pods"  # a new BIND9 pod waits for its zones

    @property
    def label(self) -> str:
        return LABELS[self]


LABELS = {Trigger.SCHEDULE: "schedule", Trigger.START: "start-up", Trigger.LEADERSHIP: "start-up",
          Trigger.WEBHOOK: "webhook", Trigger.PUSH: "webhook", Trigger.RESUME: "resync",
          Trigger.RETRY: "retry", Trigger.PODS: "pods"}
