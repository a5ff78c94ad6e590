"""`bindy-agent report` of a commit leads with where the commit stands now: a commit whose first run was
partial and whose retry applied reads "applied", with its history (the first run, then the later ones)
below. A commit with one run reads as it always did."""

from __future__ import annotations

from agent.outcome import report


def _run(run_id: str, outcome: str, at: str, failures: list[str] | None = None) -> report.Report:
    change = {"action": "create", "layer": "records", "result": "applied" if outcome == "applied" else "failed: x",
              "target": {"zone": "example.com.", "name": "www.example.com.", "type": "A"}}
    return report.Report(run_id, "a" * 40, outcome, {"sha": "a" * 40, "subject": "Add www", "author": "Ada"}, at, 1.5,
                         [change], failures=failures or [])


def test_a_partial_commit_that_a_retry_applied_reads_applied_with_its_history_below() -> None:
    first = report.bounded(_run("run-1", "partial", "2026-01-01T10:00:00Z",
                                ["zone example.com. on dns/p-0: timed out"]).as_dict())
    retry = report.entry(_run("run-2", "applied", "2026-01-01T10:05:00Z"))
    doc = report.with_entry(first, retry)
    for text in (report.render_text(doc), report.note_text(doc)):
        lines = text.splitlines()
        assert lines[0] == 'bindy-agent: applied aaaaaaaaaaaa "Add www" (Ada)'
        assert lines[1] == ("now: applied, by run run-2 at 2026-01-01T10:05:00Z, the latest of 2 runs of this commit "
                            "(the first was partial; the history is below)")
        first_run = lines.index("First run run-1 at 2026-01-01T10:00:00Z: partial")
        assert lines.index("failed: zone example.com. on dns/p-0: timed out") > first_run
        assert any(line.startswith("later runs of this commit") or line.startswith("Later runs of this commit")
                   for line in lines[first_run:])
    assert report.parse(report.note_text(doc))["outcome"] == "partial"  # the JSON keeps the first run's


def test_a_commit_with_one_run_reads_as_before() -> None:
    doc = report.bounded(_run("run-1", "applied", "2026-01-01T10:00:00Z").as_dict())
    lines = report.render_text(doc).splitlines()
    assert lines[0] == 'bindy-agent: applied aaaaaaaaaaaa "Add www" (Ada)'
    assert lines[1].startswith("run run-1, 1.5 s: Kubernetes 0 created") and not any(
        line.startswith(("now:", "First run")) for line in lines)
