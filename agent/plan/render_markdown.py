"""The Markdown plan, meant to be pasted as a pull-request comment.

It fits GitHub's 65,536-character limit (`MARKDOWN_LIMIT`). The summary and every count are always
shown; when the tables do not fit, each is cut to the same number of rows (the most that fit) and
ends with "... and N more". Rows are rendered lazily and only as far as the limit can reach: a plan
of 100,000 changes renders about as many rows as fit in one comment, never all of them.

Everything a revision wrote (names, values, field paths, messages, labels) is shown in code spans:
there a CommonMark renderer (GitHub's is cmark-gfm) makes no link, autolink, emphasis or HTML, and
escapes `<`, `>` and `&` itself, so `[x](https://evil)`, `<img src=x onerror=...>` and `<details>`
are shown as written. Only the agent's own words are Markdown.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from agent.model import printable
from agent.model.problems import Problem, Severity
from agent.plan.changes import LAYERS, SYMBOL, Action, Change, KubeTarget, Plan, RRsetTarget
from agent.plan.render_text import detail, label, summary_line

MARKDOWN_LIMIT = 65_536  # GitHub's limit on a comment's body, in characters
SHOWN_FIELDS = 3  # changed fields shown with their values in a Markdown row
_BACKTICKS = re.compile("`+")


def code(text: str, *, cell: bool = False) -> str:
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
    return code(text, cell=True)


_MISSING = object()


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


def _value(value: Any) -> str:
    if value is _MISSING:
        return "(unset)"
    text = json.dumps(value, separators=(", ", ": "))
    return text if len(text) <= 60 else text[:57] + "..."


def _kube_detail(change: Change) -> str:
    """An update of a Kubernetes object with its first fields' old and new values."""
    if change.action is not Action.UPDATE or change.before is None or change.after is None:
        return _cell(detail(change))
    shown = [f"{_cell(f)}: {_cell(_value(_lookup(change.before, f)))} → {_cell(_value(_lookup(change.after, f)))}"
             for f in change.fields[:SHOWN_FIELDS]]
    more = len(change.fields) - SHOWN_FIELDS
    return "<br>".join(shown + ([f"and {more} more fields"] if more > 0 else []))


def _row(change: Change) -> str:
    if isinstance(change.target, RRsetTarget):
        target, shown = f"{change.target.zone} {change.target}", _cell(detail(change))
    else:
        target = str(change.target)
        shown = _kube_detail(change) if isinstance(change.target, KubeTarget) else _cell(detail(change))
    return f"| {SYMBOL[change.action]} | {_cell(target)} | {shown} |"


class _Rows:
    """A section's rows, rendered when first asked for and only while they could still fit: `length(n)`
    is the characters of the first n rows with their newlines, exact up to `limit` (past it, some number
    above `limit`, which is all a fitting needs to know)."""

    def __init__(self, count: int, rows: Iterable[str], limit: int) -> None:
        self.count, self._rows, self._limit = count, iter(rows), limit
        self.rendered: list[str] = []
        self._ends = [0]  # _ends[i]: the length of the first i rows, newlines included

    def length(self, n: int) -> int:
        n = min(n, self.count)
        while len(self.rendered) < n and self._ends[-1] <= self._limit:
            row = next(self._rows)
            self.rendered.append(row)
            self._ends.append(self._ends[-1] + len(row) + 1)
        return self._ends[min(n, len(self.rendered))]


@dataclasses.dataclass
class _Section:
    heading: list[str]
    rows: _Rows
    more: Callable[[int], str]  # the line that ends a cut section: "... and N more"

    def length(self, n: int) -> int:
        """Its characters with at most n rows, each line with its newline (its empty last line's too)."""
        cut = self.rows.count - n
        return (sum(len(line) + 1 for line in self.heading) + self.rows.length(n)
                + (len(self.more(cut)) + 1 if cut > 0 else 0) + 1)

    def lines(self, n: int) -> Iterator[str]:
        yield from self.heading
        yield from self.rows.rendered[:n]
        if self.rows.count > n:
            yield self.more(self.rows.count - n)
        yield ""


