"""Pushes first, the two steps of it a run takes outside planning (agent/run/orchestrator.py says when):
a reconcile cut for a push, and the baseline a restarted agent reads when a push came before its
first run. What is kept between them is agent/run/memory.py's (`reconcile_pending`, `base_zones`)."""

from __future__ import annotations

import logging

from agent.errors import AgentError
from agent.model.ownership import RunState
from agent.model.steps import Steps
from agent.run import memorize
from agent.run.memory import Memory
from agent.run.planner import Options, Planned, Targets, validate
from agent.run.revisions import RevisionSource, Snapshot
from agent.run.runoutcome import RunOutcome

log = logging.getLogger(__name__)


def cut(run_id: str, snap: Snapshot, planned: Planned, memory: Memory) -> RunOutcome:
    """The reconcile yielded to a push before planning: nothing written, what it read kept."""
    assert planned.validated.desired is not None and planned.observed.dns is not None
    memorize.after_cut(memory, planned.validated.desired, planned.observed.dns)
    read = len(planned.observed.dns.zones)
    return RunOutcome(run_id, snap.revision, "preempted", parsed=True,
                      message=f"a push arrived: its zones go first; the reconcile of {snap.revision[:12]} "
                              f"follows it ({read} zones read so far are kept)")


def baseline(source: RevisionSource, state: RunState, targets: Targets, options: Options, memory: Memory,
             steps: Steps) -> None:
    """The revision applied last, read from the clone (fetched by its id if need be) and validated, as
    what each zone serves (`memorize.baseline`); left out when it is gone or no longer valid."""
    try:
        base = source.at(state.applied) if state.applied else None
        if base is None:
            return
        validated = validate(base.files, options, limits=base.limits, kube_api=targets.kube_api, memory=memory)
    except AgentError as exc:  # the push is then planned whole, as without a baseline
        log.warning("the applied revision %s could not be read as the baseline (%s): the push waits for the "
                    "reconcile", (state.applied or "")[:12], exc)
        return
    for name, seconds in validated.steps.items():
        steps[name] = steps.get(name, 0.0) + seconds
    if validated.ok and validated.desired is not None:
        memorize.baseline(memory, validated.desired)
