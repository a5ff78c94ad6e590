"""MkDocs hook: the CLI reference page, generated from bindy-agent's own argument parser at build
time.

docs/reference/cli.md holds two markers; this hook replaces them, and the note between them, with
every verb's usage, description, flags (with their defaults expanded, as `--help` prints them) and
epilog, built by the same parser `bindy-agent VERB --help` uses. Nothing is copied by hand, so the
page cannot drift from `--help`.
"""

from __future__ import annotations

import argparse
import html
import os
from collections.abc import Callable, Iterator
from typing import Any

MARKER = "<!-- cli-reference -->"
END = "<!-- /cli-reference -->"  # what stands between the two is for readers of the unbuilt file
PAGE = "reference/cli.md"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """The reference in place of the marker on its page; every other page as it is."""
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown or END not in markdown.split(MARKER, 1)[1]:
        raise ValueError(f"{PAGE} lost its markers {MARKER!r} ... {END!r}: the generated reference "
                         "has nowhere to go")
    before, rest = markdown.split(MARKER, 1)
    after = rest.split(END, 1)[1]
    held = os.environ.get("COLUMNS")
    # argparse wraps usage to the terminal: the page wraps alike on every machine
    os.environ["COLUMNS"] = "100"
    try:
        return before + reference() + after
    finally:
        if held is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = held


def _builder() -> Callable[[list[str]], argparse.ArgumentParser]:
    """The function that builds bindy-agent's parser for a command line (every verb listed, the
    named verb with all its flags)."""
    from agent import cli

    build = getattr(cli, "build_parser", None) or getattr(cli, "_parser", None)
    if build is None:
        raise ValueError("agent.cli has no parser builder (build_parser or _parser): "
                         "update docs/hooks/cli_reference.py")
    return build  # type: ignore[no-any-return]


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:  # type: ignore[type-arg]
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def verbs() -> list[tuple[str, str]]:
    """Every verb and its one-line help, in the order `bindy-agent --help` lists them."""
    sub = _subparsers(_builder()([]))
    return [(choice.dest, choice.help or "") for choice in sub._choices_actions]


def verb_parser(verb: str) -> argparse.ArgumentParser:
    """The parser `bindy-agent VERB --help` prints."""
    parser: argparse.ArgumentParser = _subparsers(_builder()([verb])).choices[verb]
    return parser


def _text(value: str) -> str:
    """Help text as Markdown shows it literally: HTML and Markdown's own characters escaped."""
    out = html.escape(value, quote=False).replace("\\", "\\\\")
    for ch in "`*_[]|#":
        out = out.replace(ch, "\\" + ch)
    return " ".join(out.split())


def _code(value: str) -> str:
    """A code span that holds any text (the table's pipes escaped)."""
    fence = "``" if "`" in value else "`"
    span = f"{fence} {value} {fence}" if fence == "``" else f"`{value}`"
    return span.replace("|", "\\|")


def _block(value: str) -> list[str]:
    return ["```text", *value.rstrip("\n").splitlines(), "```", ""]


def _flags(parser: argparse.ArgumentParser) -> Iterator[str]:
    """One table per group of flags (positional arguments, options, named groups); the verbs
    themselves are listed on their own."""
    formatter = parser._get_formatter()
    for group in parser._action_groups:
        actions = [a for a in group._group_actions if a.help is not argparse.SUPPRESS
                   and not isinstance(a, argparse._SubParsersAction)]
        if not actions:
            continue
        yield f"**{_text(group.title or 'options')}**"
        yield ""
        yield "| flag | description |"
        yield "| --- | --- |"
        for action in actions:
            invocation = formatter._format_action_invocation(action)
            described = formatter._expand_help(action) if action.help else ""
            yield f"| {_code(invocation)} | {_text(described)} |"
        yield ""


def _verb_section(verb: str, summary: str) -> Iterator[str]:
    parser = verb_parser(verb)
    yield f"## bindy-agent {verb} {{#{verb}}}"
    yield ""
    yield f"*{_text(summary)}*" if summary else ""
    yield ""
    yield from _block(parser.format_usage().removeprefix("usage: "))
    if parser.description:
        yield _text(parser.description)
        yield ""
    yield from _flags(parser)
    if parser.epilog:
        yield from _block(parser.epilog)


def reference() -> str:
    """The whole generated part of the page: the verbs at a glance, global flags, then each verb."""
    top = _builder()([])
    listed = verbs()
    lines = ["| verb | what it does |", "| --- | --- |"]
    lines += [f"| [{verb}](#{verb}) | {_text(summary)} |" for verb, summary in listed]
    usage = top.format_usage().removeprefix("usage: ")
    lines += ["", "## Global flags {#global}", "", *_block(usage)]
    lines += list(_flags(top))
    for verb, summary in listed:
        lines += list(_verb_section(verb, summary))
    return "\n".join(lines) + "\n"
