"""memorize.take_over (agent/run/memorize.py): a new leader reconciles the head the old leader applied, even when
it followed that head as a standby."""

from __future__ import annotations

from agent.run import memorize
from agent.run.memory import Memory


def test_a_new_leader_reconciles_the_head_the_old_leader_applied() -> None:
    """HOLE: a long-running agent reconciles an unchanged head on its first run (`Memory.blank`: "drift
    made while it was down is repaired"). A standby that followed has loaded the revision, so it was no
    longer blank: the new leader's first run stopped at "already applied; nothing to do" and left what
    changed during the failover (a hand edit, the dead leader's unfinished resync) until resync_after."""
    memory = Memory()
    memory.files.loaded = True  # the standby followed the head (agent/run/follow.py)
    assert not memory.blank
    memorize.take_over(memory, applied_at=0.0)
    assert memory.blank  # decide.unchanged: the first run as the leader reconciles
