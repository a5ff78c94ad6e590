"""The words a run's outcome is told in: one enumeration, whose values are the strings the run
outcomes, the state record (`RunState.outcome`), the notes, the log lines, the metrics' `outcome`
label and the forges' commit statuses use. A `StrEnum`: a value compares and serialises as its
string.

    applied      every change written             planned      a dry run's plan (nothing written)
    partial      written, but some failed          drift        detect: the world differs from Git
    rejected     the revision is invalid           in-sync      detect: the world is as Git says
    refused      the safety gate refused the plan  superseded   a commit a later one replaced unrun
    unchanged    nothing new to do                 error        the run failed (a bug, a crash)
    unreachable  the state or the source unread    pending      a forge's status while a commit
                 applies
    busy         another run holds the lock        suspended    runs are stopped (setting or mark)
    preempted    a reconcile cut for a push
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    APPLIED = "applied"
    PARTIAL = "partial"
    REJECTED = "rejected"
    REFUSED = "refused"
    UNCHANGED = "unchanged"
    UNREACHABLE = "unreachable"
    BUSY = "busy"
    SUSPENDED = "suspended"
    PREEMPTED = "preempted"
    PLANNED = "planned"
    DRIFT = "drift"
    IN_SYNC = "in-sync"
    SUPERSEDED = "superseded"
    ERROR = "error"
    # not a run's outcome: the commit status a forge shows while a commit applies
    PENDING = "pending"
