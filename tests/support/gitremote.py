"""A real bare Git repository and a working clone that commits and pushes to it."""

from __future__ import annotations

import pathlib
import textwrap

from tests.support.procs import require, run


class GitRemote:
    def __init__(self, workdir: pathlib.Path) -> None:
        self.git = require("git", component="git")
        self.bare = workdir / "remote.git"
        self.work = workdir / "work"
        run([self.git, "init", "-q", "--bare", "-b", "main", str(self.bare)])
        run([self.git, "init", "-q", "-b", "main", str(self.work)])
        self.cmd("config", "user.name", "Test Author")
        self.cmd("config", "user.email", "author@example.com")
        self.cmd("remote", "add", "origin", str(self.bare))

    @property
    def url(self) -> str:
        return self.bare.as_uri()

    def cmd(self, *args: str) -> str:
        return run([self.git, "-C", str(self.work), *args]).strip()

    def commit(self, message: str, files: dict[str, str | None], *, amend: bool = False) -> str:
        """Writes (or, for None, deletes) files, commits them, and returns the new commit's sha."""
        for rel, text in files.items():
            path = self.work / rel
            if text is None:
                path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip("\n"))
        self.cmd("add", "-A")
        self.cmd("commit", "-q", "--allow-empty", *(["--amend"] if amend else []), "-m", message)
        return self.head()

    def head(self) -> str:
        return self.cmd("rev-parse", "HEAD")

    def push(self, *, force: bool = False) -> None:
        self.cmd("push", "-q", *(["--force"] if force else []), "origin", "HEAD:main")

    def rewrite_last(self, message: str, files: dict[str, str | None]) -> str:
        """Replaces the last commit (history rewrite); push it with push(force=True)."""
        return self.commit(message, files, amend=True)

    def note_seen_by_a_fresh_clone(self, dest: pathlib.Path, sha: str) -> str:
        """The agent's note on `sha` as a user sees it: a new clone of the remote, notes fetched."""
        run([self.git, "clone", "-q", self.url, str(dest)])
        run([self.git, "-C", str(dest), "fetch", "-q", "origin", "refs/notes/*:refs/notes/*"])
        return run([self.git, "-C", str(dest), "notes", "--ref=bindy-agent", "show", sha])
