"""The rules every source applies to the entries of a revision before anything is read.

Only `*.yaml` / `*.yml` files (and kustomize's `Kustomization`) outside hidden directories are
candidates. A candidate is read only
when it is a regular file (or a symbolic link resolving to one) inside the directory the CRs are
read from; its name must be printable UTF-8 so that `file:line: ...` lines cannot be forged or
broken by a file name. Everything else becomes a `FileRefused` naming the file, raised on read.
"""

from __future__ import annotations

import stat

from agent.model import syntax
from agent.model.limits import MAX_PATH_BYTES

MAX_LINK_HOPS = 40  # like the kernel's ELOOP limit
MAX_LINK_BYTES = 4096  # a symbolic link's target text
_SHOWN = 200  # characters of an over-long path shown in a problem


def is_hidden(rel: str) -> bool:
    """A hidden file, or anything below a hidden directory (rel is '/'-separated)."""
    return any(part.startswith(".") for part in rel.split("/"))


def is_candidate(rel: str) -> bool:
    """A YAML file outside hidden files and directories (rel is '/'-separated)."""
    return (rel.endswith((".yaml", ".yml"))
            or rel.rpartition("/")[2] == "Kustomization") and not is_hidden(rel)


def is_repository_file(rel: str) -> bool:
    """Any file a kustomization may name (an `.env`, a `.json` schema, a hidden file), outside
    `.git`."""
    return ".git" not in rel.split("/")


def order(rel: str) -> tuple[tuple[str, ...], str]:
    """The order files are loaded in, the same for every source: a directory's own files, then
    its subdirectories in name order (a walk from the top)."""
    parts = rel.split("/")
    return tuple(parts[:-1]), parts[-1]


def shown(raw: str) -> str:
    """`raw` made safe to print on one line: undecodable bytes and non-printable characters as
    escapes (\\n, \\x1b, \\xff ...), over-long paths cut."""
    text = syntax.printable(raw)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + f"... ({len(text)} characters)"


def name_problem(raw: str) -> str | None:
    """Why a path may not be read, or None when its name is fine."""
    size = len(raw.encode("utf-8", "surrogateescape"))
    if size > MAX_PATH_BYTES:
        return f"not read: the path is {size} bytes long, over {MAX_PATH_BYTES}; use a shorter name"
    if syntax.printable(raw) != raw:
        return ("not read: the file name contains a control character or is not valid UTF-8 "
                "(shown escaped); rename it to printable characters")
    return None


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, word in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return word
    return "not a regular file"


def not_regular(what: str) -> str:
    return (f"not read: {what}, not a regular file; only regular files (or links to regular "
            "files inside the repository) are read - commit the YAML itself")


def outside(link: str) -> str:
    return (f"not read: a symbolic link pointing outside the repository (-> {shown(link)!r}); "
            "links may only point at files inside it - commit the file itself instead")
