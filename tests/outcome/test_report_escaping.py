"""`bindy-agent report` shows a hostile commit subject and a hostile note as visible escapes."""

from __future__ import annotations

import dataclasses
import pathlib

from agent.model.problems import Origin, Problem
from agent.outcome import report
from agent.sources.git import GitSource
from tests.support import clirun
from tests.support.escapes import OSC8, OSC8_SHOWN, _clean
from tests.support.gitremote import GitRemote


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
