"""Pushes first, the scheduler's side: a reconcile yields only to a webhook that may start a run now
(agent/run/throttle.py `push_due`), not to one the throttle holds back, nor to the schedule."""

from __future__ import annotations

from agent.run import throttle


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_waiting_webhook_is_due_unless_the_throttle_holds_it() -> None:
    clock = _Clock()
    triggers = throttle.Triggers(10, clock=clock)
    assert not triggers.push_due()
    triggers.request("schedule")
    assert not triggers.push_due()  # the schedule is no push
    triggers.request(throttle.WEBHOOK)
    assert triggers.push_due()
    assert triggers.take(timeout=0) == "schedule"  # a run takes every request: it syncs the head
    assert not triggers.push_due()
    triggers.request(throttle.WEBHOOK)
    assert triggers.take(timeout=0) == throttle.WEBHOOK
    triggers.request(throttle.WEBHOOK)  # within the interval of the last webhook-started run
    assert not triggers.push_due()
    clock.now += 10
    assert triggers.push_due()
