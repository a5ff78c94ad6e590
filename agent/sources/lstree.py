"""`git ls-tree -r -t` of a commit's tree, bounded: every path below it, with its mode, kind and
object id (agent/sources/gittree.py reads trees in process and asks this only of a tree git would
refuse)."""

from __future__ import annotations

from typing import Any, NamedTuple

import git

from agent.errors import SourceError

# paths (files and folders) a revision's tree may list: a legitimate one lists thousands; a tree of
# trees that name the same trees again and again (a "tree bomb", a few KB) lists billions
MAX_PATHS = 1_000_000
# what `git ls-tree` may print of one (at most ~250 bytes a path)
MAX_LISTING_BYTES = 256 * 1024 * 1024


class Entry(NamedTuple):  # a tuple: hashed and compared in C, a thousand of them per listing
    mode: str
    kind: str  # blob / commit
    blob: str


class TooMany(Exception):
    """A tree lists more than MAX_PATHS paths (or ls-tree prints more than MAX_LISTING_BYTES)."""


def list_tree(repo: git.Repo, treeish: str) -> tuple[dict[str, Entry], dict[str, str]]:
    """Every blob and submodule below `treeish`, by path relative to it; and every tree below it,
    its id by path. Raises TooMany past MAX_LISTING_BYTES of output (git is stopped there)."""
    process = repo.git.execute(["git", "ls-tree", "-r", "-t", "-z", "--end-of-options", treeish],
                               as_process=True)
    proc: Any = process.proc
    try:
        raw = proc.stdout.read(MAX_LISTING_BYTES + 1)
        if len(raw) > MAX_LISTING_BYTES:
            proc.kill()
            raise TooMany(treeish)
        errors = proc.stderr.read().decode("utf-8", "replace").strip()
        if proc.wait() != 0:
            raise SourceError(f"cannot list {treeish}: {errors or 'git ls-tree failed'}")
    finally:
        proc.stdout.close()
        proc.stderr.close()
        proc.wait()
    entries: dict[str, Entry] = {}
    trees: dict[str, str] = {}
    for record in bytes(raw).split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, blob = meta.decode().split()
        if kind == "tree":
            trees[path.decode("utf-8", "surrogateescape")] = blob
        else:
            entries[path.decode("utf-8", "surrogateescape")] = Entry(mode, kind, blob)
    return entries, trees
