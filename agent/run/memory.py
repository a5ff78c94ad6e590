"""What a long-running agent keeps between runs so that a run costs what changed, not the
repository.

    files      parsed and validated files, by content id (a file that did not change is not parsed)
    desired    expansion results whose inputs did not change (a zone's RRsets, a CR's body)
    kube       the objects this agent left in the cluster (not listed again until a full observe)
    dns        what each primary served when the agent last saw it, with its SOA serial

It is the one owner of caching: every cache a run uses is one of its parts, and a run always has a
memory. The CLI's one-shot runs get `ONE_SHOT`, whose parts remember nothing (`NO_FILES`,
`NO_MEMO`) and which nothing is written to after a run (`keeps` is False), so no step branches on
having a memory. What reuse relies on (the same inputs are the very same objects) is written down
in agent/desired/memo.py and tested by tests/run/test_memory_cache_owner.py and
tests/run/test_planner_warm_equals_cold.py.

What of it decides the next run is its `phase()` (agent/run/decide.py); it is written by one module,
agent/run/memorize.py, on the sync worker only (besides the caches' own owners: the file cache, the
memos, the DNS apply's in-sync results). The pod watch's thread posts what it sees to the trigger
queue instead (agent/run/throttle.py).

A full observe (Kubernetes listed and compared
field by field) happens every `resync_after`, and so does asking every zone's SOA serial (between
them a run asks only the zones its revision touches); a full DNS comparison (every zone
transferred) every `sweep_after`; and all of them after a run that failed as a whole. After a
partial run, what it could not confirm is read again, not trusted: a zone that failed is
transferred again, the objects it failed to write are looked up again, those it failed to delete
are read again (`kube_recheck`), and so are the namespaces of every failure. Hand edits elsewhere
wait for the next full observe, as they do after a clean run.
"""

from __future__ import annotations

import dataclasses
import time

from agent.desired.memo import NO_MEMO, Memo
from agent.desired.placement import Zone
from agent.load.filecache import NO_FILES, FileCache
from agent.model.key import ObjectKey
from agent.model.observed import KubeObserved
from agent.observe.dnsobserve import DnsMemory
from agent.reconcile import insync
from agent.run import decide
from agent.run.decide import CLOCK_SKEW as CLOCK_SKEW  # seconds two replicas' clocks may differ by
from agent.run.decision import Phase, Standing


