"""Renders a Plan for people and machines: text, JSON (format version 1) and Markdown.

Markdown is meant to be pasted as a pull-request comment: it fits GitHub's 65,536-character limit
(`MARKDOWN_LIMIT`). The summary and every count are always shown; when the tables do not fit, each
is cut to the same number of rows and ends with "... and N more".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from agent.model import printable
from agent.model.problems import Problem, Severity
from agent.plan.model import FORMAT_VERSION, LAYERS, SYMBOL, Action, Change, KubeTarget, Plan, RRsetTarget, ZoneTarget

MARKDOWN_LIMIT = 65_536  # GitHub's limit on a comment's body, in characters
SHOWN_FIELDS = 3  # changed fields shown with their values in a Markdown row


def _summary_line(plan: Plan) -> str:
    s = plan.summary
    return f"Plan: {s['create']} to create, {s['update']} to update, {s['delete']} to delete."


def _closing_line(plan: Plan) -> str:
    """The last line of a text plan: the totals, never "matches" when part of the world was not seen."""
    missing = len(plan.unplanned)
    if plan.changes:
        return _summary_line(plan) + (f" ({missing} not observed, see above.)" if missing else "")
    if missing:
        return (f"No changes planned, but {missing} zones could not be observed on their servers (above): the "
                "world may still differ from the revision.")
    if plan.base is not None:
        return "No changes: the head does exactly what the base does."
    return "No changes: the world matches the revision."


def _label(plan: Plan, revision: str | None) -> str:
    return plan.labels.get(revision or "", revision or "")


def _short(values: list[str], width: int) -> str:
    return ", ".join(v if len(v) <= width else v[:width - 3] + "..." for v in values)


def _detail(change: Change) -> str:
    if isinstance(change.target, RRsetTarget):
        data = change.after or change.before or {}
        line = f"{data.get('ttl', '')} {change.target.rtype} {_short(data.get('values', []), 60)}"
        if change.action is Action.UPDATE and change.before:
            line += f"  (was {change.before.get('ttl')} {_short(change.before.get('values', []), 40)})"
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
        return [f"Base: {_label(plan, plan.base)}", f"Head: {_label(plan, plan.revision)}", ""]
    return [f"Revision: {plan.revision}", ""] if plan.revision else []


def render_text(plan: Plan) -> str:
    lines = _heading_lines(plan)
    for layer, title in LAYERS:
        changes = [c for c in plan.changes if c.target.layer == layer]
        if not changes:
            continue
        lines.append(f"{title} ({len(changes)}):")
        zone = None
        for c in changes:
            if isinstance(c.target, RRsetTarget):
                if c.target.zone != zone:
                    zone = c.target.zone
                    lines.append(f"  {zone}")
                lines.append(f"    {SYMBOL[c.action]} {c.target.name} {_detail(c)}")
            else:
                detail = _detail(c)
                lines.append(f"  {SYMBOL[c.action]} {c.target}" + (f"  {detail}" if detail else ""))
        lines.append("")
    if plan.conflicts:
        lines.append(f"Conflicts ({len(plan.conflicts)}), left untouched:")
        lines += [f"  ! {c}" for c in plan.conflicts] + [""]
    if plan.unplanned:
        lines.append(f"Not observed ({len(plan.unplanned)}), so nothing is planned there:")
        lines += [f"  ? {u}" for u in plan.unplanned] + [""]
    if plan.refusals:
        lines.append(f"The safety gate refuses this plan ({len(plan.refusals)}); a sync would apply nothing:")
        lines += [f"  ! {r}" for r in plan.refusals] + [""]
    lines += [f"Note: {n}" for n in plan.notes]
    lines.append(_closing_line(plan))
    return "\n".join(printable.line(line) for line in lines) + "\n"  # each line one line, shown as written


def _problem_dicts(plan: Plan) -> list[dict[str, Any]]:
    if plan.base is None:
        return [p.as_dict() for p in plan.problems]
    return ([{**p.as_dict(), "revision": "base"} for p in plan.base_problems]
            + [{**p.as_dict(), "revision": "head"} for p in plan.problems])


def render_json(plan: Plan) -> str:
    doc: dict[str, Any] = {
        "formatVersion": FORMAT_VERSION,
        "revision": plan.revision,
        "summary": plan.summary,
        "changes": [c.as_dict() for c in plan.changes],
        "conflicts": plan.conflicts,
        "problems": _problem_dicts(plan),
    }
    if plan.base is not None:
        doc["base"] = plan.base
    optional = (("refusals", plan.refusals), ("unplanned", plan.unplanned), ("invalid", list(plan.invalid)))
    doc.update({key: value for key, value in optional if value})
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


# -- Markdown ------------------------------------------------------------------------------------
# Everything a revision wrote (names, values, field paths, messages, labels) is shown in code spans:
# there a CommonMark renderer (GitHub's is cmark-gfm) makes no link, autolink, emphasis or HTML, and
# escapes `<`, `>` and `&` itself, so `[x](https://evil)`, `<img src=x onerror=...>` and `<details>`
# are shown as written. Only the agent's own words are Markdown.
_BACKTICKS = re.compile("`+")


def _code(text: str, *, cell: bool = False) -> str:
    """`text` as inline code shown exactly as written, on one line (controls and newlines escaped). Its
    fence is longer than any run of backticks inside; a space pads text that starts or ends with a
    backtick or a space (CommonMark strips one from each side). In a table `cell`, every `|` is escaped:
    GFM splits cells on it even inside code, and takes the backslash away again."""
    text = printable.line(text)
    if not text:
        return ""
    if cell:
        text = text.replace("|", "\\|")
    if "`" not in text:  # the usual case
        return f"` {text} `" if text[0] == " " == text[-1] and text.strip(" ") else f"`{text}`"
    fence = "`" * (max(map(len, _BACKTICKS.findall(text))) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return fence + pad + text + pad + fence


def _cell(text: str) -> str:
    return _code(text, cell=True)


def _lookup(body: Any, path: str) -> Any:
    """The value at a field path such as `spec.ipv4Addresses[0]` (keys may hold dots, e.g. labels)."""
    if not path:
        return body
    if path.startswith("[") and isinstance(body, list):
        end = path.index("]")
        index = int(path[1:end])
        return _lookup(body[index], path[end + 1:].lstrip(".")) if index < len(body) else _MISSING
    if isinstance(body, dict):
        for key in sorted((k for k in body if path == k or path.startswith((k + ".", k + "["))), key=len,
                          reverse=True):
            return _lookup(body[key], path[len(key):].lstrip("."))
    return _MISSING


_MISSING = object()


def _value(value: Any) -> str:
    if value is _MISSING:
        return "(unset)"
    text = json.dumps(value, separators=(", ", ": "))
    return text if len(text) <= 60 else text[:57] + "..."


def _kube_detail(change: Change) -> str:
    """An update of a Kubernetes object with its first fields' old and new values."""
    if change.action is not Action.UPDATE or change.before is None or change.after is None:
        return _cell(_detail(change))
    shown = [f"{_cell(f)}: {_cell(_value(_lookup(change.before, f)))} → {_cell(_value(_lookup(change.after, f)))}"
             for f in change.fields[:SHOWN_FIELDS]]
    more = len(change.fields) - SHOWN_FIELDS
    return "<br>".join(shown + ([f"and {more} more fields"] if more > 0 else []))


