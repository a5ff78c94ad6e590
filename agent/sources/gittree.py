"""A commit's files, straight from its tree: no work tree, so nothing outside the commit is read.

    git cat-file --batch (GitPython, persistent) -> each tree's raw entries, checked as git fsck
    does
                                                    (agent/sources/gitfsck.py) and listed, once per
                                                    tree id (a push reads the few trees it changed);
                                                    a blob's bytes, only when the loader reads it
    git cat-file --batch-check (persistent)      -> a blob's size, only when the loader asks for it
    git ls-tree -r -t -z <commit>[:<path>]       -> the listing of a revision with a tree git would
                                                    refuse (it lists what `git show` would not read)

A revision with a tree git would refuse (a name with `/`, `.`, `..`, a name twice ...: its listed
paths are not what `git show` reads) lists only refusals, one for each such tree, so the loader
refuses the whole revision and nothing of it is read. With a path, the trees on the way to it (the
commit's own tree included) are checked too: a second `dns` there decides which `dns` is read.

A symbolic link (mode 120000) is a blob holding its target's path; it is resolved inside the tree
(links to links, `..`), one step per path component whatever the depth, and the file takes the
target blob's id and size. A link leaving the
directory of CRs, to a directory or to nothing is refused; a submodule is skipped with a warning.
The loader checks a file's size against its limits before a byte is read. Sizes are asked per
blob, not listed: `ls-tree --long` opens every blob of the tree to list its size (20-40 ms at
1,000 files), where a long-running agent reads only the few files a commit changed.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from typing import TypeVar, Union

import git

from agent.errors import FileRefused, SourceError
from agent.sources import boundary, gitfsck
from agent.sources.lstree import MAX_LISTING_BYTES, MAX_PATHS, Entry, TooMany, list_tree

_LINK, _SUBMODULE = "120000", "160000"
# a commit id git reads in process (SHA-1: gitfsck reads 20-byte ids)
_SHA = re.compile(r"[0-9a-f]{40}")
T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class GitFile:
    """One file of a commit, as the loader sees it (agent.load.sourcefile.SourceFile)."""

    path: str  # relative to the directory of CRs, '/'-separated, printable
    blob: str  # id of the content's blob (a link's target blob for a symbolic link); "" if refused
    known_size: int | None = 0  # None: asked of the repository when first needed
    refused: str | None = None
    warning: bool = False  # refused harmlessly (a skipped submodule)
    reader: Callable[[str], bytes] | None = dataclasses.field(default=None, repr=False,
                                                              compare=False)
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
        _, kind, found = _asked(repo, lambda: repo.git.get_object_header(blob),
                                f"cannot find blob {blob}")
        _must_be_blob(blob, kind)
        return int(found)
    return size


def _blob_reader(repo: git.Repo) -> Callable[[str], bytes]:
    def read(blob: str) -> bytes:
        _, kind, _, data = _asked(repo, lambda: repo.git.get_object_data(blob),
                                  f"cannot read blob {blob}")
        _must_be_blob(blob, kind)
        return bytes(data)
    return read


_Node = dict[str, Union["_Node", Entry]]  # a directory of the listed tree: its entries by name


class _Resolver:
    """Follows symbolic links inside one listed tree, component by component: each step looks one
    name up in one directory, so a link costs the length of its path and target, whatever the
    depth."""

    def __init__(self, entries: dict[str, Entry], read: Callable[[str], bytes],
                 size: Callable[[str], int]) -> None:
        self.entries, self.read, self.size = entries, read, size

    @functools.cached_property
    def top(self) -> _Node:
        """The listed tree as nested directories (built once, when a first link is resolved)."""
        top: _Node = {}
        for path, entry in self.entries.items():
            node, *parents = top, *path.split("/")[:-1]
            for name in parents:
                found = node.setdefault(name, {})
                # a file and a directory of one name: not a sound tree
                if not isinstance(found, dict):
                    break
                node = found
            else:
                node[path.rpartition("/")[2]] = entry
        return top

    def target(self, rel: str) -> Entry:
        """The regular blob `rel` stands for; raises FileRefused with the reason otherwise."""
        todo = rel.split("/")[::-1]  # the components left, the next one last
        walked: list[_Node | Entry | None] = [self.top]  # what each component named (None: nothing)
        hops = 0
        while todo:
            part = todo.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if len(walked) == 1:
                    raise FileRefused(boundary.outside(self._link_text(rel)))
                walked.pop()
                continue
            here = walked[-1]
            found = here.get(part) if isinstance(here, dict) else None
            if isinstance(found, Entry) and found.mode == _LINK:
                hops += 1
                if hops > boundary.MAX_LINK_HOPS or self.size(found.blob) > boundary.MAX_LINK_BYTES:
                    raise FileRefused("not read: too many levels of symbolic links, or a link too "
                                      "long")
                link = self.read(found.blob).decode("utf-8", "surrogateescape")
                if link.startswith("/"):
                    raise FileRefused(boundary.outside(self._link_text(rel)))
                todo.extend(reversed(link.split("/")))  # relative to the link's own directory
                continue
            walked.append(found)
        return self._regular(rel, walked[-1])

    def _regular(self, rel: str, found: _Node | Entry | None) -> Entry:
        if not isinstance(found, Entry):
            what = "a missing file" if found is None else "a directory"
            raise FileRefused(boundary.not_regular(f"a symbolic link to {what} (-> "
                                                   f"{boundary.shown(self._link_text(rel))!r})"))
        if found.kind != "blob":
            raise FileRefused(boundary.not_regular("a Git submodule"))
        return found

    def _link_text(self, rel: str) -> str:
        entry = self.entries.get(rel)
        if entry and entry.mode == _LINK:
            return self.read(entry.blob).decode("utf-8", "surrogateescape")
        return rel


@dataclasses.dataclass
class Listing:
    """What the last listing of one repository object found: its paths in load order, and the file
    of each path and blob that is not a symbolic link (a link is resolved again every time: its
    target may have changed). A commit changes a few of thousands. A Git source keeps one per
    repository object; a one-shot listing starts from an empty one, which is thrown away."""

    paths: set[str] = dataclasses.field(default_factory=set)
    ordered: list[str] = dataclasses.field(default_factory=list)
    # None: not a candidate
    files: dict[tuple[str, Entry], GitFile | None] = dataclasses.field(default_factory=dict)
    sound: set[str] = dataclasses.field(default_factory=set)  # ids of the trees git would accept
    # the entries of each tree of the last listing, by tree id (its id names its content): a
    # commit's tree is listed by reading only the trees it does not share with the last one
    trees: dict[str, list[tuple[str, str, str, str]]] = dataclasses.field(default_factory=dict)


def files(repo: git.Repo, treeish: str, last: Listing | None = None, *,
          candidate: Callable[[str], bool] = boundary.is_candidate) -> list[GitFile]:
    """The candidate files of a commit's directory of CRs, in load order (boundary.order). With the
    `last` listing of this same repository object, unchanged entries are the very files it made, and
    it is updated to this listing (always with the same `candidate`: boundary.is_repository_file
    lists every file a kustomization may name)."""
    last = Listing() if last is None else last
    ids = _tree_ids_of(repo, treeish)
    read = _tree_reader(repo)
    try:
        listed = _read_trees(ids[-1], last, read) if ids is not None else None
        entries, trees = listed if listed is not None else list_tree(repo, treeish)
    except TooMany:
        return [GitFile(".", "", 0, refused=(
            f"not read: the Git tree of {treeish[:12]} lists more than {MAX_PATHS:,} paths or "
            f"{MAX_LISTING_BYTES // 2**20} MiB of path names (its folders name the same folders "
            "over and over, or hold names thousands of bytes long: far beyond a repository of DNS "
            "records): no file of this revision is read - keep the CRs' directory to the files the "
            "agent reads"))]
    refused = _unsound(repo, treeish, trees, last, ids)
    if refused:
        return refused
    resolver = _Resolver(entries, _blob_reader(repo), _blob_sizer(repo))
    same_paths = last.paths == entries.keys()
    ordered = last.ordered if same_paths else sorted(entries, key=boundary.order)
    known = last.files
    made: dict[tuple[str, Entry], GitFile | None] = {}
    out: list[GitFile] = []
    for rel in ordered:
        entry = entries[rel]
        key = (rel, entry)
        if entry.mode == _LINK:  # resolved every time: its target may have changed
            found = _listed(rel, entry, resolver, candidate)
        else:
            found = known[key] if key in known else _listed(rel, entry, resolver, candidate)
            made[key] = found
        if found is not None:
            out.append(found)
    if not same_paths:
        last.paths, last.ordered = set(entries), ordered
    last.files = made
    return out


_DIRECTORY = 0o040000


def _read_trees(root: str, last: Listing, read: Callable[[str], bytes],
                ) -> tuple[dict[str, Entry], dict[str, str]] | None:
    """What `list_tree` gives of the tree `root`, read with the repository's open `git cat-file`
    instead of a `git ls-tree` process, each tree once: the trees the `last` listing read are not
    read again (`last.trees` keeps this listing's). None when a tree is one git would refuse:
    `git ls-tree` lists it then, and `_unsound` refuses it."""
    entries: dict[str, Entry] = {}
    trees: dict[str, str] = {}
    kept: dict[str, list[tuple[str, str, str, str]]] = {}
    named = 0  # bytes of the paths listed: a few long folder names nested make gigabytes of paths
    # depth first, each tree's entries in its order: as `ls-tree -r -t` prints them
    todo = [("", root)]
    while todo:
        prefix, tree = todo.pop()
        found = kept.get(tree) or last.trees.get(tree)
        if found is None:
            raw = read(tree)
            if gitfsck.problem(raw) is not None:
                return None
            found = [(*_canonical(mode), name.decode("utf-8", "surrogateescape"), oid)
                     for mode, name, oid in gitfsck.listed(raw)]
            last.sound.add(tree)
        kept[tree] = found
        named += len(found) * len(prefix) + sum(len(name) for _, _, name, _ in found)
        if len(entries) + len(trees) + len(found) > MAX_PATHS or named > MAX_LISTING_BYTES:
            raise TooMany(root)
        below = []
        for mode, kind, name, oid in found:
            path = prefix + name
            if kind == "tree":
                trees[path] = oid
                below.append((path + "/", oid))
            else:
                entries[path] = Entry(mode, kind, oid)
        todo.extend(reversed(below))
    last.trees = kept
    return entries, trees


def _canonical(mode: int) -> tuple[str, str]:
    """The mode `git ls-tree` prints for a tree entry's (git's canon_mode), and the kind of
    object."""
    kind = mode & 0o170000
    if kind == _DIRECTORY:
        return "040000", "tree"
    if kind == 0o100000:
        return ("100755" if mode & 0o111 else "100644"), "blob"
    if kind == 0o120000:
        return _LINK, "blob"
    return _SUBMODULE, "commit"


def _tree_ids_of(repo: git.Repo, treeish: str) -> list[str] | None:
    """`_tree_ids` of `COMMIT[:PATH]`."""
    commit, _, below = treeish.partition(":")
    return _tree_ids(repo, commit, [p for p in below.split("/") if p], _tree_reader(repo))


def _tree_reader(repo: git.Repo) -> Callable[[str], bytes]:
    def read(tree: str) -> bytes:
        _, kind, _, data = _asked(repo, lambda: repo.git.get_object_data(tree),
                                  f"cannot read tree {tree}")
        if (kind.decode() if isinstance(kind, bytes) else kind) != "tree":
            raise SourceError(f"object {tree} is a {kind!r}, not a tree")
        return bytes(data)
    return read


def _unsound(repo: git.Repo, treeish: str, trees: dict[str, str], last: Listing,
             ids: list[str] | None = None) -> list[GitFile]:
    """A refusal for each tree of the listing that git would refuse (agent/sources/gitfsck.py), and
    for each tree on the way to it from the commit's own (`COMMIT:a/b` is looked up in the commit's
    tree, then in `a`'s: a duplicate `a` there decides which `a` is read); the `last` listing's
    trees are not read again, and it keeps this listing's."""
    commit, _, below = treeish.partition(":")  # after `:` all is the path
    parts = [p for p in below.split("/") if p]
    # "" (the commit's tree), "a", ... not a/b itself
    above = ["/".join(parts[:i]) for i in range(len(parts))]
    specs = [f"{commit}^{{tree}}" if not path else f"{commit}:{path}" for path in above] + [
        treeish if below else f"{commit}^{{tree}}"]
    read = _tree_reader(repo)
    ids = ids if ids is not None else _tree_ids(repo, commit, parts, read)
    if ids is None:  # asked of git: a tree on the way is not sound, or the commit is not one
        try:
            ids = [str(repo.git.rev_parse("--verify", "--end-of-options", spec)).strip()
                   for spec in specs]
        except git.GitCommandError as exc:
            raise SourceError(f"cannot list {treeish}: "
                              f"{exc.stderr.strip() if exc.stderr else exc}") from exc
    root = ids[-1]

    sound = last.sound
    on_the_way = list(zip(ids[:-1], above, strict=True))
    unsound: list[tuple[str | None, str, str]] = [
        (None, path, why) for path, why in gitfsck.check(on_the_way, sound, read)]
    unsound += [(path, "/".join(p for p in (below, path) if p), why)
                for path, why in gitfsck.check([(root, ""), *((t, p) for p, t in trees.items())],
                                               sound, read)]
    last.sound = sound & {*ids, *trees.values()}
    return [GitFile(boundary.shown(path) if path else ".", "", 0, refused=(
        f"not read: the Git tree {boundary.shown(full or '.')!r} of commit "
        f"{commit[:12]} has {why}; its paths are not what `git show` reads, so no file of this "
        "revision is read - rewrite the commit with ordinary git (git fsck --strict shows the "
        "tree)"))
        for path, full, why in unsound]