@dataclasses.dataclass
class Memory:
    files: FileCache = dataclasses.field(default_factory=FileCache)
    desired: Memo = dataclasses.field(default_factory=Memo)
    # the zone plans of zones nothing changed in
    plans: Memo = dataclasses.field(default_factory=Memo)
    kube: KubeObserved | None = None
    kube_at: float = 0.0  # monotonic time of the last full Kubernetes observe
    # read again by the next recall
    kube_recheck: set[ObjectKey] = dataclasses.field(default_factory=set)
    # wall-clock time (epoch s) of the same: compared with another replica's writes
    kube_listed: float = 0.0
    dns: DnsMemory = dataclasses.field(default_factory=DnsMemory)
    dns_at: float = 0.0  # monotonic time of the last full DNS comparison
    # monotonic time of the last run that asked every zone's SOA serial
    serials_at: float | None = None
    agent_namespace: str = ""
    keeps: bool = True  # what a run saw and left is kept for the next one (ONE_SHOT: not)
    # took the Lease since its last run: that run reconciles even an unchanged head
    new_leader: bool = False
    # a BIND9 pod waits for its zones (agent/podready/watch.py): a run reconciles even an unchanged
    # head
    pods_waiting: bool = False
    # instances whose pods became ready, not ready or gone (agent/podready/watch.py): a run writes
    # their statuses (and their zones') even at an unchanged head
    pods_moved: frozenset[ObjectKey] = frozenset()
    # a start-up or resync reconcile was cut for a push (agent/run/orchestrator.py, "pushes first"):
    # the push's zones go first, then the whole revision is reconciled, starting from what the cut
    # run read
    reconcile_pending: bool = False
    # the zones and objects of the revision taken as applied then: a push's run plans the zones that
    # differ from these; one that removes any of them is planned whole (its gate may refuse the
    # removal)
    base_zones: dict[str, Zone] = dataclasses.field(default_factory=dict)
    base_objects: frozenset[ObjectKey] = frozenset()
    # the result of each zone a run found in sync, with its plan: a later run that leaves the zone
    # unasked and plans it the same (the very plan, from `plans`) reports it as it is
    # (agent/reconcile/insync.py)
    reported: insync.Reported = dataclasses.field(default_factory=dict)
    # the CRs whose status as last computed or marked is not settled (failed, not served yet,
    # waiting, a rejected revision's mark): a run that computes only the statuses its change touches
    # computes these too, so a status goes back to Ready on the first run after its cause is gone
    unsettled: set[ObjectKey] = dataclasses.field(default_factory=set)
    # monotonic time a run last reconciled the revision that serves (applied it, or reconciled it
    # again while the head is rejected: agent/run/orchestrator.py `_repair_due`)
    served_at: float = 0.0
    # the next run computes every CR's status (a new leader: the old one's stay)
    statuses_all: bool = False

    @classmethod
    def one_shot(cls) -> Memory:
        """The memory of a run that has no next one: it computes everything and keeps nothing."""
        return cls(files=NO_FILES, desired=NO_MEMO, plans=NO_MEMO, keeps=False)

    @property
    def blank(self) -> bool:
        """A long-running agent that has loaded nothing yet (the process just started): its first
        run reconciles the revision even when that was applied before, so that the first push after
        a restart costs what it changes, not a cold start (27 s at 100,000 records), and drift made
        while it was down is repaired. So is a replica that just took the Lease, though it loaded
        the revision following as a standby (`new_leader`): what changed while the leader changed is
        repaired (a hand edit of a generated object that its standby listed, and whose applied-hash
        annotation it left as it was, waits for the new leader's first full observe, within
        `resync_after`). So is one whose reconcile was cut for a push (`reconcile_pending`), until a
        run reconciled whole. A one-shot run is never blank (it stops at an unchanged head)."""
        return decide.blank(self.phase())

    def phase(self, *, yields: bool = False, standby: bool = False) -> Phase:
        """What this memory holds that decides the next run (agent/run/decide.py). `yields`: a push
        may wait for the run (pushes first); `standby`: this replica does not hold the Lease."""
        standing = (Standing.STANDBY if standby else Standing.NEW_LEADER if self.new_leader
                    else Standing.WARM if self.files.loaded else Standing.COLD)
        return Phase(standing, self.keeps, yields, owed=self.reconcile_pending,
                     statuses_owed=self.statuses_all, pods_waiting=self.pods_waiting,
                     pods_moved=self.pods_moved, kube_at=self.kube_at, kube_listed=self.kube_listed,
                     kube_ns=self.agent_namespace, has_kube=self.kube is not None,
                     dns_at=self.dns_at, has_dns=bool(self.dns.zones), serials_at=self.serials_at,
                     served_at=self.served_at)

    def kube_fresh(self, resync_after: float, agent_namespace: str) -> bool:
        # kube_at 0.0: never
        return (self.kube is not None and self.agent_namespace == agent_namespace
                and self.kube_at > 0.0 and time.monotonic() - self.kube_at < resync_after)

    def dns_fresh(self, sweep_after: float) -> bool:
        return (bool(self.dns.zones) and self.dns_at > 0.0
                and time.monotonic() - self.dns_at < sweep_after)

    def serials_fresh(self, resync_after: float) -> bool:
        """Every zone's serial was asked within `resync_after`: a run may ask only the zones it
        touches."""
        return self.serials_at is not None and time.monotonic() - self.serials_at < resync_after

    def reports(self) -> insync.Reported | None:
        """What a run's DNS apply may reuse and keep (a one-shot run: nothing)."""
        return self.reported if self.keeps else None


# holds nothing and is never written to: one instance serves every one-shot run
ONE_SHOT = Memory.one_shot()
