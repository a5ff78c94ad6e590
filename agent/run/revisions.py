"""The revision a run works on, from a Git remote or a local directory, behind one small interface.

    head()                  the newest revision, cheaply (Git: ls-remote; a directory: unknown)
    snapshot()              that revision's files and commit details
    superseded(old, new)    commits after `old` that `new` replaces unseen
    publish(reports)        attach the reports to their commits (Git notes; a directory: nowhere)
    bound(time_left)        for the current run: no call to the source outlasts what it has left
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import pathlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from agent.errors import SourceError
from agent.load.sourcefile import SourceFile
from agent.model import names
from agent.model.limits import Limits
from agent.outcome import notesignature, report
from agent.sources import git, localdir
from agent.sources.git import FetchedCommit, GitSource

log = logging.getLogger(__name__)


@dataclasses.dataclass
class Snapshot:
    revision: str
    files: Sequence[SourceFile]
    commit: dict[str, str]
    limits: Limits = dataclasses.field(default_factory=Limits)  # how much the loader may read of it


class RevisionSource(Protocol):
    label: str  # for messages: the URL or the directory
    lock_path: pathlib.Path  # two runs on the same source never overlap

    def head(self, *, fetch: bool = False) -> str | None: ...
    def snapshot(self) -> Snapshot: ...
    def at(self, sha: str) -> Snapshot | None: ...
    def superseded(self, old: str | None, new: str) -> list[str]: ...
    def commit(self, sha: str) -> dict[str, str]: ...
    def publish(self, reports: list[report.Report], *, push: bool) -> bool | None: ...
    def bound(self, time_left: Callable[[], float] | None) -> None: ...


def _lock_for(key: str) -> pathlib.Path:
    return names.CACHE_DIR / "locks" / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.lock"


class DirectoryRevisions:
    def __init__(self, root: pathlib.Path, *, revision: str | None = None,
                 limits: Limits | None = None) -> None:
        self.root = root
        self.label = str(root)
        self.lock_path = _lock_for(str(root.resolve()))
        self.revision = revision  # a name for this revision instead of the computed one
        self.limits = limits or Limits()

    def head(self, *, fetch: bool = False) -> str | None:
        return None  # always read: a directory has no cheap "nothing changed" signal

    def snapshot(self) -> Snapshot:
        revision = self.revision or localdir.revision(self.root, self.limits)
        return Snapshot(revision, localdir.files(self.root), {}, self.limits)

    def at(self, sha: str) -> Snapshot | None:
        return None  # a directory keeps no earlier revision

    def superseded(self, old: str | None, new: str) -> list[str]:
        return []

    def commit(self, sha: str) -> dict[str, str]:
        return {}

    def publish(self, reports: list[report.Report], *, push: bool) -> bool | None:
        return None

    def bound(self, time_left: Callable[[], float] | None) -> None:
        """Reading a directory needs no network: nothing to bound."""


class GitRevisions:
    def __init__(self, source: GitSource, *, report_key: bytes | None = None) -> None:
        self.source = source
        # signs every note (agent/outcome/notesignature.py); None: unsigned
        self.report_key = report_key
        self.label = source.url
        self.lock_path = source.workdir.with_name(source.workdir.name + ".lock")
        # fetched by `head(fetch=True)`, read by the next snapshot
        self._fetched: FetchedCommit | None = None

    def head(self, *, fetch: bool = False) -> str | None:
        """The remote's head (`git ls-remote`); with `fetch` (a webhook said the branch moved), the
        commit fetched at once, which the run's snapshot then reads: one git process less."""
        self._fetched = None  # what an earlier run fetched is never read
        if not fetch:
            return self.source.remote_head()
        self._fetched = self._fetch()
        return self._fetched.revision

    def bound(self, time_left: Callable[[], float] | None) -> None:
        """Every git command (ls-remote, fetch, notes fetch and push) ends within `time_left()`
        seconds, or its own timeout if sooner; None: its own timeout only. A run's start and end:
        what `head(fetch=True)` fetched is read by that run's snapshot only."""
        self.source.time_left = time_left or git.unbounded
        self._fetched = None

    def snapshot(self) -> Snapshot:
        snap, self._fetched = self._fetched, None
        snap = snap or self._fetch()
        return Snapshot(snap.revision, snap.files(), dataclasses.asdict(snap.commit), snap.limits)

    def _fetch(self) -> FetchedCommit:
        self.source.clear_stale_locks()  # safe: the run lock is held
        return self.source.fetch()  # the files are read from the commit's tree, never a work tree

    def at(self, sha: str) -> Snapshot | None:
        """An earlier commit (from the clone, else fetched by its id), or None when it cannot be
        had."""
        snap = self.source.earlier(sha)
        return Snapshot(snap.revision, snap.files(), dataclasses.asdict(snap.commit),
                        snap.limits) if snap else None

    def superseded(self, old: str | None, new: str) -> list[str]:
        return self.source.commits_between(old, new)

    def commit(self, sha: str) -> dict[str, str]:
        return dataclasses.asdict(self.source.commit(self.source.repo(), sha))

    def _noted(self, sha: str) -> dict[str, Any] | None:
        """The agent's note already on `sha`, which a later run adds to
        (agent/outcome/notesignature.py `extendable`); None: there is none, or it is not one to
        build on (it is replaced)."""
        stored = self.source.note(sha, limit=notesignature.MAX_NOTE_BYTES)
        if stored is None:
            return None
        doc = None
        if stored.unread is None:
            doc = notesignature.extendable(stored.data, sha=sha, key=self.report_key)
        if doc is None:
            unfit = ("it does not verify with the report key" if self.report_key
                     else "it is not a well-formed report")
            log.warning("the note on %s is not one the agent can add to (%s): replaced by this "
                        "run's report", sha[:12], stored.unread or unfit)
        return doc

    def publish(self, reports: list[report.Report], *, push: bool) -> bool | None:
        """Writes each report as notes, signed with the report key if there is one; pushes them if
        asked. A commit that already has the agent's note keeps it: this run is added as a dated
        entry, when it is worth one (agent/outcome/report.py). Failing to push is logged, not
        fatal."""
        try:
            self.source.fetch_notes()
        except SourceError as exc:
            log.warning("could not fetch existing notes: %s", exc)
        for item in reports:
            key, sha = self.report_key, item.revision
            earlier = self._noted(sha)
            if earlier is not None and earlier.get("outcome") in report.NOTHING_DONE \
                    and item.outcome not in report.NOTHING_DONE:
                # the commit had done nothing yet (rejected, superseded): this run is what it did
                earlier = None
            if earlier is None:
                summary = notesignature.sign(key, "summary", sha, report.to_note(item))
                full = notesignature.sign(key, "full", sha, report.to_full(item))
                self.source.add_note(sha, summary, full)
            elif report.noteworthy(earlier, item):  # the complete report stays the first run's
                note = report.note_text(report.with_entry(earlier, report.entry(item)))
                self.source.add_note(sha, notesignature.sign(key, "summary", sha, note))
        if not push:
            return None
        try:
            self.source.push_notes()
            return True
        except SourceError as exc:
            log.warning("could not push the reports (refs/notes/bindy-agent*): %s", exc)
            return False
