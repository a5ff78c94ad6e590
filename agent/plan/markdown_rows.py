"""The rows of the Markdown plan (pure): one table row per change, in the layer's own columns.

Every row starts with its mark in code (`+` add, `~` change, `-` remove), shows a change of value as
`old -> new`, and ends with where it comes from in the repository, linked when the CLI was given
--link-base. Records and zones on servers are grouped by zone: a row naming the zone in bold comes
before the first change of each zone, and the rows below name only what is inside it.

Everything a revision wrote is shown in code spans (`code`): there cmark-gfm makes no link, emphasis
or HTML of it. Only the agent's words, and the links it builds from the operator's --link-base, are
Markdown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from agent.model import printable
from agent.plan.changes import SYMBOL, Action, Change, KubeTarget, RRsetTarget, ZoneTarget
from agent.plan.locate import Located, Sources
from agent.plan.render_text import detail

SHOWN_FIELDS = 3  # changed fields shown with their values in a row
_BACKTICKS = re.compile("`+")
_URL_UNSAFE = re.compile(r"[\s()<>\[\]`\"'\\]")
_MISSING = object()

RECORDS_TABLE = ["| | name | type | change | file |", "|:-:|---|---|---|---|"]
ZONES_TABLE = ["| | server | role | change | file |", "|:-:|---|---|---|---|"]
CRS_TABLE = ["| | CR | change | file |", "|:-:|---|---|---|"]
GENERATED_TABLE = ["| | object | change | made from |", "|:-:|---|---|---|"]


def code(text: str, *, cell: bool = False) -> str:
    """`text` as inline code shown exactly as written, on one line (controls and newlines escaped).
    Its fence is longer than any run of backticks inside; a space pads text that starts or ends with
    a backtick or a space (CommonMark strips one from each side). In a table `cell`, every `|` is
    escaped: GFM splits cells on it even inside code, and takes the backslash away again."""
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


def cell(text: str) -> str:
    return code(text, cell=True)


def mark(action: Action) -> str:
    return f"`{SYMBOL[action]}`"


def lookup(body: Any, path: str) -> Any:
    """The value at a field path such as `spec.ipv4Addresses[0]` (keys may hold dots, e.g.
    labels)."""
    if not path:
        return body
    if path.startswith("[") and isinstance(body, list):
        end = path.index("]")
        index = int(path[1:end])
        return lookup(body[index], path[end + 1:].lstrip(".")) if index < len(body) else _MISSING
    if isinstance(body, dict):
        for key in sorted((k for k in body if path == k or path.startswith((k + ".", k + "["))),
                          key=len, reverse=True):
            return lookup(body[key], path[len(key):].lstrip("."))
    return _MISSING


def value(found: Any) -> str:
    if found is _MISSING:
        return "(unset)"
    text = json.dumps(found, separators=(", ", ": "))
    return text if len(text) <= 60 else text[:57] + "..."


def _short(values: Iterable[str], width: int = 60) -> str:
    text = ", ".join(values)
    return text if len(text) <= width else text[:width - 3] + "..."


def _url(link: str) -> str:
    """A URL as a Markdown link destination: what would end or break it is percent-encoded."""
    return _URL_UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), link)


def where(located: Located | None, sources: Sources, *, made_from: bool = False) -> str:
    """The file:line cell: a link when --link-base was given; for a generated object, the CR it is
    made from."""
    if located is None:
        return ""
    place = cell(f"{located.file}:{located.line}")
    url = sources.link(located) if sources.link is not None else None
    if url is not None:
        place = f"[{place}]({_url(url)})"
    return f"{cell(located.made_from)} ({place})" if made_from and located.made_from else place


def kube_change(change: Change) -> str:
    """An update of a Kubernetes object with its first fields as `old -> new`; else what it does."""
    if change.action is not Action.UPDATE or change.before is None or change.after is None:
        return cell(detail(change))
    shown = [f"{cell(f)}: {cell(value(lookup(change.before, f)))} -> "
             f"{cell(value(lookup(change.after, f)))}"
             for f in change.fields[:SHOWN_FIELDS]]
    more = len(change.fields) - SHOWN_FIELDS
    return "<br>".join(shown + ([f"and {more} more fields"] if more > 0 else []))


def rrset_change(change: Change) -> str:
    """An RRset's values and TTL: as they will be, as they were, or `old -> new`."""
    after, before = change.after or {}, change.before or {}
    if change.action is Action.CREATE:
        return f"{cell(_short(after.get('values', [])))} TTL {after.get('ttl', '')}"
    if change.action is Action.DELETE:
        return f"{cell(_short(before.get('values', [])))} TTL {before.get('ttl', '')}"
    parts = []
    if before.get("values") != after.get("values"):
        parts.append(f"{cell(_short(before.get('values', []), 40))} -> "
                     f"{cell(_short(after.get('values', []), 40))}")
    if before.get("ttl") != after.get("ttl"):
        parts.append(f"TTL {before.get('ttl')} -> {after.get('ttl')}")
    return ", ".join(parts)


def _relative(name: str, zone: str) -> str:
    return "@" if name == zone else name[: -len(zone) - 1] if name.endswith("." + zone) else name


def _zone_row(zone: str, columns: int) -> str:
    return f"| | **{cell(zone)}** |" + " |" * (columns - 2)


def _grouped_by_zone(changes: Iterable[Change], row_of: Callable[[Change], str]) -> Iterator[str]:
    """One row per change; a zone's row comes before its first (in the same string)."""
    zone = None
    for c in changes:
        row = row_of(c)
        target = c.target
        assert isinstance(target, (RRsetTarget, ZoneTarget))
        if target.zone != zone:
            zone = target.zone
            row = _zone_row(zone, 5) + "\n" + row
        yield row


def record_rows(changes: Iterable[Change], sources: Sources) -> Iterator[str]:
    """One row per RRset change, grouped by zone."""
    def row(c: Change) -> str:
        assert isinstance(c.target, RRsetTarget)
        return (f"| {mark(c.action)} | {cell(_relative(c.target.name, c.target.zone))} | "
                f"{cell(c.target.rtype)} | {rrset_change(c)} | "
                f"{where(sources.where(c), sources)} |")
    return _grouped_by_zone(changes, row)


def zone_rows(changes: Iterable[Change], sources: Sources) -> Iterator[str]:
    """One row per zone created, updated or removed on a server, grouped by zone like the
    records."""
    def row(c: Change) -> str:
        assert isinstance(c.target, ZoneTarget)
        return (f"| {mark(c.action)} | {cell(c.target.instance)} | {cell(c.target.role)} | "
                f"{cell(detail(c))} | {where(sources.where(c), sources)} |")
    return _grouped_by_zone(changes, row)


def cr_rows(changes: Iterable[Change], sources: Sources) -> Iterator[str]:
    for c in changes:
        yield (f"| {mark(c.action)} | {cell(str(c.target))} | {kube_change(c)} | "
               f"{where(sources.where(c), sources)} |")


def generated_rows(changes: Iterable[Change], sources: Sources) -> Iterator[str]:
    for c in changes:
        assert isinstance(c.target, KubeTarget)
        made_from = where(sources.where(c), sources, made_from=True)
        yield f"| {mark(c.action)} | {cell(str(c.target))} | {kube_change(c)} | {made_from} |"
