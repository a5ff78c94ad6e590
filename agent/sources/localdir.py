"""A local directory as a revision source (dry runs and `sync DIR`).

Its files are the `*.yaml` / `*.yml` below the directory (hidden directories such as .git skipped).
Only regular files inside the directory are read, after resolving symbolic links: a link to a file
outside it, a device, a FIFO or a socket is listed as refused (agent/sources/boundary.py), never
opened. Reading opens with O_NOFOLLOW | O_NONBLOCK and checks with fstat that the file is still the
regular file that was listed, and reads no more than its listed size.
The revision is the HEAD commit when the directory is inside a Git work tree (with `-dirty` when
files below it are modified), else a digest of its YAML files' paths and contents. The digest reads
only what the loader may read (the size limits apply first, from the listed sizes) and hashes it in
chunks: a file over a limit is named by its size, and the loader refuses it.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pathlib
import stat
from collections.abc import Iterator
from typing import BinaryIO

from agent.errors import FileRefused, SourceError
from agent.model.limits import Limits, MiB
from agent.sources import boundary, kustomize

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = MiB  # what the digest reads at a time


@dataclasses.dataclass(frozen=True)
class LocalFile:
    root: pathlib.Path
    path: str  # relative, '/'-separated, printable (escaped when the name itself is refused)
    size: int = 0  # bytes, as listed
    real: pathlib.Path | None = None  # what is opened: the file, or a link's target inside root
    identity: tuple[int, int] = (0, 0)  # (st_dev, st_ino) when listed
    refused: str | None = None  # why it is not read
    blob: str | None = None  # a local file has no Git blob id

    def _open(self) -> BinaryIO:
        """The listed file, opened: still the regular file that was listed."""
        if self.refused is not None or self.real is None:
            raise FileRefused(self.refused or "not read")
        try:
            fd = os.open(self.real, _OPEN_FLAGS)
        except OSError as exc:
            raise SourceError(f"cannot open: {exc.strerror}") from exc
        handle = os.fdopen(fd, "rb")
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != self.identity:
            handle.close()
            raise SourceError("the file was replaced while the revision was being read; run again")
        return handle

    def read(self) -> bytes:
        with self._open() as handle:
            data = handle.read(self.size + 1)
        if len(data) > self.size:
            raise SourceError("the file grew while the revision was being read; run again")
        return data

    def chunks(self) -> Iterator[bytes]:
        """The file's bytes a chunk at a time (no more than its listed size)."""
        with self._open() as handle:
            left = self.size + 1
            while left > 0 and (chunk := handle.read(min(_CHUNK, left))):
                left -= len(chunk)
                yield chunk
        if left <= 0:
            raise SourceError("the file grew while the revision was being read; run again")


def _inspect(root: pathlib.Path, base: str, rel: str, full: str) -> LocalFile:
    """A listed candidate: readable (size, identity) or refused with the reason."""
    problem = boundary.name_problem(rel)
    if problem is not None:
        return LocalFile(root, boundary.shown(rel), refused=problem)
    try:
        st = os.lstat(full)
        real = full
        if stat.S_ISLNK(st.st_mode):
            link = os.readlink(full)
            real = os.path.realpath(full)
            if os.path.commonpath([base, real]) != base:
                return LocalFile(root, rel, refused=boundary.outside(link))
            try:
                st = os.stat(real)
            except FileNotFoundError:
                return LocalFile(root, rel, refused=f"not read: a symbolic link to a missing file "
                                 f"(-> {boundary.shown(link)!r})")
        if not stat.S_ISREG(st.st_mode):
            return LocalFile(root, rel, refused=boundary.not_regular(boundary.kind_of(st.st_mode)))
    except OSError as exc:
        return LocalFile(root, rel, refused=f"not read: {exc.strerror}")
    return LocalFile(root, rel, st.st_size, pathlib.Path(real), (st.st_dev, st.st_ino))


def _walk(root: pathlib.Path) -> Iterator[tuple[str, list[str], list[str]]]:
    """os.walk(root) top-down without recursion, so a tree thousands of directories deep is walked
    too: (directory, its subdirectories, its other entries); the caller may prune the
    subdirectories, and links to directories are never entered."""
    todo = [os.fspath(root)]
    while todo:
        top = todo.pop()
        try:
            with os.scandir(top) as found:
                entries = list(found)
        except OSError:  # as os.walk: a directory that cannot be listed is skipped
            continue
        dirs: list[str] = []
        others: list[str] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else others).append(entry.name)
        yield top, dirs, others
        todo.extend(os.path.join(top, d) for d in reversed(dirs)
                    if not os.path.islink(os.path.join(top, d)))


def files(root: pathlib.Path, *, every: bool = False) -> kustomize.Revision:
    """*.yaml / *.yml below root in a stable order, skipping hidden files and directories (`every`:
    every file but .git's); each either readable or refused (read() raises FileRefused naming the
    reason). A kustomization may build from the files of the Git work tree holding root (else of
    root alone): agent/sources/kustomize.py."""
    base = os.path.realpath(root)
    candidate = boundary.is_repository_file if every else boundary.is_candidate
    out = []
    for dirpath, dirnames, filenames in _walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git" if every or not d.startswith("."))
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]  # never descended
        for name in sorted(filenames + links):
            full = os.path.join(dirpath, name)
            rel = pathlib.Path(full).relative_to(root).as_posix()
            if candidate(rel):
                out.append(_inspect(root, base, rel, full))
    return kustomize.Revision(out, kustomize.Repository(lambda: _place(root)[1],
                                                        lambda: files(_place(root)[0], every=True)))


@functools.lru_cache(maxsize=16)
def _place(root: pathlib.Path) -> tuple[pathlib.Path, str]:
    """The top of the Git work tree holding root (root itself outside one), and root's path from
    there."""
    import git  # only for a kustomization

    try:
        top = pathlib.Path(git.Repo(root, search_parent_directories=True).working_dir).resolve()
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return root, ""
    rel = root.resolve().relative_to(top).as_posix()
    return top, "" if rel == "." else rel


def digest(root: pathlib.Path, limits: Limits) -> str:
    """A digest of the YAML files' paths and contents. Only what the loader may read is read (its
    limits apply first, from the listed sizes, in its order); a file it would not read is named by
    its size, and the loader refuses it (and with it the revision)."""
    h = hashlib.sha256()
    left = limits.max_revision_bytes
    for file in files(root):
        h.update(file.path.encode("utf-8", "surrogateescape") + b"\0")
        if file.refused is not None or file.size > min(limits.max_file_bytes, left):
            # as the loader: the files after it are not read either
            left = 0 if file.size > left else left
            h.update(f"<not read: {file.size} bytes>".encode() + b"\0")
            continue
        left -= file.size
        try:
            for chunk in file.chunks():
                h.update(chunk)
            h.update(b"\0")
        except SourceError as exc:
            h.update(f"<{exc}>".encode() + b"\0")
    return f"sha256:{h.hexdigest()[:16]}"


def revision(root: pathlib.Path, limits: Limits | None = None) -> str:
    """The revision a directory holds (`limits`: how much of it the loader may read)."""
    import git  # here: reading a directory needs no Git library

    try:
        repo = git.Repo(root, search_parent_directories=True)
        sha = repo.head.commit.hexsha
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
        return digest(root, limits or Limits())
    rel = root.resolve().relative_to(pathlib.Path(repo.working_dir).resolve()).as_posix()
    dirty = repo.is_dirty(untracked_files=True, path=rel if rel != "." else None)
    return sha + ("-dirty" if dirty else "")
