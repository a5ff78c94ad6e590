"""The pure RRset plan of one zone, its ownership rules, and the safety gate (no I/O).

    desired   observed                 managed?   -> change
    present   absent                   -          -> create
    present   equal (values and TTL)   -          -> nothing (and from now on managed)
    present   different                yes        -> update
    present   different                no         -> conflict: someone else's data, left alone
    absent    present                  yes        -> delete
    absent    present                  no         -> nothing (e.g. an ACME challenge TXT)

The SOA, and the apex NS unless Git declares it, belong to the zone itself, not to records.
The gate refuses a plan that deletes more than a threshold share of a zone's managed RRsets (only
for zones with at least `min_managed`) or that changes the apex NS set, unless forced.
"""

from __future__ import annotations

import dataclasses

from agent.rrsets import RRset

Key = tuple[str, str]  # (absolute owner name, type)
DELETE_THRESHOLD = 0.30
MIN_MANAGED = 10
FORCE_ANNOTATION = "bindy.firestoned.io/allow-unsafe-plan"
THRESHOLD_ANNOTATION = "bindy.firestoned.io/delete-threshold-percent"


@dataclasses.dataclass(frozen=True)
class RRChange:
    action: str  # "create" | "update" | "delete"
    before: RRset | None
    after: RRset | None

    @property
    def key(self) -> Key:
        rr = self.after or self.before
        assert rr is not None
        return rr.key


@dataclasses.dataclass
class ZonePlan:
    zone: str
    changes: list[RRChange]
    conflicts: list[str]
    managed_after: set[Key]


def plan_zone(zone: str, desired: dict[Key, RRset], observed: dict[Key, RRset], managed: set[Key]) -> ZonePlan:
    changes: list[RRChange] = []
    conflicts: list[str] = []
    after: set[Key] = set()
    for key in sorted(desired):
        want, have = desired[key], observed.get(key)
        if have is None:
            changes.append(RRChange("create", None, want))
            after.add(key)
        elif have.rdatas == want.rdatas and have.ttl == want.ttl:
            after.add(key)
        elif key in managed:
            changes.append(RRChange("update", have, want))
            after.add(key)
        else:
            conflicts.append(f"{key[0]} {key[1]}: exists with data the agent did not write "
                             f"({', '.join(have.rdatas)}); not overwritten")
    for key in sorted(managed - set(desired)):
        if key in observed:
            changes.append(RRChange("delete", observed[key], None))
    return ZonePlan(zone, changes, conflicts, after)


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
