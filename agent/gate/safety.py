"""The safety gate: every refusal of a dangerous plan, decided on the whole revision before any
write.

    per zone       deleting more than a threshold share of its managed RRsets (zones with at least
                   `min_managed`; every RRset counts, glue too, except the apex NS set), or deleting
                   its apex NS set (a zone must keep at least one name server)
    whole zones    a zone leaving every server counts as deleting all its managed RRsets
    Kubernetes     pruning more than a threshold share of the objects the agent manages

Any refusal refuses the whole revision: nothing is applied. Each refusal says the counts, the
limit and how the operator allows it: `--force` (everything), `--allow-prune` (Kubernetes prunes),
`--delete-threshold-percent` (the share of a zone's RRsets a plan may delete). An edit of the apex
NS set that leaves at least one name server is a declared change (the DNSZone's `nameServers`, or
NSRecords at the apex), applied like any other; so is an edit of the glue. The gate is the
operator's: a repository can only make it stricter. A DNSZone's delete-threshold-percent annotation
counts only where it is lower than the operator's threshold (for a zone that left Git, the one it
had when last applied); allow-unsafe-plan relaxes nothing (agent/desired/overrides.py warns about
both).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from agent.desired import overrides
from agent.model.findings import Refusal
from agent.model.names import DEFAULT_DELETE_THRESHOLD, THRESHOLD_ANNOTATION
from agent.model.ownership import Key
from agent.plan import zoneplan
from agent.plan.changes import Plan
from agent.plan.zoneplan import ZonePlan

DELETE_THRESHOLD = DEFAULT_DELETE_THRESHOLD
MIN_MANAGED = 10
PRUNE_THRESHOLD = 0.30
PRUNE_MIN = 10


@dataclasses.dataclass(frozen=True)
class Policy:
    force: bool = False  # allow everything the gate would refuse
    allow_prune: bool = False  # allow large Kubernetes prunes
    delete_threshold: float = DELETE_THRESHOLD
    min_managed: int = MIN_MANAGED
    prune_threshold: float = PRUNE_THRESHOLD
    prune_min: int = PRUNE_MIN

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Policy:
        """The operator's gate from values named as `run`'s settings and `sync`'s flags are:
        `force`, `allow_prune`, `delete_threshold_percent` (None or absent: the default)."""
        percent = values.get("delete_threshold_percent")
        return cls(force=bool(values.get("force")), allow_prune=bool(values.get("allow_prune")),
                   delete_threshold=DELETE_THRESHOLD if percent is None else percent / 100)


FORCE_HOW = ("the operator can allow it for one run with `bindy-agent sync --force` (for "
             "`bindy-agent run`: the setting force, --force or BINDY_AGENT_FORCE=true); a DNSZone "
             "annotation cannot relax the gate")


THRESHOLD_HOW = (f"{FORCE_HOW}, or raise the agent's delete threshold (--delete-threshold-percent, "
                 "BINDY_AGENT_DELETE_THRESHOLD_PERCENT)")


def _threshold(zone: str, annotations: dict[str, str], default: float) -> tuple[float, str | None]:
    """The operator's threshold, or the zone's annotation where it is stricter (lower)."""
    if THRESHOLD_ANNOTATION not in annotations:
        return default, None
    percent = overrides.percent(annotations[THRESHOLD_ANNOTATION])
    if percent is None:
        return default, (f"zone {zone}: annotation {THRESHOLD_ANNOTATION} must be a whole "
                         f"percentage from 0 to 100, got {annotations[THRESHOLD_ANNOTATION]!r}")
    return min(default, percent / 100), None


def records_refusal(zone: str, plan: zoneplan.RRsetPlan, managed: set[Key],
                    annotations: dict[str, str], policy: Policy) -> str | None:
    """None if one primary's RRset plan may go ahead, else why not. Every managed RRset counts
    against the delete threshold, glue too, except the apex NS set: deleting it is refused on its
    own."""
    if not plan.changes and THRESHOLD_ANNOTATION not in annotations:
        return None  # most zones of most runs: nothing to refuse (a bad threshold is refused below)
    if policy.force:
        return None
    threshold, bad = _threshold(zone, annotations, policy.delete_threshold)
    if bad:
        return bad
    if any(c.key == (zone, "NS") and c.action == "delete" for c in plan.changes):
        return (f"zone {zone}: refusing to delete the apex NS set: the zone would have no name "
                f"server; {FORCE_HOW}")
    counted = managed - {(zone, "NS")}
    deletes = sum(1 for c in plan.changes if c.action == "delete")
    if len(counted) >= policy.min_managed and deletes > threshold * len(counted):
        share = 100 * deletes / len(counted)
        return (f"zone {zone}: refusing to delete {deletes} of {len(counted)} managed RRsets "
                f"({share:.0f}%); the limit is {threshold * 100:.0f}% for zones with at least "
                f"{policy.min_managed} managed RRsets; {THRESHOLD_HOW}")
    return None


def zone_refusal(zp: ZonePlan, policy: Policy) -> str | None:
    if zp.removed_everywhere and zp.deletes:
        if policy.force:
            return None
        count = len(zp.managed_before)
        threshold, _ = _threshold(zp.name, zp.annotations, policy.delete_threshold)
        if count >= policy.min_managed and threshold < 1.0:  # the whole zone: 100% of its RRsets
            where = "it left Git" if zp.zone is None else "it no longer selects any instance"
            return (f"zone {zp.name}: refusing to delete the whole zone from {len(zp.deletes)} "
                    f"server(s) ({where}): that deletes all {count} managed RRsets; {FORCE_HOW}")
        return None
    for plan in zp.records.values():
        refusal = records_refusal(zp.name, plan, zp.managed_before, zp.annotations, policy)
        if refusal:
            return refusal
    return None


def prune_refusal(plan: Plan, policy: Policy) -> str | None:
    deletes = [c for c in plan.kube or [] if c.action == "delete"]
    managed = plan.kube_managed
    if policy.force or policy.allow_prune or managed < policy.prune_min:
        return None
    if len(deletes) > policy.prune_threshold * managed:
        kinds = sorted({c.key.kind for c in deletes})
        return (f"Kubernetes: refusing to delete {len(deletes)} of the {managed} objects the agent "
                f"manages ({100 * len(deletes) / managed:.0f}%: {', '.join(kinds)}); the limit is "
                f"{policy.prune_threshold * 100:.0f}% when it manages at least {policy.prune_min}; "
                "allow it with `--allow-prune` (or `--force`)")
    return None


def _may_refuse(zp: ZonePlan) -> bool:
    """Not a zone plan found in sync before (nothing to write or delete: only a malformed threshold
    annotation could refuse it, and that is looked at every time)."""
    return not zp.in_sync or THRESHOLD_ANNOTATION in zp.annotations


def check(plan: Plan, policy: Policy) -> list[Refusal]:
    """Every reason to refuse this plan (empty: it may be applied); agent/gate/verdict.py `approve`
    is how a plan is gated."""
    refusals = [Refusal(zp.name, r) for zp in plan.zones or [] if _may_refuse(zp)
                and (r := zone_refusal(zp, policy))]
    prune = prune_refusal(plan, policy)
    return refusals + ([Refusal(None, prune)] if prune else [])
