"""Issue 23, item 5: nothing a repository writes can drive a terminal or a pull-request comment.

A hostile revision puts terminal control sequences (ESC[2J, OSC 8 hyperlinks, C1 CSI), carriage
returns, newlines and bidi overrides where the schema lets text through - unknown keys (field
paths), kinds, TXT values, annotation values, branch names, commit subjects - and Markdown or HTML
where a pull-request comment shows it. Every output must show them as visible escapes: `validate`
and `plan` problem lines, the text plan, `plan -o markdown` as GitHub renders it (cmark-gfm,
GitHub's own renderer, with raw HTML let through so that nothing is hidden by a sanitizer),
`report`, log lines and the progress line."""

from __future__ import annotations

import contextvars
import dataclasses
import html
import io
import logging
import pathlib
import re
import shutil

import cmarkgfm
import pytest

from agent.cli import progress
from agent.model.problems import Origin, Problem
from agent.outcome import report
from agent.run import logs
from agent.sources.git import GitSource
from tests.conftest import SAMPLE
from tests.support import clirun
from tests.support.gitremote import GitRemote
from tests.support.procs import free_port

# what must never reach a terminal raw: C0 controls but the newline, DEL, C1 controls, bidi controls
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
OSC8 = "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"  # a hyperlink whose target is hidden
OSC8_SHOWN = OSC8.replace("\x1b", "\\x1b")  # as the agent shows it: each ESC escaped, the rest as written


def _yaml_dq(text: str) -> str:
    """`text` as a YAML double-quoted scalar (YAML's own escapes: a raw ESC may not appear in a file)."""
    return '"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}" if ord(c) > 0xff
                         else f"\\x{ord(c):02x}" for c in text) + '"'


def _clean(text: str, where: str) -> None:
    found = sorted({hex(ord(c)) for c in RAW.findall(text)})
    assert not found, f"raw control or bidi characters {found} in {where}:\n{text!r}"


def _hostile_repo(tmp_path: pathlib.Path) -> pathlib.Path:
    """The sample repository plus a file whose unknown key carries a hidden hyperlink, a CR, a newline
    that forges a line of its own and a bidi override, and a document with a kind that clears the screen."""
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    key, kind = f"unknown{OSC8}\r\nforged: line\u202e", "TXTRecord\x1b[2J\x9b2J"
    (root / "records" / "evil.yaml").write_text(f"""apiVersion: bindy.firestoned.io/v1beta1
kind: TXTRecord
metadata:
  name: evil
  namespace: dns-system
  labels: {{zone: example-com}}
spec:
  name: evil
  {_yaml_dq(key)}: 1
  text: ["x"]
---
apiVersion: bindy.firestoned.io/v1beta1
kind: {_yaml_dq(kind)}
metadata:
  name: odd
  namespace: dns-system
spec:
  name: odd
  text: ["x"]
""")
    return root


def _assert_problems_escaped(stderr: str) -> None:
    _clean(stderr, "stderr")
    assert OSC8_SHOWN + r"\r\nforged: line\u202e: unknown field" in stderr
    assert not any(line.startswith("forged") for line in stderr.splitlines())  # no line of its own
    assert r"TXTRecord\x1b[2J\x9b2J" in stderr


def test_validate_shows_hostile_keys_and_kinds_escaped(tmp_path: pathlib.Path) -> None:
    result = clirun.main("validate", str(_hostile_repo(tmp_path)))
    assert result.returncode == 1, result.stderr
    _assert_problems_escaped(result.stderr)


@pytest.mark.parametrize("output", ["text", "json", "markdown"])
def test_plan_shows_hostile_keys_and_kinds_escaped(tmp_path: pathlib.Path, output: str) -> None:
    result = clirun.main("plan", str(_hostile_repo(tmp_path)), "-o", output)
    assert result.returncode == 1, result.stderr
    _assert_problems_escaped(result.stderr)
    _clean(result.stdout, "stdout")
    if output == "markdown":  # the errors, each on one line of its own, as text
        page = _rendered(result.stdout)
        assert any(OSC8_SHOWN + r"\r\nforged: line\u202e: unknown field" in text for text in _code_texts(page))
        assert "<p>forged" not in page