def _tree_ids(repo: git.Repo, commit: str, parts: list[str],
              read: Callable[[str], bytes]) -> list[str] | None:
    """The ids `git rev-parse COMMIT^{tree} COMMIT:a COMMIT:a/b ...` gives, read with the
    repository's open `git cat-file` instead of a process of its own; None when git is to be asked
    (`commit` is no commit id, or a tree on the way is one git would refuse: its lookup is git's to
    decide)."""
    if not _SHA.fullmatch(commit):
        return None
    try:
        ids = [repo.commit(commit).tree.hexsha]
        for part in parts:
            raw = read(ids[-1])
            found = None if gitfsck.problem(raw) else gitfsck.subtree(raw, part)
            if found is None:
                return None
            ids.append(found)
    except (ValueError, OSError, SourceError, git.GitCommandError, git.BadName, git.BadObject):
        return None
    return ids


def _listed(rel: str, entry: Entry, resolver: _Resolver,
            candidate: Callable[[str], bool]) -> GitFile | None:
    """The file an entry stands for, or None when it is not a candidate."""
    if entry.kind == "commit" and not boundary.is_hidden(rel):
        return GitFile(boundary.shown(rel), "", 0, warning=True, refused=(
            "skipped: a Git submodule; the agent reads only files committed in this repository"))
    if candidate(rel):  # a submodule here is hidden, so not a candidate
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