def _row(change: Change) -> str:
    if isinstance(change.target, RRsetTarget):
        target, detail = f"{change.target.zone} {change.target}", _cell(_detail(change))
    else:
        target = str(change.target)
        detail = _kube_detail(change) if isinstance(change.target, KubeTarget) else _cell(_detail(change))
    return f"| {SYMBOL[change.action]} | {_cell(target)} | {detail} |"


Section = tuple[list[str], list[str], Callable[[int], str]]  # heading lines, item lines, "... and N more"


def _sections(plan: Plan) -> list[Section]:
    out: list[Section] = []
    table = ["| | target | detail |", "|---|---|---|"]
    for layer, title in LAYERS:
        changes = [c for c in plan.changes if c.target.layer == layer]
        if changes:
            out.append(([f"### {title} ({len(changes)})", "", *table], [_row(c) for c in changes],
                        lambda n: f"| | ... and {n:,} more | |"))
    bullets: list[tuple[str, list[str]]] = [
        (f"### The safety gate would refuse this plan ({len(plan.refusals)}): a sync applies nothing",
         [f"- {_code(r)}" for r in plan.refusals]),
        (f"### Conflicts, left untouched ({len(plan.conflicts)})", [f"- {_code(c)}" for c in plan.conflicts]),
        (f"### Not observed ({len(plan.unplanned)})", [f"- {_code(u)}" for u in plan.unplanned]),
    ]
    bullets += _problem_sections(plan)
    out += [([title, ""], items, lambda n: f"- ... and {n:,} more") for title, items in bullets if items]
    return out


