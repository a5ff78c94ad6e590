"""Git trees written byte for byte, as a hostile pusher can (git mktree refuses most of these): a
name with `/`, `.`, `..`, a name twice, entries out of git's order."""

from __future__ import annotations

import pathlib
import subprocess

WEB = "records/example-com/web.yaml"

Entry = tuple[str, bytes, str]  # mode (as in a raw tree: 40000 for a tree), name, object id


def git(cwd: pathlib.Path, *args: str, data: bytes | None = None) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], input=data, capture_output=True,
                          check=True).stdout.decode().strip()


def blob(cwd: pathlib.Path, text: str) -> str:
    return git(cwd, "hash-object", "-w", "--stdin", data=text.encode())


def tree(cwd: pathlib.Path, entries: list[Entry]) -> str:
    """A raw tree object, written as given."""
    raw = b"".join(mode.encode() + b" " + name + b"\0" + bytes.fromhex(oid) for mode, name, oid in entries)
    return git(cwd, "hash-object", "-t", "tree", "--literally", "-w", "--stdin", data=raw)


def entries(cwd: pathlib.Path, treeish: str) -> list[Entry]:
    out = subprocess.run(["git", "-C", str(cwd), "ls-tree", "-z", treeish], capture_output=True, check=True).stdout
    found = []
    for record in filter(None, out.split(b"\0")):
        meta, _, name = record.partition(b"\t")
        mode, _, oid = meta.decode().split()
        found.append((mode.lstrip("0"), name, oid))
    return found


def git_order(entry: Entry) -> bytes:
    return entry[1] + (b"/" if entry[0] == "40000" else b"")


def with_slash_name(cwd: pathlib.Path, text: str, path: str = WEB) -> list[Entry]:
    """HEAD's root tree plus an entry named `path` (slashes and all) holding `text`: `git ls-tree -r`
    lists it under `path` after the real file, `git show HEAD:path` reads the real one."""
    return sorted([*entries(cwd, "HEAD"), ("100644", path.encode(), blob(cwd, text))], key=git_order)


def commit_on_main(cwd: pathlib.Path, root: list[Entry], message: str) -> str:
    """A commit of `root` on top of HEAD, made the branch main (the index and work tree stay)."""
    sha = git(cwd, "commit-tree", tree(cwd, root), "-p", "HEAD", "-m", message)
    git(cwd, "update-ref", "refs/heads/main", sha)
    return sha
