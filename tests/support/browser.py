"""A page looked at in a real browser: headless Chromium (Debian's `chromium`) loads an HTML file, a
script of the test measures what a reader would see (what is visible, where, what links where), and
the answer comes back through the DOM Chromium prints. Nothing leaves the machine: no network, a new
empty profile per look."""

from __future__ import annotations

import html
import json
import pathlib
import re
import subprocess
import tempfile
from typing import Any

from tests.support.procs import require

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=5000")
PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>
body {{ font-family: sans-serif; width: 900px; }} table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #d0d7de; padding: 4px 8px; }} code {{ background: #eff1f3; }}
</style></head><body>
<div id="comment">{body}</div>
<script>
document.body.setAttribute("data-seen", JSON.stringify((function () {{ {script} }})()));
</script></body></html>
"""


def look(body: str, script: str, *, screenshot: pathlib.Path | None = None) -> Any:
    """What `script` (the body of a function, returning JSON-able data) finds in a page holding `body`."""
    chromium = require("chromium", component="the browser the pull-request comment is looked at in")
    with tempfile.TemporaryDirectory(prefix="bindy-browser-") as tmp:
        page = pathlib.Path(tmp) / "comment.html"
        page.write_text(PAGE.format(body=body, script=script))
        argv = [chromium, *FLAGS, f"--user-data-dir={tmp}/profile"]
        if screenshot is not None:
            subprocess.run([*argv, f"--screenshot={screenshot}", "--window-size=1000,1400", page.as_uri()],
                           capture_output=True, timeout=120, check=False)
        done = subprocess.run([*argv, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120,
                              check=False)
    found = re.search(r'data-seen="([^"]*)"', done.stdout)
    assert found, f"chromium printed no page (exit {done.returncode}): {done.stderr[-2000:]}"
    return json.loads(html.unescape(found.group(1)))
