"""Nothing a repository writes can drive a pull-request comment: `plan -o markdown` as GitHub renders it
(cmark-gfm, GitHub's own renderer, with raw HTML let through so that nothing is hidden by a sanitizer)
shows Markdown, HTML, TXT values, annotation values, problems and branch names as text."""

from __future__ import annotations

import pathlib
import re
import shutil

import pytest

from tests.conftest import SAMPLE
from tests.support import clirun
from tests.support.escapes import _clean, _code_texts, _rendered, _yaml_dq, sample_with_unknown_key
from tests.support.gitremote import GitRemote

# -- Markdown, as GitHub renders a pull-request comment ------------------------------------------


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
    key = "k\n\n<img src=x onerror=alert(1)>\n\n| a | b |\n|---|---|\n| [x](https://evil.example/) | c |"
    root = sample_with_unknown_key(tmp_path, key)
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
