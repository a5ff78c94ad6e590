"""A standby follows: the replica that does not hold the Lease plans the newest revision against the
world as the leader would, writes nothing, and keeps what it read, so that taking over costs what a
push costs instead of a cold start.

    fetch -> load -> desired -> observe (read-only: Kubernetes lists, SOA serials, AXFR) -> plan
          -> memory: the parsed files, the expanded revision, the cluster and what every primary
             serves with its serial (agent/run/memorize.py `after_observe`)

Nothing is written: no object, zone, record, status, Event, state record or commit report, and the
run is not counted as a run. The cluster is listed again after every run of the leader that wrote
(the shared state's `reconciled_at`) and while one writes (its `writing_at`, saved before its first
write: a leader that died writing leaves it set), so that a standby that followed since can trust
its list. On taking over, `memorize.take_over` keeps the zones but asks every zone's SOA serial
again (a zone the old leader wrote since is transferred again; the others are not), and reads the
cluster in full once unless the standby listed it after the old leader's last run that wrote.
"""

from __future__ import annotations

import dataclasses
import logging
import time

from agent.clients import statestore
from agent.clients.deadline import Deadline
from agent.errors import AgentError
from agent.run import decide, memorize
from agent.run.decision import Head, Now
from agent.run.memory import Memory
from agent.run.planner import Options, Planning, Targets, plan
from agent.run.revisions import RevisionSource
from agent.run.runhold import bounded

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Followed:
    revision: str | None
    zones: int = 0  # zones observed
    problem: str = ""  # why nothing was kept (unreachable source or world, an invalid revision)


def follow(source: RevisionSource, targets: Targets, options: Options, memory: Memory) -> Followed:
    """Plans the newest revision read-only and keeps what was observed; never raises for the
    world."""
    deadline = Deadline(options.deadline)
    # the leader alone writes
    targets = dataclasses.replace(targets, store=statestore.ReadOnly(targets.store))
    try:
        with bounded(source, targets, deadline, lock_wait=options.lock_wait):
            # the leader wrote since the cluster was listed (or writes now): it is listed again
            state = targets.store.load_run()
            memorize.following(memory, state)
            # before the cluster is listed: a write of the leader after it is not in the list
            listed = time.time()
            snap = source.snapshot()
            options = dataclasses.replace(options, mode="detect")
            # a follow (decide.py, the standby row): every zone and the cluster, read as the phase
            # says
            decision = decide.decide(state, memory.phase(standby=True),
                                     Head(snap.revision, read=True), options,
                                     Now(time.time(), time.monotonic()))
            planning = Planning(targets, options, memory=memory, deadline=deadline)
            planned = plan(snap, decision.scope, decision.reading, planning)
    except AgentError as exc:
        return Followed(None, problem=str(exc))
    desired = planned.validated.desired
    if desired is None or not planned.validated.ok or planned.plan is None:
        return Followed(snap.revision, problem=planned.error or "the revision is not valid")
    memorize.after_observe(memory, desired, planned.observed,
                           agent_namespace=options.agent_namespace, kube_fast=planned.kube_fast,
                           dns_fast=planned.dns_fast, listed_at=listed)
    zones = len(planned.observed.dns.zones) if planned.observed.dns is not None else 0
    return Followed(snap.revision, zones=zones)
