"""What a terminal or a pull-request comment must never receive raw: the control, bidi and separator
characters (RAW), an OSC 8 hyperlink and how it is shown, and the check that a text holds none of them."""

from __future__ import annotations

import html
import pathlib
import re
import shutil

import cmarkgfm

from tests.conftest import SAMPLE

# what must never reach a terminal raw: C0 controls but the newline, DEL, C1 controls, bidi controls
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
OSC8 = "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"  # a hyperlink whose target is hidden
OSC8_SHOWN = OSC8.replace("\x1b", "\\x1b")  # as the agent shows it: each ESC escaped, the rest as written


def _clean(text: str, where: str) -> None:
    found = sorted({hex(ord(c)) for c in RAW.findall(text)})
    assert not found, f"raw control or bidi characters {found} in {where}:\n{text!r}"


def _rendered(markdown: str) -> str:
    """HTML as cmark-gfm (GitHub's renderer) makes it, with raw HTML let through (GitHub's sanitizer
    keeps <img>, <details> and links anyway)."""
    return str(cmarkgfm.github_flavored_markdown_to_html(markdown, options=cmarkgfm.Options.CMARK_OPT_UNSAFE))


def _code_texts(page: str) -> list[str]:
    return [html.unescape(text) for text in re.findall(r"<code>(.*?)</code>", page, re.S)]


def _yaml_dq(text: str) -> str:
    """`text` as a YAML double-quoted scalar (YAML's own escapes: a raw ESC may not appear in a file)."""
    return '"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}" if ord(c) > 0xff
                         else f"\\x{ord(c):02x}" for c in text) + '"'


def sample_with_unknown_key(tmp_path: pathlib.Path, key: str, *, more: str = "") -> pathlib.Path:
    """The sample repository plus records/evil.yaml: a TXTRecord whose unknown field is named `key`
    (written as YAML's escapes), then the documents of `more`."""
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
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
{more}""")
    return root
