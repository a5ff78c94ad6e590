"""The text plan, for a terminal: produced line by line, so a plan of 100,000 changes is written as
it is rendered and never held as one string.

Every line goes through `printable.line`: a name or value a revision wrote is shown as written, one
line each, never as terminal control. `detail`, `summary_line` and `label` are shared with the
Markdown plan.
"""

from __future__ import annotations

from collections.abc import Iterator

from agent.model import printable
from agent.plan.changes import LAYERS, SYMBOL, Action, Change, Plan, RRsetTarget, ZoneTarget


def summary_line(plan: Plan) -> str:
    s = plan.summary
    return f"Plan: {s['create']} to create, {s['update']} to update, {s['delete']} to delete."


def _closing_line(plan: Plan) -> str:
    """The last line of a text plan: the totals, never "matches" when part of the world was not
    seen."""
    missing = len(plan.unplanned)
    if plan.changes:
        return summary_line(plan) + (f" ({missing} not observed, see above.)" if missing else "")
    if missing:
        return (f"No changes planned, but {missing} zones could not be observed on their servers "
                "(above): the world may still differ from the revision.")
    if plan.base is not None:
        return "No changes: the head does exactly what the base does."
    return "No changes: the world matches the revision."


def label(plan: Plan, revision: str | None) -> str:
    return plan.labels.get(revision or "", revision or "")


def _short(values: list[str], width: int) -> str:
    return ", ".join(v if len(v) <= width else v[:width - 3] + "..." for v in values)


def detail(change: Change) -> str:
    """What a change does, on one line (an RRset's TTL, type and values; a zone's primaries;
    why)."""
    if isinstance(change.target, RRsetTarget):
        data = change.after or change.before or {}
        line = f"{data.get('ttl', '')} {change.target.rtype} {_short(data.get('values', []), 60)}"
        if change.action is Action.UPDATE and change.before:
            line += (f"  (was {change.before.get('ttl')} "
                     f"{_short(change.before.get('values', []), 40)})")
        return line
    if isinstance(change.target, ZoneTarget) and change.after and change.after.get("primaries"):
        return "primaries: " + ", ".join(change.after["primaries"])
    parts = []
    if change.reason:
        parts.append(f"({change.reason})")
    if change.fields:
        parts.append("changed: " + ", ".join(change.fields))
    return " ".join(parts)


def _heading_lines(plan: Plan) -> list[str]:
    if plan.base is not None:
        return [f"Base: {label(plan, plan.base)}", f"Head: {label(plan, plan.revision)}", ""]
    return [f"Revision: {plan.revision}", ""] if plan.revision else []


def _layer_lines(plan: Plan, layer: str, title: str) -> Iterator[str]:
    count = sum(1 for c in plan.changes if c.target.layer == layer)
    if not count:
        return
    yield f"{title} ({count}):"
    zone = None
    for c in plan.changes:
        if c.target.layer != layer:
            continue
        if isinstance(c.target, RRsetTarget):
            if c.target.zone != zone:
                zone = c.target.zone
                yield f"  {zone}"
            yield f"    {SYMBOL[c.action]} {c.target.name} {detail(c)}"
        else:
            shown = detail(c)
            yield f"  {SYMBOL[c.action]} {c.target}" + (f"  {shown}" if shown else "")
    yield ""


def _lines(plan: Plan) -> Iterator[str]:
    yield from _heading_lines(plan)
    for layer, title in LAYERS:
        yield from _layer_lines(plan, layer, title)
    if plan.conflicts:
        yield f"Conflicts ({len(plan.conflicts)}), left untouched:"
        yield from (f"  ! {c}" for c in plan.conflicts)
        yield ""
    if plan.unplanned:
        yield f"Not observed ({len(plan.unplanned)}), so nothing is planned there:"
        yield from (f"  ? {u}" for u in plan.unplanned)
        yield ""
    if plan.refusals:
        yield (f"The safety gate refuses this plan ({len(plan.refusals)}); a sync would apply "
               f"nothing:")
        yield from (f"  ! {r}" for r in plan.refusals)
        yield ""
    yield from (f"Note: {n}" for n in plan.notes)
    yield _closing_line(plan)


def pieces(plan: Plan) -> Iterator[str]:
    """The text plan, one line at a time (each ends with a newline; each line one line, shown as
    written)."""
    for line in _lines(plan):
        yield printable.line(line) + "\n"
