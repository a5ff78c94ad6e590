"""Renders a Plan for people and machines: text (render_text.py), JSON, format version 1
(render_json.py), and Markdown for a pull-request comment (render_markdown.py).

Each format is produced piece by piece (`pieces`), in the order it is written: the CLI writes a
plan of 100,000 changes as it is rendered, and never holds the rendered document. `chunks` groups
the pieces into writes of about 64 KiB; `render_*` join them, for callers that want the string.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from agent.plan import render_json as json_plan
from agent.plan import render_markdown as markdown_plan
from agent.plan import render_text as text_plan
from agent.plan.changes import Plan
from agent.plan.locate import NOWHERE, Sources

MARKDOWN_LIMIT = markdown_plan.MARKDOWN_LIMIT
CHUNK = 1 << 16  # characters a write gathers

PIECES: dict[str, Callable[[Plan], Iterator[str]]] = {
    "text": text_plan.pieces, "json": json_plan.pieces, "markdown": markdown_plan.pieces}
FORMATS = sorted(PIECES)


def chunks(plan: Plan, output: str, *, size: int = CHUNK,
           sources: Sources = NOWHERE) -> Iterator[str]:
    """The plan in `output` format, in pieces of about `size` characters (the last one shorter);
    `sources`: where the Markdown plan's changes come from and how to link there
    (plan/locate.py)."""
    if output == "markdown":
        return _gathered(markdown_plan.pieces(plan, sources=sources), size)
    return _gathered(PIECES[output](plan), size)


def _gathered(pieces: Iterable[str], size: int) -> Iterator[str]:
    batch: list[str] = []
    length = 0
    for piece in pieces:
        batch.append(piece)
        length += len(piece)
        if length >= size:
            yield "".join(batch)
            batch, length = [], 0
    if batch:
        yield "".join(batch)


def render_text(plan: Plan) -> str:
    return "".join(text_plan.pieces(plan))


def render_json(plan: Plan) -> str:
    return "".join(json_plan.pieces(plan))


def render_markdown(plan: Plan, *, limit: int = MARKDOWN_LIMIT, sources: Sources = NOWHERE) -> str:
    return "".join(markdown_plan.pieces(plan, limit=limit, sources=sources))
