"""What a fetch brought, read in process through the repository's open `git cat-file` instead of a
git process of its own (about 5 ms each on a loaded machine, issue 28): the commit FETCH_HEAD names,
and the commits a new head adds on top of an old one. Each answers None where git is to decide.
"""

from __future__ import annotations

import pathlib
import re

import git

_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def fetched(repo: git.Repo) -> str | None:
    """The commit the last fetch brought (the first line of FETCH_HEAD), when it names a commit the
    repository has; None otherwise (a tag to peel, no FETCH_HEAD): `git rev-parse` decides."""
    try:
        first = (pathlib.Path(repo.git_dir) / "FETCH_HEAD").read_text().split("\t", 1)[0].strip()
        if _SHA.fullmatch(first) and repo.odb.info(bytes.fromhex(first)).type == b"commit":
            return first
    except (OSError, ValueError, git.GitCommandError, git.BadName, git.BadObject):
        pass
    return None


CHAIN_LIMIT = 64  # commits walked in process before `git rev-list` is asked instead


def chain(repo: git.Repo, old: str, new: str) -> list[str] | None:
    """`rev-list old..new` minus `new`, oldest first, when `new` reaches `old` through commits of
    one parent each (a branch pushed onto: then that chain is exactly the commits `old` lacks),
    walked with the repository's open `git cat-file`; None for anything else (a merge, a root, a
    commit not fetched, a longer chain): `git rev-list` decides."""
    if not _SHA.fullmatch(old) or not _SHA.fullmatch(new):
        return None
    found: list[str] = []
    try:
        shallow = pathlib.Path(repo.git_dir, "shallow")
        # where the clone's history ends
        edge = set(shallow.read_text().split()) if shallow.exists() else set()
        repo.odb.info(bytes.fromhex(old))  # `old` is in the clone (else rev-list names nothing)
        commit = repo.commit(new)
        for _ in range(CHAIN_LIMIT):
            if commit.hexsha in edge or len(commit.parents) != 1:
                return None
            commit = commit.parents[0]
            if commit.hexsha == old:
                return found[::-1]
            found.append(commit.hexsha)
    except (ValueError, OSError, git.GitCommandError, git.BadName, git.BadObject):
        return None
    return None
