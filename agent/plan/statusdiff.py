"""Whether a CR's wanted status differs from its live one, and keeping transition times (pure).

A status is written only when it differs from the live one (seeds/002's status-update
optimisation): a condition keeps its `lastTransitionTime` unless its status flipped.
"""

from __future__ import annotations

from typing import Any

from agent.model.key import ObjectKey

# once on every CR; now only where agent/outcome/status.py puts it
DROPPED = ("lastAppliedRevision",)


def _strip_times(status: dict[str, Any]) -> dict[str, Any]:
    copy = dict(status)
    copy["conditions"] = [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                          for c in status.get("conditions") or []]
    if "bind9Instances" in status:
        copy["bind9Instances"] = [{k: v for k, v in i.items() if k != "lastReconciledAt"
                                   and v is not None}
                                  for i in status.get("bind9Instances") or []]
    return copy


def merge_times(new: dict[str, Any], live: dict[str, Any] | None, now: str) -> dict[str, Any]:
    """Gives each new condition its old transition time when its status did not change, and each
    zone instance its old lastReconciledAt when its state did not change."""
    old = {c.get("type"): c for c in (live or {}).get("conditions") or []}
    conds = []
    for c in new.get("conditions", []):
        prev = old.get(c["type"])
        kept = (prev.get("lastTransitionTime") if prev and prev.get("status") == c["status"]
                else None)
        conds.append({**c, "lastTransitionTime": kept or now})
    merged = {**new, "conditions": conds}
    if "bind9Instances" in new:
        before = {(i.get("namespace"), i.get("name")): i for i in (live or {}).get("bind9Instances")
                  or []}
        items = []
        for item in new["bind9Instances"]:
            item = {k: v for k, v in item.items() if v is not None}
            prev = before.get((item["namespace"], item["name"]))
            same = (prev and prev.get("status") == item["status"]
                    and prev.get("message") == item.get("message"))
            items.append({**item,
                          "lastReconciledAt": prev.get("lastReconciledAt") if same and prev
                          else now})
        merged["bind9Instances"] = items
    return merged


def changed(new: dict[str, Any], live: dict[str, Any] | None) -> bool:
    """True if writing `new` would change anything the agent owns in the live status."""
    if not live:
        return True
    want, have = _strip_times(new), _strip_times(live)
    # fields the agent no longer sets there
    dropped = any(k in have and k not in want for k in DROPPED)
    return dropped or any(have.get(k) != v for k, v in want.items())


# the CR, the status to write, the live one
StatusWrite = tuple[ObjectKey, dict[str, Any], dict[str, Any]]


def to_write(wanted: dict[ObjectKey, dict[str, Any]], live: dict[ObjectKey, dict[str, Any]],
             skip: set[ObjectKey], now: str) -> list[StatusWrite]:
    """The statuses that differ from the live ones, with their transition times kept (`skip`: CRs
    the agent does not own, e.g. same-named objects in conflict)."""
    todo = []
    for key, new in wanted.items():
        current = live.get(key)
        if current is None or key in skip:
            continue
        old = current.get("status")
        if changed(new, old):
            todo.append((key, merge_times(new, old, now), old or {}))
    return todo


def rejection_marks(served: list[dict[str, Any]], *, reason: str, message: str, now: str,
                    ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """After an invalid or refused revision, each live CR keeps its state (the last good revision
    keeps serving) and gains `Progressing=False` with `reason` and why: (the CR, its new status),
    for the CRs whose status that changes."""
    marks = []
    for live in served:
        old = live.get("status") or {}
        mark = {"type": "Progressing", "status": "False", "reason": reason, "message": message}
        new = _with_progressing(old, mark)
        if changed(new, old):
            marks.append((live, merge_times(new, old, now)))
    return marks


REJECTION_REASONS = ("RevisionRejected", "PlanRefused")


def keep_rejection(wanted: dict[ObjectKey, dict[str, Any]], live: dict[ObjectKey, dict[str, Any]],
                   ) -> dict[ObjectKey, dict[str, Any]]:
    """The statuses of a run that reconciles the revision that serves while the head is rejected:
    each keeps the head's rejection mark (`rejection_marks`) its live status carries, until a good
    head."""
    out = {}
    for key, new in wanted.items():
        conds = ((live.get(key) or {}).get("status") or {}).get("conditions") or []
        mark = next((c for c in conds if c.get("type") == "Progressing"
                     and c.get("status") == "False"
                     and c.get("reason") in REJECTION_REASONS), None)
        out[key] = new if mark is None else _with_progressing(new, mark)
    return out


def _with_progressing(status: dict[str, Any], condition: dict[str, Any]) -> dict[str, Any]:
    """`status` with `condition` as its one Progressing condition (a rejection mark), last."""
    conds = [c for c in status.get("conditions") or [] if c.get("type") != "Progressing"]
    return {**status, "conditions": [*conds, condition]}
