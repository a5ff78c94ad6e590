"""The agent's reports as Git notes on the commits it applied (refs/notes/bindy-agent, and the
complete JSON under refs/notes/bindy-agent-full): fetched and merged with what a failed push left
behind, written byte for byte, pushed, and read back within a size bound. The notes side of a
GitSource (agent/sources/git.py)."""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import tempfile
from typing import Any

import git

from agent.errors import SourceError

log = logging.getLogger("agent.sources.git")  # the source's logger: its notes log as it does
NOTES_REF = "refs/notes/bindy-agent"
FULL_NOTES_REF = "refs/notes/bindy-agent-full"  # the complete JSON of each report
NOTES_REFS = (NOTES_REF, FULL_NOTES_REF)
REMOTE_NOTES = "refs/notes/origin/bindy-agent"  # what the remote had, before merging
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclasses.dataclass(frozen=True)
class StoredNote:
    """A report note as Git stores it: its bytes, or why they were not read (too large, not a
    blob)."""

    data: bytes
    unread: str | None = None


def stderr_of(exc: git.GitCommandError) -> str:
    """What git said when a command failed, on one line and at most 500 characters."""
    return " ".join(str(exc.stderr or exc.stdout or exc).replace("stderr:", "").split())[:500]


class Notes:
    """The notes of a repository source; GitSource gives the clone (`repo`) and runs git
    (`_git`)."""

    def repo(self) -> git.Repo:
        raise NotImplementedError

    def _git(self, repo: git.Repo | None, *args: str) -> str:
        raise NotImplementedError

    @staticmethod
    def _object_type(repo: git.Repo, spec: str) -> str | None:
        raise NotImplementedError

    def _identity(self, repo: git.Repo) -> Any:
        return repo.git.custom_environment(GIT_AUTHOR_NAME="bindy-agent",
                                           GIT_AUTHOR_EMAIL="bindy-agent@localhost",
                                           GIT_COMMITTER_NAME="bindy-agent",
                                           GIT_COMMITTER_EMAIL="bindy-agent@localhost")

    def _local_refs(self, repo: git.Repo) -> list[str]:
        out = repo.git.for_each_ref("--format=%(refname)", *NOTES_REFS)
        return [line for line in str(out).splitlines() if line]

    def fetch_notes(self, *, keep_local: bool = True) -> None:
        """Brings the remote's reports in, keeping local ones a failed push left behind (merged);
        with `keep_local=False` (a reader: `report`), the local refs become exactly the remote's."""
        repo = self.repo()
        self._git(repo, "fetch", "--quiet", "--prune", "--", "origin",
                  f"+{NOTES_REF}*:{REMOTE_NOTES}*")
        local = set(self._local_refs(repo))
        for ref in NOTES_REFS:
            remote = ref.replace(NOTES_REF, REMOTE_NOTES, 1)
            # anyone who can push can write these refs: one that is no commit is left out, and a
            # merge that fails is an error of this step, not of the run (the next push replaces it)
            present = bool(repo.git.for_each_ref(remote))
            usable = present and self._object_type(repo, remote) == "commit"
            if present and not usable:
                log.warning("%s on the remote is not a commit; ignored", ref)
            try:
                if not usable:
                    if not keep_local and ref in local:
                        repo.git.update_ref("-d", ref)
                    continue
                if ref not in local or not keep_local:
                    repo.git.update_ref("--", ref, remote)
                    continue
                # a note this run wrote wins over an older one for the same commit
                with self._identity(repo):
                    repo.git.notes("--ref", ref, "merge", "--quiet", "--strategy=ours", "--",
                                   remote)
            except git.GitCommandError as exc:
                raise SourceError(f"cannot merge the remote's {ref}: {stderr_of(exc)}") from exc

    def add_note(self, sha: str, text: str, full: str | None = None) -> None:
        """Attaches a report to a commit, byte for byte (a blob given with -C: git does not clean it
        up, so its signature still matches). The text goes through a file, never the command
        line."""
        repo = self.repo()
        for ref, body in ((NOTES_REF, text), (FULL_NOTES_REF, full)):
            if body is None:
                continue
            with tempfile.NamedTemporaryFile("wb", suffix=".note", dir=repo.git_dir,
                                             delete=False) as f:
                f.write(body.encode())
            try:
                blob = str(repo.git.hash_object("-w", "--", f.name)).strip()
                with self._identity(repo):
                    repo.git.notes("--ref", ref, "add", "--force", "-C", blob, "--", sha)
            except git.GitCommandError as exc:
                raise SourceError(f"cannot write the report note on {sha[:12]} ({ref}): "
                                  f"{stderr_of(exc)}") from exc
            finally:
                os.unlink(f.name)

    def push_notes(self) -> None:
        refs = [f"+{ref}:{ref}" for ref in self._local_refs(self.repo())]
        if refs:
            self._git(self.repo(), "push", "--quiet", "--", "origin", *refs)

    def note(self, sha: str, *, full: bool = False, limit: int) -> StoredNote | None:
        """The note on commit `sha` as stored, read only if at most `limit` bytes (anyone who can
        push can write one, of any size); None if there is none."""
        if not _SHA.fullmatch(sha):
            return None
        repo = self.repo()
        try:
            blob = str(repo.git.notes("--ref", FULL_NOTES_REF if full else NOTES_REF, "list", "--",
                                      sha)).strip()
            kind = str(repo.git.cat_file("-t", "--", blob)).strip()
            size = int(str(repo.git.cat_file("-s", "--", blob)).strip())
        except (git.GitCommandError, ValueError):
            return None
        if kind != "blob":
            return StoredNote(b"", f"the note is a {kind}, not a blob")
        if size > limit:
            return StoredNote(b"", f"the note is {size:,} bytes, more than the {limit:,} a report "
                                   f"may have")
        try:
            data = repo.git.execute(["git", "cat-file", "blob", "--end-of-options", blob],
                                    stdout_as_string=False, strip_newline_in_stdout=False)
        except git.GitCommandError as exc:
            raise SourceError(f"cannot read the note on {sha[:12]}: {stderr_of(exc)}") from exc
        return StoredNote(bytes(data))
