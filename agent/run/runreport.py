"""The report of a run that got as far as its plan: each change of the plan (and of the zones
planned again after a stale UPDATE) with what became of it, the verification checks, the problems,
refusals, failures and conflicts - what `bindy-agent report` shows and the commit's note keeps."""

from __future__ import annotations

from agent.model.key import ObjectKey
from agent.outcome import report
from agent.plan.changes import Change, RRsetTarget
from agent.run.revisions import Snapshot
from agent.run.runoutcome import RunOutcome


def of_run(run_id: str, snap: Snapshot, result: RunOutcome, *, started_at: str, seconds: float,
           repeat: bool = False) -> report.Report:
    """`repeat`: the revision was applied before (what this run changed is drift, or the agent's own
    work)."""
    plan = result.plan
    zones = result.dns.zones if result.dns else []
    # a zone that stopped part-way serves the RRset changes of the batches before: applied, not
    # failed
    landed = {z.name: {(c.key, c.after) for c in z.written} for z in zones if z.written}

    def wrote(change: Change) -> bool:
        t = change.target
        return (isinstance(t, RRsetTarget)
                and ((t.name, t.rtype), change.new) in landed.get(t.zone, set()))

    changes = plan.changes if plan and not plan.refusals else []
    # the zones planned again: their second plan's changes,
    if changes and result.replan is not None:
        # after what the first round wrote of them
        again = {zp.name for zp in result.replan.zones or []}
        earlier = [c for c in changes if getattr(c.target, "zone", None) in again and wrote(c)]
        shown = {(c.target, c.new) for c in earlier}  # RRsets (or None): hashable
        changes = ([c for c in changes if getattr(c.target, "zone", None) not in again] + earlier
                   + [c for c in result.replan.changes
                      if not (wrote(c) and (c.target, c.new) in shown)])
    failed = {z.name: z.primary_error or z.refused or z.stale for z in zones}
    kube_failed = {str(k): m for k, m in (result.kube.failed.items() if result.kube else [])}
    items = []
    for change in changes:
        item = change.as_dict()
        target = item["target"]
        if item["layer"] == "kubernetes":
            key = ObjectKey(target["kind"], target["namespace"], target["name"])
            error = kube_failed.get(str(key))
        else:
            error = None if wrote(change) else failed.get(target["zone"])
        item["result"] = f"failed: {error}" if error else "applied"
        items.append(item)
    checks = [{"server": c.server, "name": c.name, "type": c.rtype, "ok": c.ok} for z in zones
              for c in z.checks]
    waiting = sorted({why for zp in (plan.zones or [] if plan is not None else [])
                      for why in zp.waiting.values()})
    return report.Report(run_id, snap.revision, result.outcome, snap.commit, started_at, seconds,
                         items, result.problems, checks, result.refusals, result.failures,
                         conflicts=result.conflicts, waiting=waiting, again=repeat)
