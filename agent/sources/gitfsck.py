"""The trees of a commit, checked as `git fsck --strict` checks them before a file of theirs is
read.

`git ls-tree -r` joins the names of nested trees with `/`. A tree entry whose own name holds a
`/`, is empty, `.` or `..`, or repeats a name of its tree (or a tree out of git's order, where git
stops looking for a name) therefore lists under a path that `git show COMMIT:path` resolves to
another blob, or to none. Git refuses such trees itself (fsck: fullPathname, emptyName, hasDot,
hasDotdot, duplicateEntries, treeNotSorted, badTree) but does not check what it fetches unless
told to, and checking at fetch would refuse every later commit whose history holds the bad one.
So each tree of the revision read is parsed here from its raw object; a tree found sound is not
read again (its id names its content).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from agent.sources import boundary

_ID_BYTES = 20  # a SHA-1 object id, raw
_DIRECTORY = 0o040000


def _entries(raw: bytes) -> Iterator[tuple[int, bytes]]:
    """(mode, name) of each entry of a raw tree object; ValueError when it is not one."""
    pos = 0
    while pos < len(raw):
        space = raw.find(b" ", pos)
        end = raw.find(b"\0", space + 1) if space >= 0 else -1
        if end < 0 or end + 1 + _ID_BYTES > len(raw):
            raise ValueError("truncated entry")
        yield int(raw[pos:space], 8), raw[space + 1:end]
        pos = end + 1 + _ID_BYTES


def listed(raw: bytes) -> list[tuple[int, bytes, str]]:
    """(mode, name, object id) of each entry of a raw tree object that `problem` found sound, in its
    order (what `git ls-tree` prints of it)."""
    out, pos = [], 0
    while pos < len(raw):
        space = raw.index(b" ", pos)
        end = raw.index(b"\0", space + 1)
        out.append((int(raw[pos:space], 8), raw[space + 1:end],
                    raw[end + 1:end + 1 + _ID_BYTES].hex()))
        pos = end + 1 + _ID_BYTES
    return out


def subtree(raw: bytes, name: str) -> str | None:
    """The id of the tree named `name` in a raw tree object that `problem` found sound; None when
    there is no such tree."""
    want, pos = name.encode("utf-8", "surrogateescape"), 0
    for mode, found in _entries(raw):
        pos = raw.index(b"\0", raw.index(b" ", pos)) + 1 + _ID_BYTES
        if found == want:
            return raw[pos - _ID_BYTES:pos].hex() if mode & 0o170000 == _DIRECTORY else None
    return None


def _shown(name: bytes) -> str:
    return repr(boundary.shown(name.decode("utf-8", "surrogateescape")))


def problem(raw: bytes) -> str | None:
    """Why git would refuse this raw tree object, or None when it is sound."""
    seen: set[bytes] = set()
    last: bytes | None = None
    try:
        for mode, name in _entries(raw):
            if b"/" in name or name in (b"", b".", b".."):
                what = "an empty name" if not name else f"the name {_shown(name)}"
                return (f"an entry with {what}, which git refuses (git fsck: fullPathname, "
                        f"emptyName, hasDot)")
            if name in seen:
                return (f"two entries named {_shown(name)}, which git refuses (git fsck: "
                        f"duplicateEntries)")
            key = name + b"/" if mode & 0o170000 == _DIRECTORY else name
            if last is not None and key < last:
                return f"entries out of git's order at {_shown(name)} (git fsck: treeNotSorted)"
            seen.add(name)
            last = key
    except ValueError:
        return "a malformed tree object (git fsck: badTree)"
    return None


def check(trees: list[tuple[str, str]], sound: set[str],
          read: Callable[[str], bytes]) -> list[tuple[str, str]]:
    """(path, problem) for each of the trees, (id, path), that git would refuse. `sound` holds the
    ids found sound before, and gains the ones found sound now."""
    found = []
    for tree, path in trees:
        if tree in sound:
            continue
        why = problem(read(tree))
        if why is None:
            sound.add(tree)
        else:
            found.append((path, why))
    return found