def _rows(plan: Plan, layer: str) -> Iterator[str]:
    return (_row(c) for c in plan.changes if c.target.layer == layer)


def _sections(plan: Plan, limit: int) -> list[_Section]:
    out: list[_Section] = []
    table = ["| | target | detail |", "|---|---|---|"]
    for layer, title in LAYERS:
        count = sum(1 for c in plan.changes if c.target.layer == layer)
        if count:
            out.append(_Section([f"### {title} ({count})", "", *table], _Rows(count, _rows(plan, layer), limit),
                                lambda n: f"| | ... and {n:,} more | |"))
    bullets: list[tuple[str, list[str]]] = [
        (f"### The safety gate would refuse this plan ({len(plan.refusals)}): a sync applies nothing",
         plan.refusals),
        (f"### Conflicts, left untouched ({len(plan.conflicts)})", plan.conflicts),
        (f"### Not observed ({len(plan.unplanned)})", plan.unplanned),
    ]
    bullets += _problem_sections(plan)
    out += [_Section([title, ""], _Rows(len(items), (f"- {code(i)}" for i in items), limit),
                     lambda n: f"- ... and {n:,} more") for title, items in bullets if items]
    return out


def _problem_sections(plan: Plan) -> list[tuple[str, list[str]]]:
    def group(items: list[Problem], where: str) -> list[tuple[str, list[str]]]:
        errors = [str(p) for p in items if p.severity is Severity.ERROR]
        warnings = [str(p) for p in items if p.severity is Severity.WARNING]
        return [(f"### Errors{where} ({len(errors)})", errors), (f"### Warnings{where} ({len(warnings)})", warnings)]
    if plan.base is None:
        return group(plan.problems, "")
    base = group(plan.base_problems, " in the base") if "base" in plan.invalid else []
    return group(plan.problems, " in the head") + base


def _head(plan: Plan) -> list[str]:
    lines = ["## bindy-agent plan", ""]
    if plan.base is not None:
        lines += [f"Changes from base {code(label(plan, plan.base))} to head {code(label(plan, plan.revision))}",
                  ""]
    elif plan.revision:
        lines += [f"Revision {code(plan.revision)}", ""]
    if plan.invalid:
        errors = {"base": plan.base_problems, "head": plan.problems, "revision": plan.problems}
        counts = ", ".join(f"{what} has {sum(p.severity is Severity.ERROR for p in errors[what])} errors"
                           for what in plan.invalid)
        return lines + [f"**Not planned: the {counts}.** Nothing can be applied until they are fixed.", ""]
    return lines + [f"**{summary_line(plan)}**", ""]


def pieces(plan: Plan, *, limit: int = MARKDOWN_LIMIT) -> Iterator[str]:
    """The Markdown plan, line by line: every table with as many rows as fit (all of them if they do),
    and a note when they were cut; never more than `limit` characters."""
    head, sections = _head(plan), _sections(plan, limit)
    note = (f"\n_Cut to fit a {limit:,}-character comment: every count above is complete; "
            "`bindy-agent plan -o json` lists every change._\n")
    top = sum(len(line) + 1 for line in head)

    def length(rows: int) -> int:  # of the document without the note and its final newline
        return top + sum(s.length(rows) for s in sections) - 1

    most = max((s.rows.count for s in sections), default=0)
    if length(most) <= limit:
        rows, tail = most, ""
    else:
        low, high = 0, most  # the most rows per section that fit, with the note
        while low < high:
            mid = (low + high + 1) // 2
            if length(mid) + len(note) <= limit:
                low = mid
            else:
                high = mid - 1
        rows, tail = low, note
    lines = [*head, *(line for s in sections for line in s.lines(rows))]
    budget = limit  # a head and headings longer than the limit are cut, like any other text
    for i, line in enumerate(lines):
        piece = line + ("\n" if i < len(lines) - 1 else tail)
        yield piece[:budget]
        budget -= len(piece)
        if budget <= 0:
            return
