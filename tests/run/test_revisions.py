"""A run a webhook started (the branch moved) fetches at once instead of asking the remote's head
first with `git ls-remote`: one git process less before a push is planned (issue 28, closer to the
wire). What it fetched is read by that run's snapshot only; a later run never reads it."""

from __future__ import annotations

import pathlib
import subprocess
from collections.abc import Iterator

import pytest

from agent.run.revisions import GitRevisions
from agent.sources.git import GitSource
from tests.support.gitremote import GitRemote

TXT = ("apiVersion: bindy.firestoned.io/v1beta1\nkind: TXTRecord\nmetadata: {name: a, namespace: dns}\n"
       "spec: {name: t.example.com., text: [\"%s\"]}\n")


@pytest.fixture
def verbs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The git verb of every git process started."""
    seen: list[str] = []
    original = subprocess.Popen.__init__

    def record(self: subprocess.Popen[bytes], args: object, *rest: object, **kwargs: object) -> None:
        argv = [str(a) for a in args] if isinstance(args, list | tuple) else [str(args)]
        if argv and argv[0].endswith("git") and len(argv) > 1:
            seen.append(argv[1])
        original(self, args, *rest, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(subprocess.Popen, "__init__", record)
    yield seen


def test_a_pushed_run_fetches_once_and_asks_no_ls_remote(tmp_path: pathlib.Path, verbs: list[str]) -> None:
    remote = GitRemote(tmp_path / "git")
    remote.commit("one", {"a.yaml": TXT % "1"})
    remote.push()
    revisions = GitRevisions(GitSource(remote.url, tmp_path / "cache"))
    revisions.snapshot()  # the clone exists, as in a long-running agent
    new = remote.commit("two", {"a.yaml": TXT % "2"})
    remote.push()
    verbs.clear()
    assert revisions.head(fetch=True) == new
    snap = revisions.snapshot()
    assert snap.revision == new and b'"2"' in snap.files[0].read()
    assert "ls-remote" not in verbs and verbs.count("fetch") == 1, verbs


def test_what_a_pushed_run_fetched_is_not_read_by_a_later_run(tmp_path: pathlib.Path) -> None:
    remote = GitRemote(tmp_path / "git")
    first = remote.commit("one", {"a.yaml": TXT % "1"})
    remote.push()
    revisions = GitRevisions(GitSource(remote.url, tmp_path / "cache"))
    assert revisions.head(fetch=True) == first  # the run found nothing new: no snapshot was read
    later = remote.commit("two", {"a.yaml": TXT % "2"})
    remote.push()
    assert revisions.head() == later
    assert revisions.snapshot().revision == later


def test_what_a_webhook_run_fetched_is_not_read_after_its_run(tmp_path: pathlib.Path) -> None:
    remote = GitRemote(tmp_path / "git")
    first = remote.commit("first", {"dns/a.yaml": "x: 1\n"})
    remote.push()
    revisions = GitRevisions(GitSource(remote.url, tmp_path / "cache"))
    revisions.bound(lambda: 60.0)  # a webhook run starts (agent/run/runhold.py)
    assert revisions.head(fetch=True) == first  # ... finds the head unchanged and stops
    revisions.bound(None)  # its end
    second = remote.commit("second", {"dns/a.yaml": "x: 2\n"})
    remote.push()
    assert revisions.snapshot().revision == second  # what a standby's follow reads next
