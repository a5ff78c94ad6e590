"""A run's decision, as data: what kind of run it is and why, which revision it applies, what it
covers, how it reads the world, whether it may yield to a push and which statuses it writes; and the
phase a long-running agent is in between runs (what it remembers that decides). The types only: the
pure `decide(state, phase, head, options, now) -> Decision` that fills them is agent/run/decide.py.

    kind        skip, reconcile, push-first, resume, repair, dry-run, detect, follow
    why         the behaviour that picked the kind (a log field, an Event's text, a metric label)
    revision    the head, or the revision that serves (a repair while the head is rejected)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from agent.model.key import ObjectKey
from agent.model.reading import Reading
from agent.model.scope import Scope


class RunKind(StrEnum):
    SKIP = "skip"  # nothing to do, or not allowed to: suspended, unchanged
    RECONCILE = "reconcile"  # the whole revision against the whole world
    PUSH_FIRST = "push-first"  # a push's zones first, the reconcile it cut later
    RESUME = "resume"  # the reconcile a push cut
    REPAIR = "repair"  # the revision that serves, again, while the head is rejected or refused
    DRY_RUN = "dry-run"  # plan, write nothing
    DETECT = "detect"  # plan, report drift, write nothing but the state record
    FOLLOW = "follow"  # a standby: read what the leader applies, write nothing


class Why(StrEnum):
    SUSPENDED_SETTING = "suspended-setting"
    SUSPENDED_MARK = "suspended-mark"
    UNCHANGED = "unchanged"
    STANDBY = "standby"
    REPAIR_AFTER_CUT = "repair-after-cut"
    REPAIR_FOR_PODS = "repair-for-pods"
    REPAIR_DUE = "repair-due"
    DRY_RUN = "dry-run"
    DETECT = "detect"
    PUSH_FIRST = "push-first"
    PUSH_FIRST_AFTER_RESTART = "push-first-after-restart"
    RESUME = "resume"
    START_UP = "start-up"
    NEW_LEADER = "new-leader"
    PODS_WAITING = "pods-waiting"
    PODS_MOVED = "pods-moved"
    RESYNC = "resync"
    RETRY = "retry"
    REFUSED_AGAIN = "refused-again"
    NEW_HEAD = "new-head"


KIND_OF: dict[Why, RunKind] = {
    Why.SUSPENDED_SETTING: RunKind.SKIP, Why.SUSPENDED_MARK: RunKind.SKIP,
    Why.UNCHANGED: RunKind.SKIP, Why.STANDBY: RunKind.FOLLOW, Why.REPAIR_AFTER_CUT: RunKind.REPAIR,
    Why.REPAIR_FOR_PODS: RunKind.REPAIR, Why.REPAIR_DUE: RunKind.REPAIR,
    Why.DRY_RUN: RunKind.DRY_RUN, Why.DETECT: RunKind.DETECT, Why.PUSH_FIRST: RunKind.PUSH_FIRST,
    Why.PUSH_FIRST_AFTER_RESTART: RunKind.PUSH_FIRST, Why.RESUME: RunKind.RESUME,
    Why.START_UP: RunKind.RECONCILE, Why.NEW_LEADER: RunKind.RECONCILE,
    Why.PODS_WAITING: RunKind.RECONCILE, Why.PODS_MOVED: RunKind.RECONCILE,
    Why.RESYNC: RunKind.RECONCILE, Why.RETRY: RunKind.RECONCILE,
    Why.REFUSED_AGAIN: RunKind.RECONCILE, Why.NEW_HEAD: RunKind.RECONCILE}
"""The one kind each behaviour is a run of."""


class Revision(StrEnum):
    HEAD = "head"
    SERVING = "serving"  # the revision applied last (a repair while the head is rejected)


class StatusScope(StrEnum):
    ALL = "all"
    AFFECTED = "affected"  # the CRs the run changed, the unsettled and those of moved pods
    NONE = "none"


class Standing(StrEnum):
    COLD = "cold"  # the process started: nothing loaded yet
    WARM = "warm"
    NEW_LEADER = "new-leader"
    STANDBY = "standby"  # not the Lease holder


@dataclass(frozen=True)
class Head:
    """The revision a run is decided on: the remote's head (read False), or the revision read
    (True)."""

    revision: str | None
    read: bool = False
    serving_gone: bool = False  # the revision that serves can no longer be read from the source


@dataclass(frozen=True)
class Now:
    wall: float  # time.time()
    mono: float  # time.monotonic()


@dataclass(frozen=True)
class Phase:
    """What a long-running agent remembers between runs that decides the next one. Owed is apart
    from the standing: a replica can be owed a reconcile and newly leading at once."""

    standing: Standing
    keeps: bool  # False: a one-shot run (the CLI), which remembers nothing
    # a push may wait for this agent's runs (its reconciles yield to it: pushes first)
    yields: bool = False
    owed: bool = False  # a reconcile was cut for a push (reconcile_pending)
    statuses_owed: bool = False  # every CR's status is written at the next run (statuses_all)
    pods_waiting: bool = False
    pods_moved: frozenset[ObjectKey] = frozenset()
    kube_at: float = 0.0  # monotonic time the cluster was last read
    kube_listed: float = 0.0  # wall time it was last listed in full
    kube_ns: str = ""  # the agent namespace that cluster read was of
    has_kube: bool = False
    dns_at: float = 0.0
    has_dns: bool = False
    serials_at: float | None = None
    served_at: float = 0.0

    @property
    def name(self) -> str:
        """The phase named in logs: standby > owed > new-leader > cold > warm."""
        if self.standing is Standing.STANDBY:
            return "standby"
        return "owed" if self.owed else self.standing.value


@dataclass(frozen=True)
class Decision:
    kind: RunKind
    why: Why
    revision: Revision
    scope: Scope
    reading: Reading
    may_yield: bool
    statuses: StatusScope
    keep_rejection: bool  # a repair keeps the rejected head's marks on the CRs
    # read the applied revision as each zone's baseline first (push-first after a restart)
    baseline: bool
    writes: bool  # statuses, notes, commit statuses (False: dry-run, detect, follow)
    names_superseded: bool
    alerts: bool
    publish_pending_notes: bool  # a skipped run with notes still to push
    message: str = ""  # a skip's reason, as the run outcome tells it

    @property
    def told(self) -> str:
        """The kind and why as an Event says them: "reconcile: resync", "push-first" (when they are
        one)."""
        return self.kind.value if self.kind.value == self.why.value else f"{self.kind}: {self.why}"
