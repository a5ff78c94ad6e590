"""Progress on long runs: on a terminal (a real pty) the counts appear in place; a pipe gets nothing."""

from __future__ import annotations

import io
import pathlib
import shutil
import subprocess
import sys

from agent.cli import progress
from tests.conftest import ROOT, SAMPLE
from tests.support import tty


def _bulk(root: pathlib.Path, count: int) -> pathlib.Path:
    shutil.copytree(SAMPLE, root)
    bulk = root / "records" / "bulk"
    bulk.mkdir()
    for i in range(count):
        (bulk / f"h{i:05d}.yaml").write_text(
            f"apiVersion: bindy.firestoned.io/v1beta1\nkind: ARecord\nmetadata:\n  name: h{i}\n"
            f"  namespace: dns-system\n  labels: {{zone: example-com}}\nspec:\n  name: h{i}\n"
            f"  ipv4Addresses: [10.0.{i // 250}.{i % 250}]\n")
    return root


def test_plan_counts_files_on_a_terminal_and_the_plan_stays_clean(tmp_path: pathlib.Path) -> None:
    root = _bulk(tmp_path / "repo", 1200)
    result = tty.run([sys.executable, "-m", "agent", "plan", str(root)], cwd=ROOT)
    assert result.returncode == 0
    assert "loaded 1,209/1,209 files" in result.terminal  # 9 sample files + 1,200
    assert "\r\x1b[Kloaded " in result.terminal  # rewritten in place
    assert "loaded" not in result.stdout and result.stdout.endswith("to delete.\n")


def test_a_pipe_gets_no_progress(tmp_path: pathlib.Path) -> None:
    root = _bulk(tmp_path / "repo", 50)
    piped = subprocess.run([sys.executable, "-m", "agent", "plan", str(root)], capture_output=True, text=True,
                           cwd=ROOT)
    assert piped.returncode == 0 and piped.stderr == ""


def test_a_quick_step_is_erased_and_a_long_one_keeps_its_count() -> None:
    out = io.StringIO()
    report = progress.Reporter(out, enabled=True)
    report("observed", "zones", 1, 2)
    report("observed", "zones", 2, 2)
    report.done()
    assert out.getvalue() == "\r\x1b[Kobserved 1/2 zones\r\x1b[Kobserved 2/2 zones\r\x1b[K"
    out.seek(0), out.truncate()
    report("applied", "zones", 300, 1000)
    report.started -= progress.KEEP  # as if the step had run that long
    report("applied", "zones", 1000, 1000)
    report("loaded", "files", 10_000, None)  # a new step ends the previous one
    assert out.getvalue() == "\r\x1b[Kapplied 300/1,000 zones\r\x1b[Kapplied 1,000/1,000 zones\n" \
                             "\r\x1b[Kloaded 10,000 files"


def test_a_disabled_reporter_writes_nothing() -> None:
    out = io.StringIO()
    report = progress.Reporter(out, enabled=False)
    report("applied", "zones", 1, 1)
    report.done()
    assert out.getvalue() == ""


def test_the_progress_line_shows_its_text_escaped() -> None:
    stream = io.StringIO()
    reporter = progress.Reporter(stream, enabled=True, prefix="head\x1b[2J: ")
    reporter("loaded", "files\u202e", 3, None)
    assert stream.getvalue() == "\r\x1b[Khead\\x1b[2J: loaded 3 files\\u202e"
