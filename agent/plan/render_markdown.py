"""The Markdown plan, meant to be pasted as a pull-request comment, written for its reviewers.

    headline        how many CRs of the repository the change edits, and the totals of each layer,
                    labelled (a record edited in its CR is one CR and one RRset: each layer counts
                    it once)
    refusals        what the safety gate would refuse (then a sync applies nothing)
    DNS records     first, what a reviewer came for, grouped by zone (plan/markdown_rows.py)
    zones           the zones created on or removed from servers, grouped by zone
    CRs             the CRs of the repository, applied to Kubernetes
    generated       what the agent makes from them (Deployments, Services, ...), folded in <details>
    the rest        conflicts, what was not observed, errors and warnings

Each change is marked `+`, `~` or `-`, shows an edit as `old -> new`, and links to its file:line
when the CLI has --link-base (plan/locate.py finds the line). It fits GitHub's 65,536-character
limit (`MARKDOWN_LIMIT`): the headline and every count are always shown; when the tables do not fit,
each is cut to the same number of rows (the most that fit) and ends with "... and N more". Rows are
rendered lazily and only as far as the limit can reach: a plan of 100,000 changes renders about as
many rows as fit in one comment, never all of them.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

from agent.model.problems import Problem, Severity
from agent.plan import markdown_rows as rows
from agent.plan.changes import Action, Change, Plan, RRsetTarget, ZoneTarget
from agent.plan.locate import NOWHERE, Sources
from agent.plan.markdown_rows import code
from agent.plan.render_text import label

MARKDOWN_LIMIT = 65_536  # GitHub's limit on a comment's body, in characters
__all__ = ["MARKDOWN_LIMIT", "code", "pieces"]


class _Rows:
    """A section's rows, rendered when first asked for and only while they could still fit:
    `length(n)` is the characters of the first n rows with their newlines, exact up to `limit` (past
    it, some number above `limit`, which is all a fitting needs to know)."""

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
    footer: tuple[str, ...] = ()  # after the rows (a folded section's closing tag)

    def length(self, n: int) -> int:
        """Its characters with at most n rows, each line with its newline (its empty last line's
        too)."""
        cut = self.rows.count - n
        return (sum(len(line) + 1 for line in (*self.heading, *self.footer)) + self.rows.length(n)
                + (len(self.more(cut)) + 1 if cut > 0 else 0) + 1)

    def lines(self, n: int) -> Iterator[str]:
        yield from self.heading
        yield from self.rows.rendered[:n]
        if self.rows.count > n:
            yield self.more(self.rows.count - n)
        yield from self.footer
        yield ""


RECORDS, ZONES, CRS, GENERATED = "records", "zones", "crs", "generated"
TOTALS = ((RECORDS, "DNS records (RRsets)"), (ZONES, "Zones on servers"),
          (CRS, "CRs of the repository"), (GENERATED, "Generated Kubernetes objects"))


def _layer(change: Change, sources: Sources) -> str:
    target = change.target
    if isinstance(target, RRsetTarget):
        return RECORDS
    if isinstance(target, ZoneTarget):
        return ZONES
    return CRS if sources.written(change) else GENERATED


def _table(title: str, header: list[str], count: int, found: Iterator[str], limit: int, *,
           folded: str = "") -> _Section:
    columns = header[0].count("|") - 1

    def more(n: int) -> str:
        return f"| | ... and {n:,} more |" + " |" * (columns - 2)

    if folded:
        return _Section(["<details>", f"<summary>{folded}</summary>", "", *header],
                        _Rows(count, found, limit), more, ("", "</details>"))
    return _Section([f"### {title}", "", *header], _Rows(count, found, limit), more)


def _bullets(title: str, items: list[str], limit: int) -> _Section:
    return _Section([title, ""], _Rows(len(items), (f"- {code(i)}" for i in items), limit),
                    lambda n: f"- ... and {n:,} more")


def _sections(plan: Plan, limit: int, sources: Sources,
              counts: dict[str, Counter[Action]]) -> list[_Section]:
    def of(layer: str) -> Iterator[Change]:
        return (c for c in plan.changes if _layer(c, sources) == layer)

    out: list[_Section] = []
    if plan.refusals:
        out.append(_bullets(f"### The safety gate would refuse this plan ({len(plan.refusals)}): a "
                            "sync applies nothing", plan.refusals, limit))
    tables = ((RECORDS, "DNS records", rows.RECORDS_TABLE, rows.record_rows, ""),
              (ZONES, "Zones on servers", rows.ZONES_TABLE, rows.zone_rows, ""),
              (CRS, "CRs of the repository", rows.CRS_TABLE, rows.cr_rows, ""),
              (GENERATED, "", rows.GENERATED_TABLE, rows.generated_rows,
               "Generated Kubernetes objects ({}): what "
               "the agent makes from the CRs"))
    for layer, title, header, render, folded in tables:
        count = sum(counts[layer].values())
        if count:
            out.append(_table(f"{title} ({count})", header, count, render(of(layer), sources),
                              limit, folded=folded.format(count)))
    bullets: list[tuple[str, list[str]]] = [
        (f"### Conflicts, left untouched ({len(plan.conflicts)})", plan.conflicts),
        (f"### Not observed ({len(plan.unplanned)})", plan.unplanned),
    ]
    bullets += _problem_sections(plan)
    out += [_bullets(title, items, limit) for title, items in bullets if items]
    return out
def _problem_sections(plan: Plan) -> list[tuple[str, list[str]]]:
    def group(items: list[Problem], where: str) -> list[tuple[str, list[str]]]:
        errors = [str(p) for p in items if p.severity is Severity.ERROR]
        warnings = [str(p) for p in items if p.severity is Severity.WARNING]
        return [(f"### Errors{where} ({len(errors)})", errors),
                (f"### Warnings{where} ({len(warnings)})", warnings)]
    if plan.base is None:
        return group(plan.problems, "")
    base = group(plan.base_problems, " in the base") if "base" in plan.invalid else []
    return group(plan.problems, " in the head") + base


def _count(plan: Plan, sources: Sources) -> dict[str, Counter[Action]]:
    counts: dict[str, Counter[Action]] = {layer: Counter() for layer, _ in TOTALS}
    for c in plan.changes:
        counts[_layer(c, sources)][c.action] += 1
    return counts


def _totals(counts: dict[str, Counter[Action]]) -> list[str]:
    """Each layer's adds, changes and removes, labelled: the same edit is counted once in each
    layer."""
    def shown(layer: str, action: Action, sign: str) -> str:
        n = counts[layer][action]
        return f"`{sign}{n:,}`" if n else "0"

    lines = ["| | added | changed | removed |", "|---|--:|--:|--:|"]
    lines += [f"| {title} | {shown(layer, Action.CREATE, '+')} | "
              f"{shown(layer, Action.UPDATE, '~')} | {shown(layer, Action.DELETE, '-')} |"
              for layer, title in TOTALS]
    return [*lines, "",
            "_Each layer counts an edit once: a record edited in its CR is one CR and one RRset._",
            ""]


def _headline(plan: Plan, counts: dict[str, Counter[Action]]) -> str:
    crs = counts[CRS]
    n = sum(crs.values())
    if not plan.changes:
        return ("**No changes**: the head does exactly what the base "
                "does.") if plan.base is not None else \
            "**No changes**: the world matches the revision."
    what = f"edit{'s' if n != 1 else ''} to the repository's CRs" if plan.base is not None else \
        f"CR{'s' if n != 1 else ''} of the repository to apply"
    parts = [f"{crs[a]:,} {word}"
             for a, word in ((Action.CREATE, "added"), (Action.UPDATE, "changed"),
                                                  (Action.DELETE, "removed")) if crs[a]]
    return f"**{n:,} {what}**" + (f": {', '.join(parts)}." if parts else ".")


def _head(plan: Plan, counts: dict[str, Counter[Action]]) -> list[str]:
    lines = ["## bindy-agent plan", ""]
    if plan.base is not None:
        lines += [f"Changes from base {code(label(plan, plan.base))} to head "
                  f"{code(label(plan, plan.revision))}",
                  ""]
    elif plan.revision:
        lines += [f"Revision {code(plan.revision)}", ""]
    if plan.invalid:
        errors = {"base": plan.base_problems, "head": plan.problems, "revision": plan.problems}
        counts_ = ", ".join(f"{what} has {sum(p.severity is Severity.ERROR for p in errors[what])} "
                            f"errors"
                            for what in plan.invalid)
        return lines + [f"**Not planned: the {counts_}.** Nothing can be applied until they are "
                        f"fixed.", ""]
    lines += [_headline(plan, counts), ""]
    return lines + (_totals(counts) if plan.changes else [])


def pieces(plan: Plan, *, limit: int = MARKDOWN_LIMIT, sources: Sources = NOWHERE) -> Iterator[str]:
    """The Markdown plan, line by line: every table with as many rows as fit (all of them if they
    do), and a note when they were cut; never more than `limit` characters. `sources`: where each
    change comes from in the repository, and how to link there (plan/locate.py)."""
    if sources is NOWHERE and plan.sources is not None:
        sources = plan.sources
    counts = _count(plan, sources)
    head, sections = _head(plan, counts), _sections(plan, limit, sources, counts)
    note = (f"\n_Cut to fit a {limit:,}-character comment: every count above is complete; "
            "`bindy-agent plan -o json` lists every change._\n")
    top = sum(len(line) + 1 for line in head)

    def length(rows: int) -> int:  # of the document without the note and its final newline
        return top + sum(s.length(rows) for s in sections) - 1

    most = max((s.rows.count for s in sections), default=0)
    if length(most) <= limit:
        shown, tail = most, ""
    else:
        low, high = 0, most  # the most rows per section that fit, with the note
        while low < high:
            mid = (low + high + 1) // 2
            if length(mid) + len(note) <= limit:
                low = mid
            else:
                high = mid - 1
        shown, tail = low, note
    lines = [*head, *(line for s in sections for line in s.lines(shown))]
    budget = limit  # a head and headings longer than the limit are cut, like any other text
    for i, line in enumerate(lines):
        piece = line + ("\n" if i < len(lines) - 1 else tail)
        yield piece[:budget]
        budget -= len(piece)
        if budget <= 0:
            return
