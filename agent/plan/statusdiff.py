"""Whether a CR's wanted status differs from its live one, and keeping transition times (pure).

A status is written only when it differs from the live one (seeds/002's status-update
optimisation): a condition keeps its `lastTransitionTime` unless its status flipped.
"""

from __future__ import annotations

from typing import Any

DROPPED = ("lastAppliedRevision",)  # once on every CR; now only where agent/outcome/status.py puts it


def _strip_times(status: dict[str, Any]) -> dict[str, Any]:
    copy = dict(status)
    copy["conditions"] = [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                          for c in status.get("conditions") or []]
    if "bind9Instances" in status:
        copy["bind9Instances"] = [{k: v for k, v in i.items() if k != "lastReconciledAt" and v is not None}
                                  for i in status.get("bind9Instances") or []]
    return copy


def merge_times(new: dict[str, Any], live: dict[str, Any] | None, now: str) -> dict[str, Any]:
    """Gives each new condition its old transition time when its status did not change, and each
    zone instance its old lastReconciledAt when its state did not change."""
    old = {c.get("type"): c for c in (live or {}).get("conditions") or []}
    conds = []
    for c in new.get("conditions", []):
        prev = old.get(c["type"])
        kept = prev.get("lastTransitionTime") if prev and prev.get("status") == c["status"] else None
        conds.append({**c, "lastTransitionTime": kept or now})
    merged = {**new, "conditions": conds}
    if "bind9Instances" in new:
        before = {(i.get("namespace"), i.get("name")): i for i in (live or {}).get("bind9Instances") or []}
        items = []
        for item in new["bind9Instances"]:
            item = {k: v for k, v in item.items() if v is not None}
            prev = before.get((item["namespace"], item["name"]))
            same = prev and prev.get("status") == item["status"] and prev.get("message") == item.get("message")
            items.append({**item, "lastReconciledAt": prev.get("lastReconciledAt") if same and prev else now})
        merged["bind9Instances"] = items
    return merged


def changed(new: dict[str, Any], live: dict[str, Any] | None) -> bool:
    """True if writing `new` would change anything the agent owns in the live status."""
    if not live:
        return True
    want, have = _strip_times(new), _strip_times(live)
    dropped = any(k in have and k not in want for k in DROPPED)  # fields the agent no longer sets there
    return dropped or any(have.get(k) != v for k, v in want.items())
