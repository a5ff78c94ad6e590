"""Plan: the pure difference between desired and observed state, and its renderers.

A `Change` is Create / Update / Delete of a typed target: a Kubernetes object, a zone on one
instance, or an RRset in a zone. Offline (`bindy-agent plan DIR`) the observed world is empty, so
the plan shows everything the revision would create. Secret values never appear: they render as
`<secret>`.

JSON output (`--output json`), format version 1:
    {"formatVersion": 1, "revision": str|null,
     "summary": {"create": n, "update": n, "delete": n},
     "changes": [{"action": "create"|"update"|"delete",
                  "layer": "kubernetes"|"zones"|"records",
                  "target": {...},   # kubernetes: kind, namespace, name
                                     # zones: zone, instance, role
                                     # records: zone, name, type
                  "before": {...}|null, "after": {...}|null,
                  "fields": [str],    # for updates: the changed field paths
                  "reason": str|null}],  # e.g. "drift: edited by hand"
     "conflicts": [str],  # objects with a desired name that the agent does not own
     "problems": [{"file", "line", "object", "path", "message", "severity"}]}
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections import Counter
from typing import TYPE_CHECKING, Any

from agent import kubediff, workloads
from agent.desired import Desired
from agent.problems import Problem

if TYPE_CHECKING:  # pragma: no cover - types only
    from agent.reconcile.dns import DnsResult

FORMAT_VERSION = 1


class Action(enum.StrEnum):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"


SYMBOL = {Action.CREATE: "+", Action.UPDATE: "~", Action.DELETE: "-"}


@dataclasses.dataclass(frozen=True)
class KubeTarget:
    kind: str
    namespace: str | None
    name: str
    layer = "kubernetes"

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


@dataclasses.dataclass(frozen=True)
class ZoneTarget:
    zone: str
    instance: str  # "namespace/name"
    role: str
    layer = "zones"

    def __str__(self) -> str:
        return f"{self.zone} on {self.instance} ({self.role})"


@dataclasses.dataclass(frozen=True)
class RRsetTarget:
    zone: str
    name: str
    rtype: str
    layer = "records"

    def __str__(self) -> str:
        return f"{self.name} {self.rtype}"


Target = KubeTarget | ZoneTarget | RRsetTarget
LAYERS = (("kubernetes", "Kubernetes objects"), ("zones", "Zones"), ("records", "Records"))


@dataclasses.dataclass(frozen=True)
class Change:
    action: Action
    target: Target
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    fields: tuple[str, ...] = ()
    reason: str = ""  # e.g. "drift: edited by hand"

    def as_dict(self) -> dict[str, Any]:
        target = dict(dataclasses.asdict(self.target).items())
        if isinstance(self.target, RRsetTarget):
            target["type"] = target.pop("rtype")
        return {"action": self.action.value, "layer": self.target.layer, "target": target,
                "before": self.before, "after": self.after, "fields": list(self.fields),
                "reason": self.reason or None}


@dataclasses.dataclass
class Plan:
    changes: list[Change]
    problems: list[Problem] = dataclasses.field(default_factory=list)
    revision: str | None = None
    conflicts: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def summary(self) -> dict[str, int]:
        counts = Counter(c.action for c in self.changes)
        return {a.value: counts.get(a, 0) for a in Action}

    @property
    def empty(self) -> bool:
        return not self.changes


def mask_secrets(body: dict[str, Any]) -> dict[str, Any]:
    """A copy of a Kubernetes object with every Secret value replaced by `<secret>`."""
    if body.get("kind") != "Secret":
        return body
    masked = dict(body)
    for field in ("data", "stringData"):
        if isinstance(body.get(field), dict):
            masked[field] = {k: workloads.SECRET_PLACEHOLDER for k in body[field]}
    return masked


def offline(desired: Desired, *, revision: str | None = None) -> Plan:
    """Desired against an empty world: every object, zone placement and RRset is a create."""
    changes: list[Change] = [
        Change(Action.CREATE, KubeTarget(o.key.kind, o.key.namespace, o.key.name), after=mask_secrets(o.body))
        for o in desired.objects
    ]
    for zone in desired.zones:
        primaries = [f"{k.namespace}/{k.name}" for k in zone.primaries]
        for role, keys in (("primary", zone.primaries), ("secondary", zone.secondaries)):
            for key in keys:
                after: dict[str, Any] = {"zoneType": role}
                if role == "secondary":
                    after["primaries"] = primaries
                changes.append(Change(Action.CREATE, ZoneTarget(zone.name, f"{key.namespace}/{key.name}", role),
                                      after=after))
    for zone in desired.zones:
        for rrset in sorted(zone.rrsets.values(), key=lambda r: (r.name.count("."), r.name, r.rtype)):
            changes.append(Change(Action.CREATE, RRsetTarget(zone.name, rrset.name, rrset.rtype),
                                  after={"ttl": rrset.ttl, "values": list(rrset.rdatas)}))
    return Plan(changes, list(desired.problems), revision)


def online_kube(desired: Desired, changes: list[kubediff.KubeChange], *, revision: str | None = None) -> Plan:
    """The Kubernetes layer of a plan against a live cluster (creates, updates, drift, deletes)."""
    out: list[Change] = []
    conflicts: list[str] = []
    for c in changes:
        target = KubeTarget(c.key.kind, c.key.namespace, c.key.name)
        if c.action == "conflict":
            conflicts.append(f"{target}: {c.reason}")
            continue
        reason = f"drift: {c.reason}" if c.drift else c.reason
        after = mask_secrets(c.desired.body) if c.desired is not None else None
        out.append(Change(Action(c.action), target, after=after, fields=c.fields, reason=reason))
    notes = ["DNS (zones and records) is not observed without zone endpoints; only the Kubernetes layer is planned."]
    return Plan(out, list(desired.problems), revision, conflicts, notes)


def _rrset_dict(rr: Any) -> dict[str, Any] | None:
    return None if rr is None else {"ttl": rr.ttl, "values": list(rr.rdatas)}


def online(desired: Desired, kube_changes: list[kubediff.KubeChange] | None, dns: DnsResult | None, *,
           revision: str | None = None) -> Plan:
    """A plan against the live world: the Kubernetes layer (if a cluster was given) and the DNS
    layer (if zone endpoints were given), as observed in this run."""
    result = online_kube(desired, kube_changes or [], revision=revision)
    if kube_changes is None:
        result.notes = ["Kubernetes is not observed without --kubeconfig; only DNS is planned."]
    if dns is None:
        return result
    result.notes = [n for n in result.notes if not n.startswith("DNS")]
    for zr in dns.zones:
        for inst in zr.created_on:
            role = "primary" if inst in zr.primaries else "secondary"
            result.changes.append(Change(Action.CREATE, ZoneTarget(zr.name, inst, role), after={"zoneType": role}))
        for c in zr.changes:
            name, rtype = c.key
            result.changes.append(Change(Action(c.action), RRsetTarget(zr.name, name, rtype),
                                         before=_rrset_dict(c.before), after=_rrset_dict(c.after)))
        result.conflicts += [f"{zr.name}: {c}" for c in zr.conflicts]
        result.notes += [f"refused: {zr.refused}"] if zr.refused else []
    for zone, inst in dns.deleted:
        result.changes.append(Change(Action.DELETE, ZoneTarget(zone, inst, "no longer selected")))
    return result


def _summary_line(plan: Plan) -> str:
    s = plan.summary
    return f"Plan: {s['create']} to create, {s['update']} to update, {s['delete']} to delete."


def _detail(change: Change) -> str:
    if isinstance(change.target, RRsetTarget):
        data = change.after or change.before or {}
        shown = ", ".join(v if len(v) <= 60 else v[:57] + "..." for v in data.get("values", []))
        line = f"{data.get('ttl', '')} {change.target.rtype} {shown}"
        if change.action is Action.UPDATE and change.before:
            was = ", ".join(v if len(v) <= 40 else v[:37] + "..." for v in change.before.get("values", []))
            line += f"  (was {change.before.get('ttl')} {was})"
        return line
    if isinstance(change.target, ZoneTarget) and change.after and change.after.get("primaries"):
        return "primaries: " + ", ".join(change.after["primaries"])
    parts = []
    if change.reason:
        parts.append(f"({change.reason})")
    if change.fields:
        parts.append("changed: " + ", ".join(change.fields))
    return " ".join(parts)


def render_text(plan: Plan) -> str:
    lines: list[str] = []
    if plan.revision:
        lines += [f"Revision: {plan.revision}", ""]
    for layer, title in LAYERS:
        changes = [c for c in plan.changes if c.target.layer == layer]
        if not changes:
            continue
        lines.append(f"{title} ({len(changes)}):")
        zone = None
        for c in changes:
            indent = "  "
            if isinstance(c.target, RRsetTarget):
                if c.target.zone != zone:
                    zone = c.target.zone
                    lines.append(f"  {zone}")
                indent = "    "
            detail = _detail(c)
            if isinstance(c.target, RRsetTarget):
                lines.append(f"{indent}{SYMBOL[c.action]} {c.target.name} {detail}")
            else:
                lines.append(f"{indent}{SYMBOL[c.action]} {c.target}" + (f"  {detail}" if detail else ""))
        lines.append("")
    if plan.conflicts:
        lines.append(f"Conflicts ({len(plan.conflicts)}), left untouched:")
        lines += [f"  ! {c}" for c in plan.conflicts] + [""]
    lines += [f"Note: {n}" for n in plan.notes]
    lines.append(_summary_line(plan) if plan.changes else "No changes: the world matches the revision.")
    return "\n".join(lines) + "\n"


def render_json(plan: Plan) -> str:
    doc = {
        "formatVersion": FORMAT_VERSION,
        "revision": plan.revision,
        "summary": plan.summary,
        "changes": [c.as_dict() for c in plan.changes],
        "conflicts": plan.conflicts,
        "problems": [p.as_dict() for p in plan.problems],
    }
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(plan: Plan) -> str:
    lines = ["## bindy-agent plan", ""]
    if plan.revision:
        lines += [f"Revision `{plan.revision}`", ""]
    lines += [f"**{_summary_line(plan)}**", ""]
    for layer, title in LAYERS:
        changes = [c for c in plan.changes if c.target.layer == layer]
        if not changes:
            continue
        lines += [f"### {title} ({len(changes)})", "", "| | target | detail |", "|---|---|---|"]
        for c in changes:
            target = f"{c.target.zone} {c.target}" if isinstance(c.target, RRsetTarget) else str(c.target)
            lines.append(f"| {SYMBOL[c.action]} | `{_md(target)}` | {_md(_detail(c))} |")
        lines.append("")
    if plan.conflicts:
        lines += ["### Conflicts (left untouched)", ""] + [f"- `{_md(c)}`" for c in plan.conflicts] + [""]
    warnings = list(plan.problems)
    if warnings:
        lines += ["### Warnings", ""] + [f"- `{_md(str(p))}`" for p in warnings] + [""]
    return "\n".join(lines)


RENDERERS = {"text": render_text, "json": render_json, "markdown": render_markdown}
