"""The safety gate: refuses plans that would delete too much or change a zone's apex NS (pure).

A plan deleting more than a threshold share of a zone's managed RRsets (only for zones with at
least `min_managed`) or changing the apex NS set is refused unless forced, with the counts and how
to force it in the refusal.
"""

from __future__ import annotations

from agent.model.names import FORCE_ANNOTATION, THRESHOLD_ANNOTATION
from agent.plan.rrsetdiff import Key, ZonePlan

DELETE_THRESHOLD = 0.30
MIN_MANAGED = 10


def gate(plan: ZonePlan, managed: set[Key], *, force: bool = False, annotations: dict[str, str] | None = None,
         threshold: float = DELETE_THRESHOLD, min_managed: int = MIN_MANAGED) -> str | None:
    """None if the plan may go ahead, else the refusal: zone, counts, threshold and how to force."""
    annotations = annotations or {}
    if force or annotations.get(FORCE_ANNOTATION, "").lower() == "true":
        return None
    if THRESHOLD_ANNOTATION in annotations:
        try:
            threshold = int(annotations[THRESHOLD_ANNOTATION]) / 100
        except ValueError:
            return (f"zone {plan.zone}: annotation {THRESHOLD_ANNOTATION} must be a whole percentage, "
                    f"got {annotations[THRESHOLD_ANNOTATION]!r}")
    how = (f"force it with `--force`, or for this zone annotate its DNSZone with {FORCE_ANNOTATION}: \"true\" "
           f"(or raise {THRESHOLD_ANNOTATION})")
    apex_ns = [c for c in plan.changes if c.key == (plan.zone, "NS")]
    if apex_ns:
        return f"zone {plan.zone}: refusing to change the apex NS set ({apex_ns[0].action}); {how}"
    deletes = sum(1 for c in plan.changes if c.action == "delete")
    if len(managed) >= min_managed and deletes > threshold * len(managed):
        share = 100 * deletes / len(managed)
        return (f"zone {plan.zone}: refusing to delete {deletes} of {len(managed)} managed RRsets ({share:.0f}%); "
                f"the limit is {threshold * 100:.0f}% for zones with at least {min_managed} managed RRsets; {how}")
    return None
