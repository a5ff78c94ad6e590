"""Renders a Plan for people and machines: text, JSON (format version 1) and Markdown."""

from __future__ import annotations

import json

from agent.plan.model import FORMAT_VERSION, LAYERS, SYMBOL, Action, Change, Plan, RRsetTarget, ZoneTarget


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
