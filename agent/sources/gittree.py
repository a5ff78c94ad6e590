"""A commit's files, straight from its tree: no work tree, so nothing outside the commit is read.

    git ls-tree -r -z <commit>[:<path>]          -> every entry: mode, type, blob id, path
    git cat-file --batch-check (persistent)      -> a blob's size, only when the loader asks for it
    git cat-file --batch (GitPython, persistent) -> a blob's bytes, only when the loader reads it

A symbolic link (mode 120000) is a blob holding its target's path; it is resolved inside the tree
(links to links, `..`), and the file takes the target blob's id and size. A link leaving the
directory of CRs, to a directory or to nothing is refused; a submodule is skipped with a warning.
The loader checks a file's size against its limits before a byte is read. Sizes are asked per
blob, not listed: `ls-tree --long` opens every blob of the tree to list its size (20-40 ms at
1,000 files), where a long-running agent reads only the few files a commit changed.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import NamedTuple, TypeVar

import git

from agent.errors import FileRefused, SourceError
from agent.sources import boundary

_LINK, _SUBMODULE = "120000", "160000"
T = TypeVar("T")


class Entry(NamedTuple):  # a tuple: hashed and compared in C, a thousand of them per listing
    mode: str
    kind: str  # blob / commit
    blob: str


@dataclasses.dataclass(frozen=True)
class GitFile:
    """One file of a commit, as the loader sees it (agent.load.loader.SourceFile)."""

    path: str  # relative to the directory of CRs, '/'-separated, printable
    blob: str  # id of the content's blob (a link's target blob for a symbolic link); "" if refused
    known_size: int | None = 0  # None: asked of the repository when first needed
    refused: str | None = None
    warning: bool = False  # refused harmlessly (a skipped submodule)
    reader: Callable[[str], bytes] | None = dataclasses.field(default=None, repr=False, compare=False)
    sizer: Callable[[str], int] | None = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def size(self) -> int:
        """The blob's size in bytes, known before it is read."""
        if self.known_size is None:
            assert self.sizer is not None
            object.__setattr__(self, "known_size", self.sizer(self.blob))
        return self.known_size or 0

    def read(self) -> bytes:
        if self.refused is not None or self.reader is None:
            raise FileRefused(self.refused or "not read", warning=self.warning)
        return self.reader(self.blob)


def list_tree(repo: git.Repo, treeish: str) -> dict[str, Entry]:
    """Every blob and submodule below `treeish`, by path relative to it."""
    try:
        raw = repo.git.execute(["git", "ls-tree", "-r", "-z", treeish], stdout_as_string=False)
    except git.GitCommandError as exc:
        raise SourceError(f"cannot list {treeish}: {exc.stderr.strip() if exc.stderr else exc}") from exc
    entries: dict[str, Entry] = {}
    for record in bytes(raw).split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, blob = meta.decode().split()
        entries[path.decode("utf-8", "surrogateescape")] = Entry(mode, kind, blob)
    return entries


def _must_be_blob(blob: str, kind: str | bytes) -> None:
    """What cat-file found under an id the tree lists as a blob; anything else is refused."""
    if (kind.decode() if isinstance(kind, bytes) else kind) != "blob":
        raise SourceError(f"object {blob} is a {kind!r}, not a blob")


def _asked(repo: git.Repo, ask: Callable[[], T], what: str) -> T:
    """One question to the repository's persistent `git cat-file`; one that died (a long-running
    agent keeps it for days) is started again once before the question fails."""
    try:
        return ask()
    except (git.GitCommandError, ValueError, OSError):
        repo.git.clear_cache()
    try:
        return ask()
    except (git.GitCommandError, ValueError, OSError) as exc:
        raise SourceError(f"{what}: {exc}") from exc


def _blob_sizer(repo: git.Repo) -> Callable[[str], int]:
    def size(blob: str) -> int:
        _, kind, found = _asked(repo, lambda: repo.git.get_object_header(blob), f"cannot find blob {blob}")
        _must_be_blob(blob, kind)
        return int(found)
    return size


def _blob_reader(repo: git.Repo) -> Callable[[str], bytes]:
    def read(blob: str) -> bytes:
        _, kind, _, data = _asked(repo, lambda: repo.git.get_object_data(blob), f"cannot read blob {blob}")
        _must_be_blob(blob, kind)
        return bytes(data)
    return read


