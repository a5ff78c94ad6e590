"""The pull-request comment (`plan --base/--head -o markdown --link-base URL`), as a reviewer reads it:
rendered by GitHub's renderer (cmark-gfm) and looked at in a browser (headless Chromium). A pull request
that edits a record, adds one and removes one shows its three record lines first, grouped under their
zone, before any Kubernetes object; the totals count the three edits once per layer; every line links to
the file and line of its CR at the commit that has it; what the agent generates is folded away."""

from __future__ import annotations

import html
import json
import pathlib
import re
import shutil
from typing import Any

import cmarkgfm
import pytest

from tests.conftest import SAMPLE
from tests.support import browser, clirun
from tests.support.gitremote import GitRemote

LINK_BASE = "https://git.example/team/dns/blob"
WEB = "dns/records/example-com/web.yaml"
API = """---
apiVersion: bindy.firestoned.io/v1beta1
kind: ARecord
metadata:
  name: api
  namespace: dns-system
  labels: {zone: example-com}
spec:
  name: api
  ipv4Addresses: [192.0.2.50]
"""


@pytest.fixture
def pull_request(tmp_path: pathlib.Path) -> GitRemote:
    """The sample on main; on `feature`, www's third address edited, api added, shop removed (one file)."""
    git = GitRemote(tmp_path)
    shutil.copytree(SAMPLE, git.work / "dns")
    git.commit("sample", {})
    git.cmd("checkout", "-q", "-b", "feature")
    web = (git.work / WEB).read_text()
    docs = [d for d in web.split("---\n") if "name: shop\n" not in d]
    edited = "---\n".join(docs).replace("    - 192.0.2.12\n", "    - 192.0.2.13\n") + API
    git.commit("edit www, add api, remove shop", {WEB: edited})
    git.cmd("checkout", "-q", "-b", "infra", "main")
    cluster = (git.work / "dns/infrastructure/cluster.yaml").read_text()
    git.commit("two secondaries", {"dns/infrastructure/cluster.yaml": cluster.replace(
        "  secondary:\n    replicas: 1\n", "  secondary:\n    replicas: 2\n")})
    return git


def _comment(git: GitRemote, head: str) -> str:
    result = clirun.main("plan", "dns", "--base", "main", "--head", head, "-o", "markdown", "--link-base", LINK_BASE,
                         "--detailed-exitcode", cwd=git.work)
    assert result.returncode == 2, result.stderr  # changes
    return result.stdout


def _html(markdown: str) -> str:
    return str(cmarkgfm.github_flavored_markdown_to_html(markdown, options=cmarkgfm.Options.CMARK_OPT_UNSAFE))


def _document_at(git: GitRemote, url: str) -> str:
    """The lines of the document a link points at: the file at the link's commit, from the linked line."""
    found = re.fullmatch(re.escape(LINK_BASE) + r"/([0-9a-f]{40})/(.+)#L(\d+)", url)
    assert found, url
    commit, path, line = found.groups()
    text = git.cmd("show", f"{commit}:{path}")
    return "\n".join(text.splitlines()[int(line) - 1:]).split("\n---")[0]


PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>
body {{ font-family: sans-serif; width: 900px; }} table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #d0d7de; padding: 4px 8px; }} code {{ background: #eff1f3; }}
</style></head><body>
<div id="comment">{body}</div>
<script>document.body.setAttribute("data-seen", JSON.stringify((function () {{ {script} }})()));</script>
</body></html>
"""


def _look(workdir: pathlib.Path, body: str, script: str, *, screenshot: pathlib.Path | None = None) -> Any:
    """What `script` (the body of a function returning JSON-able data) finds in a page holding the rendered
    comment, in headless Chromium (tests/support/browser.py); with `screenshot`, the page drawn there too."""
    workdir.mkdir(parents=True, exist_ok=True)
    n = len(list(workdir.glob("*.html")))
    page = workdir / f"comment-{n}.html"
    page.write_text(PAGE.format(body=body, script=script))
    chromium = browser.Chromium(workdir / f"chromium-{n}", width=1000, height=1400)
    if screenshot is not None:
        chromium.screenshot(page.as_uri(), screenshot)
    found = re.search(r'data-seen="([^"]*)"', chromium.dom(page.as_uri()))
    assert found, "the page's script did not run"
    return json.loads(html.unescape(found.group(1)))


def test_three_record_edits_come_first_counted_once_and_each_links_to_its_line(pull_request: GitRemote) -> None:
    git = pull_request
    main, feature = git.cmd("rev-parse", "main"), git.cmd("rev-parse", "feature")
    markdown = _comment(git, "feature")
    assert "**3 edits to the repository's CRs**: 1 added, 1 changed, 1 removed." in markdown
    assert "| DNS records (RRsets) | `+1` | `~1` | `-1` |" in markdown
    assert "| CRs of the repository | `+1` | `~1` | `-1` |" in markdown
    assert "| Generated Kubernetes objects | 0 | 0 | 0 |" in markdown
    rows = [line for line in markdown.splitlines() if line.startswith("| `")]
    assert [row.split(" | ")[:3] for row in rows[:3]] == [["| `+`", "`api`", "`A`"], ["| `-`", "`shop`", "`CNAME`"],
                                                          ["| `~`", "`www`", "`A`"]]
    assert "`192.0.2.10, 192.0.2.11, 192.0.2.12` -> `192.0.2.10, 192.0.2.11, 192.0.2.13`" in rows[2]
    assert all("dns-system/" in row for row in rows[3:])  # then the CRs, after every record
    assert markdown.count("`example.com.`") == 1  # the zone once, above its records
    page = _html(markdown)
    links = re.findall(r'<a href="([^"]+)"><code>([^<]+)</code></a>', page)
    assert len(links) == 6  # three records, three CRs
    for url, shown in links:
        path, line = shown.rsplit(":", 1)
        assert url.endswith(f"/dns/{path}#L{line}")
    by_name = {}
    for row in re.findall(r"<tr>(.*?)</tr>", page, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        if len(cells) == 5 and cells[0]:
            by_name[html.unescape(re.sub("<[^>]+>", "", cells[1]))] = re.search(r'href="([^"]+)"', cells[4]).group(1)
    assert sorted(by_name) == ["api", "shop", "www"]
    assert f"/{feature}/" in by_name["api"] and f"/{feature}/" in by_name["www"] and f"/{main}/" in by_name["shop"]
    assert "  name: api\n" in _document_at(git, by_name["api"])
    assert "  name: shop\n" in _document_at(git, by_name["shop"])  # removed: linked in the base
    assert "  name: www\n" in _document_at(git, by_name["www"])


LOOK = """
const rows = [...document.querySelectorAll("tr")].filter(r => r.querySelector("td"));
const text = el => el.textContent.trim();
return rows.map(r => ({
  cells: [...r.querySelectorAll("td")].map(text),
  top: r.getBoundingClientRect().top,
  visible: r.checkVisibility(),
  markWidth: r.querySelector("td code") ? r.querySelector("td code").getBoundingClientRect().width : 0,
  folded: !!r.closest("details"),
  open: r.closest("details") ? r.closest("details").open : null,
  links: [...r.querySelectorAll("a")].map(a => a.href),
}));
"""


def test_a_reviewer_sees_records_first_and_the_generated_objects_folded(pull_request: GitRemote,
                                                                       tmp_path: pathlib.Path) -> None:
    seen = _look(tmp_path / "look", _html(_comment(pull_request, "feature")), LOOK, screenshot=tmp_path / "comment.png")
    changes = [r for r in seen if r["cells"][0] in ("+", "~", "-")]
    records = [r for r in changes if len(r["cells"]) == 5]
    crs = [r for r in changes if "dns-system/" in r["cells"][1]]
    assert [r["cells"][1] for r in records] == ["api", "shop", "www"]
    assert all(r["visible"] and r["markWidth"] > 0 and len(r["links"]) == 1 for r in records + crs)
    assert max(r["top"] for r in records) < min(r["top"] for r in crs)  # above every Kubernetes object
    png = (tmp_path / "comment.png").read_bytes()
    assert browser.png_size(png) == (1000, 1400) and len(set(browser.png_pixels(png))) > 2  # a page was drawn

    infra = _look(tmp_path / "look", _html(_comment(pull_request, "infra")), LOOK)
    generated = [r for r in infra if r["folded"]]
    assert generated and all(not r["visible"] and r["open"] is False for r in generated)
    assert any(r["cells"][1].startswith("Deployment dns-system/dns-secondary-1") for r in generated)
    shown = [r for r in infra if not r["folded"] and r["cells"][0] in ("+", "~", "-")]
    assert shown and all(r["visible"] for r in shown)
    assert {r["cells"][1] for r in shown if len(r["cells"]) == 4} == {"Bind9Cluster dns-system/dns"}
    made_from = next(r for r in generated if r["cells"][1].startswith("Deployment dns-system/dns-secondary-1"))
    assert made_from["cells"][3].startswith("Bind9Cluster dns-system/dns (infrastructure/cluster.yaml:")


def test_an_rrset_of_several_records_links_to_the_one_edited(pull_request: GitRemote) -> None:
    git = pull_request
    git.cmd("checkout", "-q", "-b", "verify", "main")
    git.commit("a TXT beside the SPF one", {"dns/records/example-com/verify.yaml": """
        apiVersion: bindy.firestoned.io/v1beta1
        kind: TXTRecord
        metadata: {name: verify, namespace: dns-system, labels: {zone: example-com}}
        spec: {name: "@", text: ["google-site-verification=abc"]}
        """})
    row = next(line for line in _comment(git, "verify").splitlines() if line.startswith("| `~` | `@` | `TXT` |"))
    assert row.endswith(f"[`records/example-com/verify.yaml:1`]({LINK_BASE}/{git.head()}/dns/records/example-com/"
                        "verify.yaml#L1) |")  # not mail.yaml, where the SPF record the RRset also holds is
