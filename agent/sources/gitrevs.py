"""Any revision of a Git repository, by name, read straight from its tree (`plan --base/--head`,
`report REV`).

    Revisions.local(DIR)      the work tree holding DIR (nothing is fetched; uncommitted files
                              ignored)
    Revisions.remote(source)  a remote, cloned or fetched into the cache: branches, tags, and any
                              other ref or commit fetched on demand (e.g. `pull/12/head`)
    resolve(REV)              the full commit SHA of a branch, tag, SHA (abbreviated too), HEAD~1
                              ...
    files(sha, path)          the commit's *.yaml / *.yml below `path`, as the loader reads them

Files come from the commit's tree, never from a checkout, exactly as a sync reads a fetched commit
(agent/sources/gittree.py): the same candidates, the same refusals, sizes known before reading.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re

import git

from agent.errors import SourceError
from agent.sources import boundary, gittree, kustomize
from agent.sources.git import GitSource


class UnknownRevision(SourceError):
    """The name given is no commit of the repository (a user's typo, not a failure to reach it)."""

    retryable = False


def _safe_label(url: str) -> str:
    return url.split("@", 1)[-1] if "://" in url and "@" in url else url


class Revisions:
    """One repository whose revisions are looked up by name."""

    def __init__(self, repo: git.Repo, label: str, source: GitSource | None = None) -> None:
        self.repo, self.label, self.source = repo, label, source

    @classmethod
    def local(cls, where: pathlib.Path) -> tuple[Revisions, str]:
        """The work tree holding `where`, and `where`'s path inside it ("" for the top)."""
        try:
            repo = git.Repo(where, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
            raise SourceError(f"{where}: not inside a Git work tree (give --repo URL, or "
                              "--base-dir DIR to compare two directories)") from exc
        top = pathlib.Path(repo.working_tree_dir or ".").resolve()
        rel = where.resolve().relative_to(top).as_posix()
        return cls(repo, str(top)), "" if rel == "." else rel

    @classmethod
    def remote(cls, source: GitSource) -> Revisions:
        """The repository at `source.url`, its branches and tags fetched into the cache."""
        try:
            repo = source.repo()
        except OSError as exc:
            raise SourceError(f"cannot keep a clone in {source.cache}: {exc}") from exc
        revisions = cls(repo, _safe_label(source.url), source)
        revisions._fetch("+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*")
        return revisions

    def _fetch(self, *refspecs: str) -> None:
        assert self.source is not None
        try:
            with self.repo.git.custom_environment(**self.source.env()):
                self.repo.git.execute(["git", "fetch", "--quiet", "--force", "--", "origin",
                                       *refspecs],
                                      kill_after_timeout=self.source.timeout)
        except git.GitCommandError as exc:
            detail = " ".join(str(exc.stderr or exc).replace("stderr:", "").split())[:300]
            raise SourceError(f"git fetch {self.label}: {detail}") from exc

    def _commit_of(self, name: str) -> str | None:
        try:
            return str(self.repo.git.rev_parse("--verify", "--quiet", "--end-of-options",
                                               f"{name}^{{commit}}")).strip()
        except git.GitCommandError:
            return None

    def resolve(self, rev: str) -> str:
        """The commit `rev` names; a SourceError that says so when it names none."""
        if not rev or rev.startswith("-"):
            raise UnknownRevision(f"{rev!r} is not a revision")
        found = self._commit_of(rev) or (self._commit_of(f"origin/{rev}") if self.source else None)
        if found is None and self.source is not None:
            try:
                self._fetch(rev)
                found = self._commit_of("FETCH_HEAD")
            except SourceError:
                found = None
        if found is None:
            raise UnknownRevision(f"unknown revision {rev!r} in {self.label} (give a branch, a tag "
                                  f"or a commit SHA)"
                                  + ("" if self.source else self._how_to_fetch(rev)))
        return found

    def has(self, rev: str) -> bool:
        """Whether `rev` names a commit this repository holds."""
        return not rev.startswith("-") and self._commit_of(rev) is not None

    def fetch_from_origin(self, rev: str, *, timeout: float = 300) -> str:
        """For a work tree that lacks `rev` (a shallow CI checkout holds one commit): fetches that
        one commit or branch from its remote `origin`, without history; its SHA (SourceError: git's
        message)."""
        if rev.startswith("-"):
            raise UnknownRevision(f"{rev!r} is not a revision")
        branch = rev.removeprefix("origin/")
        refspec = (f"+refs/heads/{branch}:refs/remotes/origin/{branch}" if rev.startswith("origin/")
                   else rev)
        try:
            self.repo.git.execute(["git", "fetch", "--quiet", "--no-tags", "--depth=1", "--",
                                   "origin", refspec],
                                  kill_after_timeout=timeout)
        except git.GitCommandError as exc:
            detail = " ".join(str(exc.stderr or exc).replace("stderr:", "").split())[:300]
            raise SourceError(f"git fetch origin {rev}: {detail}") from exc
        found = self._commit_of("FETCH_HEAD")
        if found is None:
            raise UnknownRevision(f"git fetch origin {rev}: fetched no commit")
        return found

    def _how_to_fetch(self, rev: str) -> str:
        """How to get a revision a local clone lacks: a CI checkout is shallow and holds one
        branch."""
        if rev.startswith("origin/"):
            branch = rev.removeprefix("origin/")
            fetch = (f"git fetch --no-tags --depth=1 origin "
                     f"+refs/heads/{branch}:refs/remotes/origin/{branch}")
        elif re.fullmatch(r"[\w.][\w./-]*", rev):
            fetch = f"git fetch --no-tags --depth=1 origin {rev}" + ("" if _hex(rev) else f":{rev}")
        else:  # HEAD~3, main^: history, not a name to fetch
            fetch = "git fetch --deepen=50"
        try:
            shallow = str(self.repo.git.rev_parse("--is-shallow-repository")).strip() == "true"
        except git.GitCommandError:
            shallow = False
        if not shallow:
            return f"; fetch it first: {fetch}" if rev.startswith("origin/") else ""
        return (f"; this clone is shallow (a CI checkout fetches one commit): fetch the revision "
                f"first ({fetch}), or the whole history (git fetch --unshallow; on GitHub Actions: "
                "actions/checkout with fetch-depth: 0; on GitLab CI: the variable GIT_DEPTH: 0)")

    def files(self, sha: str, path: str = "") -> kustomize.Revision:
        """The commit's YAML files below `path`, read from its tree as a sync reads them
        (agent/sources/gittree.py); a kustomization there may build from the commit's other YAML
        files (agent/sources/kustomize.py)."""
        treeish = f"{sha}:{path}" if path else sha
        if self._kind(treeish) != ("tree" if path else "commit"):
            raise SourceError(f"{self.label}@{sha[:12]}: no directory {path!r} in the commit")
        every = boundary.is_repository_file  # a kustomization may name any file of the commit
        return kustomize.within(gittree.files(self.repo, treeish), path,
                                lambda: gittree.files(self.repo, sha, candidate=every))

    def holds(self, sha: str, path: str) -> bool:
        """Whether the commit has the directory `path` ("" : its top)."""
        return not path or self._kind(f"{sha}:{path}") == "tree"

    def _kind(self, spec: str) -> str | None:
        try:
            return str(self.repo.git.cat_file("-t", "--", spec)).strip()
        except git.GitCommandError:
            return None

def _hex(value: str) -> bool:
    return all(c in "0123456789abcdef" for c in value.lower())


def noted_revision(source: GitSource, rev: str | None, notes_ref: str) -> str:
    """The commit `report REV` means: the branch head when REV is absent; a full SHA as it is; an
    abbreviated SHA among the commits that carry a report; else a branch or tag of the remote."""
    if not rev or rev == "HEAD":
        return source.remote_head()
    if rev.startswith("-"):
        raise UnknownRevision(f"{rev!r} is not a revision")
    if len(rev) == 40 and _hex(rev):
        return rev.lower()
    if len(rev) >= 4 and _hex(rev):
        try:
            listed = str(source.repo().git.notes("--ref", notes_ref, "list"))
        except git.GitCommandError:
            listed = ""
        matches = sorted({line.split()[-1] for line in listed.splitlines()
                          if line.split()[-1].startswith(rev.lower())})
        if len(matches) > 1:
            raise UnknownRevision(f"{rev!r} is ambiguous: {len(matches)} reported commits start "
                              f"with it ({', '.join(m[:12] for m in matches[:5])}); give more of "
                              f"the SHA")
        if matches:
            return matches[0]
    try:
        return dataclasses.replace(source, branch=rev, ref=None).remote_head()
    except SourceError as exc:
        if "has no branch or tag" not in str(exc):
            raise  # the remote could not be asked: say that, not "unknown"
        raise UnknownRevision(f"unknown revision {rev!r}: no commit with a report starts with it, "
                          f"and {_safe_label(source.url)} has no branch or tag of that "
                          f"name") from None