def test_sync_shows_hostile_keys_and_kinds_escaped(tmp_path: pathlib.Path) -> None:
    """Rejected before any server is reached (nothing listens at the endpoints)."""
    endpoints = tmp_path / "endpoints.yaml"
    endpoints.write_text(f"instances:\n  dns-system/dns-primary-0: {{dns: '127.0.0.1:{free_port()}', "
                         f"api: 'http://127.0.0.1:{free_port()}'}}\n")
    result = clirun.main("sync", str(_hostile_repo(tmp_path)), "--endpoints", str(endpoints),
                         "--state", str(tmp_path / "state"))
    assert result.returncode == 2, result.stderr
    _assert_problems_escaped(result.stderr)
    _clean(result.stdout, "stdout")


def test_a_git_error_carrying_a_path_is_escaped(tmp_path: pathlib.Path) -> None:
    """Whatever reaches stderr passes the CLI's one escaping stream, git's own messages too."""
    result = clirun.main("plan", "--repo", f"{tmp_path}/no\x1b[2J\u202erepo", "--base", "a", "--head", "b",
                         "--cache", str(tmp_path / "cache"))
    assert result.returncode == 1
    _clean(result.stderr, "stderr")
    assert r"no\x1b[2J\u202erepo" in result.stderr


# -- Markdown, as GitHub renders a pull-request comment ------------------------------------------
def _rendered(markdown: str) -> str:
    """HTML as cmark-gfm (GitHub's renderer) makes it, with raw HTML let through (GitHub's sanitizer
    keeps <img>, <details> and links anyway)."""
    return str(cmarkgfm.github_flavored_markdown_to_html(markdown, options=cmarkgfm.Options.CMARK_OPT_UNSAFE))


def _code_texts(page: str) -> list[str]:
    return [html.unescape(text) for text in re.findall(r"<code>(.*?)</code>", page, re.S)]


AGENTS_FOLD = re.compile(r"<details>\n<summary>Generated Kubernetes objects \(\d+\): what the agent makes from the "
                         r"CRs</summary>")


def _assert_inert(page: str, *, links_to: str | None = None) -> None:
    """No element the repository wrote: no link (autolinks included) but the agent's own to `links_to`, no image,
    no details but the agent's fold of generated objects, no table cell split."""
    page = AGENTS_FOLD.sub("", page).replace("</details>", "", len(AGENTS_FOLD.findall(page)))
    if links_to is not None:
        page = re.sub(r'<a href="' + re.escape(links_to) + r'[^"<>]*">', "", page)
    for element in ("<a ", "<a>", "<img", "<details", "<summary", "<script"):
        assert element not in page, f"{element} rendered:\n{page}"
    for table in re.findall(r"<table>(.*?)</table>", page, re.S):
        rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
        cells = {len(re.findall(r"<t[dh][ >]", row)) for row in rows}
        assert len(cells) == 1, f"a row split into other cells: {table}"


PAYLOADS = ["[x](https://evil.example/)", "<img src=x onerror=alert(1)>", "<details><summary>open",
            "see www.evil.example", "a | b | c", "``x`` ```y", "`tick", "</code><img src=x>"]


CODE_SPAN_EDGES = ["a", " a ", " a", "a ", "`", "``", "a``b", "` a `", "```", " ` ", "   ", "a|b", "x\\",
                   "<b>&amp;</b>"]


def test_a_code_span_shows_any_text_as_written() -> None:
    """The fence is longer than any run of backticks inside; a padding space keeps leading and trailing
    backticks and spaces (CommonMark strips one space from each side); a pipe is escaped in a table
    cell only (GFM splits cells on it, even inside code, and takes the backslash away again)."""
    from agent.plan import render_markdown

    for text in CODE_SPAN_EDGES:
        assert _code_texts(_rendered(f"- {render_markdown.code(text)}")) == [text], text
    for text in CODE_SPAN_EDGES:
        table = _rendered(f"| a | b |\n|---|---|\n| {render_markdown.code(text, cell=True)} | c |\n")
        assert _code_texts(table) == [text] and table.count("<td>") == 2, text