def _problem_sections(plan: Plan) -> list[tuple[str, list[str]]]:
    def group(items: list[Problem], where: str) -> list[tuple[str, list[str]]]:
        errors = [p for p in items if p.severity is Severity.ERROR]
        warnings = [p for p in items if p.severity is Severity.WARNING]
        return [(f"### Errors{where} ({len(errors)})", [f"- {_code(str(p))}" for p in errors]),
                (f"### Warnings{where} ({len(warnings)})", [f"- {_code(str(p))}" for p in warnings])]
    if plan.base is None:
        return group(plan.problems, "")
    base = group(plan.base_problems, " in the base") if "base" in plan.invalid else []
    return group(plan.problems, " in the head") + base


def _markdown_head(plan: Plan) -> list[str]:
    lines = ["## bindy-agent plan", ""]
    if plan.base is not None:
        lines += [f"Changes from base {_code(_label(plan, plan.base))} to head {_code(_label(plan, plan.revision))}",
                  ""]
    elif plan.revision:
        lines += [f"Revision {_code(plan.revision)}", ""]
    if plan.invalid:
        errors = {"base": plan.base_problems, "head": plan.problems, "revision": plan.problems}
        counts = ", ".join(f"{what} has {sum(p.severity is Severity.ERROR for p in errors[what])} errors"
                           for what in plan.invalid)
        return lines + [f"**Not planned: the {counts}.** Nothing can be applied until they are fixed.", ""]
    return lines + [f"**{_summary_line(plan)}**", ""]


def _assemble(head: list[str], sections: list[Section], rows: int) -> tuple[str, bool]:
    lines, cut = list(head), False
    for heading, items, more in sections:
        lines += heading + items[:rows]
        if len(items) > rows:
            lines.append(more(len(items) - rows))
            cut = True
        lines.append("")
    return "\n".join(lines), cut


def render_markdown(plan: Plan, *, limit: int = MARKDOWN_LIMIT) -> str:
    head, sections = _markdown_head(plan), _sections(plan)
    note = (f"\n_Cut to fit a {limit:,}-character comment: every count above is complete; "
            "`bindy-agent plan -o json` lists every change._\n")
    most = max((len(items) for _, items, _ in sections), default=0)
    text, _ = _assemble(head, sections, most)
    if len(text) <= limit:
        return text
    low, high = 0, most  # the most rows per section that fit, with the note
    while low < high:
        mid = (low + high + 1) // 2
        if len(_assemble(head, sections, mid)[0]) + len(note) <= limit:
            low = mid
        else:
            high = mid - 1
    return (_assemble(head, sections, low)[0] + note)[:limit]


RENDERERS: dict[str, Callable[[Plan], str]] = {"text": render_text, "json": render_json,
                                                "markdown": render_markdown}
