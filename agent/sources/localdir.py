"""A local directory as a revision source (dry runs and `sync DIR`).

The revision is the HEAD commit when the directory is inside a Git work tree (with `-dirty` when
files below it are modified), else a digest of its YAML files' paths and contents.
"""

from __future__ import annotations

import hashlib
import pathlib

import git

from agent import loader


def digest(root: pathlib.Path) -> str:
    h = hashlib.sha256()
    for path in loader.iter_files(root):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return f"sha256:{h.hexdigest()[:16]}"


def revision(root: pathlib.Path) -> str:
    try:
        repo = git.Repo(root, search_parent_directories=True)
        sha = repo.head.commit.hexsha
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        return digest(root)
    rel = root.resolve().relative_to(pathlib.Path(repo.working_dir).resolve()).as_posix()
    dirty = repo.is_dirty(untracked_files=True, path=rel if rel != "." else None)
    return sha + ("-dirty" if dirty else "")