class _Resolver:
    """Follows symbolic links inside one listed tree, component by component."""

    def __init__(self, entries: dict[str, Entry], read: Callable[[str], bytes], size: Callable[[str], int]) -> None:
        self.entries, self.read, self.size = entries, read, size

    @functools.cached_property
    def dirs(self) -> set[str]:
        """The tree's directories (asked only to word why a link cannot be read)."""
        return {""} | {"/".join(p.split("/")[:i]) for p in self.entries for i in range(1, p.count("/") + 1)}

    def target(self, rel: str) -> Entry:
        """The regular blob `rel` stands for; raises FileRefused with the reason otherwise."""
        todo, done, hops = rel.split("/"), list[str](), 0
        while todo:
            part = todo.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if not done:
                    raise FileRefused(boundary.outside(self._link_text(rel)))
                done.pop()
                continue
            entry = self.entries.get("/".join([*done, part]))
            if entry is not None and entry.mode == _LINK:
                hops += 1
                if hops > boundary.MAX_LINK_HOPS or self.size(entry.blob) > boundary.MAX_LINK_BYTES:
                    raise FileRefused("not read: too many levels of symbolic links, or a link too long")
                link = self.read(entry.blob).decode("utf-8", "surrogateescape")
                if link.startswith("/"):
                    raise FileRefused(boundary.outside(self._link_text(rel)))
                todo = link.split("/") + todo
                continue
            done.append(part)
        return self._regular(rel, "/".join(done))

    def _regular(self, rel: str, final: str) -> Entry:
        entry = self.entries.get(final)
        if entry is None:
            what = "a directory" if final in self.dirs else "a missing file"
            raise FileRefused(boundary.not_regular(f"a symbolic link to {what} (-> "
                                                   f"{boundary.shown(self._link_text(rel))!r})"))
        if entry.kind != "blob":
            raise FileRefused(boundary.not_regular("a Git submodule"))
        return entry

    def _link_text(self, rel: str) -> str:
        entry = self.entries.get(rel)
        return self.read(entry.blob).decode("utf-8", "surrogateescape") if entry and entry.mode == _LINK else rel


@dataclasses.dataclass
class Listing:
    """What the last listing of one repository object found: its paths in load order, and the file
    of each path and blob that is not a symbolic link (a link is resolved again every time: its
    target may have changed). A commit changes a few of thousands."""

    paths: set[str] = dataclasses.field(default_factory=set)
    ordered: list[str] = dataclasses.field(default_factory=list)
    files: dict[tuple[str, Entry], GitFile | None] = dataclasses.field(default_factory=dict)  # None: not a candidate


def files(repo: git.Repo, treeish: str, last: Listing | None = None) -> list[GitFile]:
    """The candidate files of a commit's directory of CRs, in load order (boundary.order). With the
    `last` listing of this same repository object, unchanged entries are the very files it made, and
    it is updated to this listing."""
    entries = list_tree(repo, treeish)
    resolver = _Resolver(entries, _blob_reader(repo), _blob_sizer(repo))
    same_paths = last is not None and last.paths == entries.keys()
    ordered = last.ordered if last is not None and same_paths else sorted(entries, key=boundary.order)
    known = last.files if last is not None else {}
    made: dict[tuple[str, Entry], GitFile | None] = {}
    out: list[GitFile] = []
    for rel in ordered:
        entry = entries[rel]
        key = (rel, entry)
        if entry.mode == _LINK:  # resolved every time: its target may have changed
            found = _listed(rel, entry, resolver)
        else:
            found = known[key] if key in known else _listed(rel, entry, resolver)
            made[key] = found
        if found is not None:
            out.append(found)
    if last is not None:
        if not same_paths:
            last.paths, last.ordered = set(entries), ordered
        last.files = made
    return out


def _listed(rel: str, entry: Entry, resolver: _Resolver) -> GitFile | None:
    """The file an entry stands for, or None when it is not a candidate."""
    if entry.kind == "commit" and not boundary.is_hidden(rel):
        return GitFile(boundary.shown(rel), "", 0, warning=True, refused=(
            "skipped: a Git submodule; the agent reads only files committed in this repository"))
    if boundary.is_candidate(rel):  # a submodule here is hidden, so not a candidate
        return _file(rel, entry, resolver)
    return None


def _file(rel: str, entry: Entry, resolver: _Resolver) -> GitFile:
    problem = boundary.name_problem(rel)
    if problem is not None:
        return GitFile(boundary.shown(rel), "", 0, refused=problem)
    try:
        target = resolver.target(rel) if entry.mode == _LINK else entry
    except FileRefused as exc:
        return GitFile(rel, "", 0, refused=str(exc))
    return GitFile(rel, target.blob, None, reader=resolver.read, sizer=resolver.size)
