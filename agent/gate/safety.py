"""The safety gate: every refusal of a dangerous plan, decided on the whole revision before any write.

    per zone       deleting more than a threshold share of its managed RRsets (zones with at least
                   `min_managed`), or changing its apex NS set
    whole zones    a zone leaving every server counts as deleting all its managed RRsets
    Kubernetes     pruning more than a threshold share of the objects the agent manages

Any refusal refuses the whole revision: nothing is applied. Each refusal says the counts, the
limit and how to allow it: `--force` (everything), `--allow-prune` (Kubernetes prunes), or per
zone the DNSZone annotations allow-unsafe-plan / delete-threshold-percent (for a zone that left
Git, the annotations it had when last applied).
"""

from __future__ import annotations

import dataclasses

from agent.model.names import FORCE_ANNOTATION, THRESHOLD_ANNOTATION
from agent.model.ownership import Key
from agent.plan import rrsetdiff
from agent.plan.model import Plan
from agent.plan.zonediff import ZonePlan

DELETE_THRESHOLD = 0.30
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


def _how(zone: str) -> str:
    return (f"force it with `--force`, or for this zone annotate its DNSZone with {FORCE_ANNOTATION}: \"true\" "
            f"(or raise {THRESHOLD_ANNOTATION})")


def _threshold(zone: str, annotations: dict[str, str], default: float) -> tuple[float, str | None]:
    if THRESHOLD_ANNOTATION not in annotations:
        return default, None
    try:
        return int(annotations[THRESHOLD_ANNOTATION]) / 100, None
    except ValueError:
        return default, (f"zone {zone}: annotation {THRESHOLD_ANNOTATION} must be a whole percentage, "
                         f"got {annotations[THRESHOLD_ANNOTATION]!r}")


def records_refusal(zone: str, plan: rrsetdiff.RRsetPlan, managed: set[Key],
                    annotations: dict[str, str], policy: Policy) -> str | None:
    """None if one primary's RRset plan may go ahead, else why not (also used after a re-plan)."""
    if not plan.changes and THRESHOLD_ANNOTATION not in annotations:
        return None  # most zones of most runs: nothing to refuse (a bad threshold is refused below)
    if policy.force or annotations.get(FORCE_ANNOTATION, "").lower() == "true":
        return None
    threshold, bad = _threshold(zone, annotations, policy.delete_threshold)
    if bad:
        return bad
    apex_ns = [c for c in plan.changes if c.key == (zone, "NS")]
    if apex_ns:
        return f"zone {zone}: refusing to change the apex NS set ({apex_ns[0].action}); {_how(zone)}"
    deletes = sum(1 for c in plan.changes if c.action == "delete")
    if len(managed) >= policy.min_managed and deletes > threshold * len(managed):
        share = 100 * deletes / len(managed)
        return (f"zone {zone}: refusing to delete {deletes} of {len(managed)} managed RRsets ({share:.0f}%); "
                f"the limit is {threshold * 100:.0f}% for zones with at least {policy.min_managed} managed RRsets; "
                f"{_how(zone)}")
    return None


def zone_refusal(zp: ZonePlan, policy: Policy) -> str | None:
    if zp.removed_everywhere and zp.deletes:
        if policy.force or zp.annotations.get(FORCE_ANNOTATION, "").lower() == "true":
            return None
        count = len(zp.managed_before)
        threshold, _ = _threshold(zp.name, zp.annotations, policy.delete_threshold)
        if count >= policy.min_managed and threshold < 1.0:  # the whole zone: 100% of its RRsets
            where = "it left Git" if zp.zone is None else "it no longer selects any instance"
            return (f"zone {zp.name}: refusing to delete the whole zone from {len(zp.deletes)} server(s) ({where}): "
                    f"that deletes all {count} managed RRsets; force it with `--force`, or first annotate the DNSZone "
                    f"with {FORCE_ANNOTATION}: \"true\" in a commit of its own, then remove it")
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
        return (f"Kubernetes: refusing to delete {len(deletes)} of the {managed} objects the agent manages "
                f"({100 * len(deletes) / managed:.0f}%: {', '.join(kinds)}); the limit is "
                f"{policy.prune_threshold * 100:.0f}% when it manages at least {policy.prune_min}; allow it with "
                "`--allow-prune` (or `--force`)")
    return None


def _may_refuse(zp: ZonePlan) -> bool:
    """Not a zone plan found settled before (nothing to write or delete: only a malformed threshold
    annotation could refuse it, and that is looked at every time)."""
    return not zp.settled_once or THRESHOLD_ANNOTATION in zp.annotations


def check(plan: Plan, policy: Policy) -> list[str]:
    """Every reason to refuse this plan (empty: it may be applied)."""
    refusals = [r for zp in plan.zones or [] if _may_refuse(zp) and (r := zone_refusal(zp, policy))]
    prune = prune_refusal(plan, policy)
    return refusals + ([prune] if prune else [])
