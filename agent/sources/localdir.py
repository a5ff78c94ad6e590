"""A local directory as a revision source (dry runs and `sync DIR`).

Its files are the `*.yaml` / `*.yml` below the directory (hidden directories such as .git skipped).
The revision is the HEAD commit when the directory is inside a Git work tree (with `-dirty` when
files below it are modified), else a digest of its YAML files' paths and contents.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pathlib

import git


@dataclasses.dataclass(frozen=True)
class LocalFile:
    root: pathlib.Path
    path: str  # relative, '/'-separated

    def read(self) -> bytes:
        return (self.root / self.path).read_bytes()


def files(root: pathlib.Path) -> list[LocalFile]:
    """*.yaml / *.yml below root in a stable order, skipping hidden files and directories."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith((".yaml", ".yml")) and not name.startswith("."):
                out.append(LocalFile(root, pathlib.Path(dirpath, name).relative_to(root).as_posix()))
    return out


def digest(root: pathlib.Path) -> str:
    h = hashlib.sha256()
    for file in files(root):
        h.update(file.path.encode() + b"\0")
        h.update(file.read() + b"\0")
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