def test_markdown_plan_shows_txt_values_as_text(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    docs = [f"""apiVersion: bindy.firestoned.io/v1beta1
kind: TXTRecord
metadata:
  name: hostile-{i}
  namespace: dns-system
  labels: {{zone: example-com}}
spec:
  name: hostile-{i}
  text: [{_yaml_dq(text)}]
""" for i, text in enumerate(PAYLOADS)]
    (root / "records" / "hostile.yaml").write_text("---\n".join(docs))
    result = clirun.main("plan", str(root), "-o", "markdown")
    assert result.returncode == 0, result.stderr
    page = _rendered(result.stdout)
    _assert_inert(page)
    shown = _code_texts(page)
    for text in PAYLOADS:  # in the DNS presentation form of the TXT value: quoted
        assert f'"{text}"' in shown, text


def test_markdown_delta_shows_annotation_values_as_text(tmp_path: pathlib.Path) -> None:
    """A value with runs of backticks cannot close its code span early: its fence is longer."""
    head = tmp_path / "head"
    shutil.copytree(SAMPLE, head)
    zone = head / "zones" / "example-com.yaml"
    value = "``[x](https://evil.example/)`` <img src=x>"
    zone.write_text(zone.read_text().replace("  namespace: dns-system\nspec:",
                                             f"  namespace: dns-system\n  annotations:\n    note: {_yaml_dq(value)}"
                                             "\nspec:", 1))
    result = clirun.main("plan", str(head), "--base-dir", str(SAMPLE), "-o", "markdown")
    assert result.returncode == 0, result.stderr
    page = _rendered(result.stdout)
    _assert_inert(page)
    assert '{"note": "``[x](https://evil.example/)`` <img src=x>"}' in _code_texts(page)


def test_markdown_problems_with_newlines_stay_one_item(tmp_path: pathlib.Path) -> None:
    """A newline in a field path cannot end the list item and start raw HTML or a table."""
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    key = "k\n\n<img src=x onerror=alert(1)>\n\n| a | b |\n|---|---|\n| [x](https://evil.example/) | c |"
    (root / "records" / "evil.yaml").write_text(f"""apiVersion: bindy.firestoned.io/v1beta1
kind: TXTRecord
metadata:
  name: evil
  namespace: dns-system
  labels: {{zone: example-com}}
spec:
  name: evil
  {_yaml_dq(key)}: 1
  text: ["x"]
""")
    result = clirun.main("plan", str(root), "-o", "markdown")
    assert result.returncode == 1
    page = _rendered(result.stdout)
    _assert_inert(page)
    assert "<table>" not in page
    assert any(r"spec.k\n\n<img src=x onerror=alert(1)>\n\n| a | b |" in text for text in _code_texts(page))


# -- a hostile branch name: the labels of a delta ------------------------------------------------
BRANCH = "x`<img/src=x/onerror=alert(1)>`\u202e\x9b2J"  # git allows all of it in a branch name


@pytest.fixture
def branched(tmp_path: pathlib.Path) -> GitRemote:
    """A work tree: the sample on main, and a branch with a hostile name that adds a record."""
    git = GitRemote(tmp_path)
    shutil.copytree(SAMPLE, git.work / "dns")
    git.commit("sample", {})
    git.cmd("checkout", "-q", "-b", BRANCH)
    git.commit("a record", {"dns/records/extra.yaml": """
        apiVersion: bindy.firestoned.io/v1beta1
        kind: TXTRecord
        metadata:
          name: extra
          namespace: dns-system
          labels: {zone: example-com}
        spec:
          name: extra
          text: ["<img src=x onerror=alert(1)>"]
        """})
    return git


def test_delta_labels_from_a_hostile_branch_are_escaped(branched: GitRemote) -> None:
    args = ("plan", "--base", "main", "--head", BRANCH, "--path", "dns")
    text = clirun.main(*args, cwd=branched.work)
    assert text.returncode == 0, text.stderr
    _clean(text.stdout, "the text plan")
    assert "Head: x`<img/src=x/onerror=alert(1)>`\\u202e\\x9b2J (" in text.stdout
    markdown = clirun.main(*args, "-o", "markdown", cwd=branched.work)
    assert markdown.returncode == 0, markdown.stderr
    _clean(markdown.stdout, "the markdown plan")
    page = _rendered(markdown.stdout)
    _assert_inert(page)
    assert any(t.startswith("x`<img/src=x/onerror=alert(1)>`\\u202e\\x9b2J (") for t in _code_texts(page))


# -- report: commit subjects, authors and everything a note holds ---------------------------------
def test_report_shows_a_hostile_commit_and_note_escaped(tmp_path: pathlib.Path) -> None:
    git = GitRemote(tmp_path)
    git.cmd("config", "user.name", "Eve\x1b[2J")
    sha = git.commit(f"Add {OSC8} shop\rforged subject\u202e\x9b2J", {"a.yaml": "# nothing\n"})
    git.push()
    source = GitSource(git.url, tmp_path / "writer")
    commit = dataclasses.asdict(source.fetch().commit)
    assert "\x1b" in commit["subject"] and "\x1b" in commit["author"]  # git kept them: the agent must escape
    problem = Problem(Origin("records/evil.yaml", 9), "TXTRecord/dns-system/evil", f"spec.unknown{OSC8}\r\nforged",
                      "unknown field\u202e")
    change = {"action": "create", "layer": "kubernetes", "result": "failed: \x1b[2J\nforged result",
              "target": {"kind": "TXTRecord", "namespace": "dns-system", "name": "evil\x1b[2J\u2066"}}
    item = report.Report("run1", sha, "partial", commit, "2026-01-01T00:00:00Z", 1.0, changes=[change],
                         problems=[problem], refusals=["refused\x1b[2J\nforged refusal"],
                         failures=[f"failed {OSC8}"], conflicts=["conflict\r\u202e"])
    source.add_note(sha, report.to_note(item), report.to_full(item))
    source.push_notes()

    shown = clirun.main("report", sha, "--repo", git.url, "--cache", str(tmp_path / "cache"))
    _clean(shown.stdout, "report's stdout")
    _clean(shown.stderr, "report's stderr")
    assert f'"Add {OSC8_SHOWN} shop\\rforged subject\\u202e\\x9b2J" (Eve\\x1b[2J <author@example.com>)' \
        in shown.stdout
    for text in (r"spec.unknown" + OSC8_SHOWN + r"\r\nforged: unknown field\u202e", r"evil\x1b[2J\u2066: failed: "
                 r"\x1b[2J\nforged result", r"refused: refused\x1b[2J\nforged refusal", r"conflict: conflict\r\u202e"):
        assert text in shown.stdout, text
    assert not any(line.startswith("forged") for line in shown.stdout.splitlines())
    note = git.note_seen_by_a_fresh_clone(tmp_path / "clone", sha)  # what `git log --notes` shows
    _clean(note, "the note")
    assert r"\x1b[2J\nforged result" in note


# -- log lines and the progress line --------------------------------------------------------------
def test_a_text_log_line_is_one_escaped_line() -> None:
    record = logging.LogRecord("agent.run", logging.WARNING, __file__, 1, "zone %s failed: %s", (
        "example.com", "\x1b[2J\r\nforged: line\u202e"), None)
    line = contextvars.Context().run(logs.TextFormatter().format, record)  # no run id of an earlier test
    assert line == r"warning agent.run: zone example.com failed: \x1b[2J\r\nforged: line\u202e"


def test_the_progress_line_shows_its_text_escaped() -> None:
    stream = io.StringIO()
    reporter = progress.Reporter(stream, enabled=True, prefix="head\x1b[2J: ")
    reporter("loaded", "files\u202e", 3, None)
    assert stream.getvalue() == "\r\x1b[Khead\\x1b[2J: loaded 3 files\\u202e"
