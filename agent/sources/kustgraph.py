"""The kustomizations a build reaches, and the files they name, checked before kustomize runs
(agent/sources/kustomize.py).

Each kustomization directory is read once (`Graph.node`, memoized): its kustomization strictly
(agent/sources/kustomization.py), then every reference resolved against its directory. A reference
must stay inside the repository and name what is there: a file, or for
`resources`/`bases`/`components` a directory holding a kustomization. A node knows every
file its build reads (written into the build directory, kustomizations as their checked data), the
first refusal met (a kustomization file, a line, why), how deep its bases go, and an estimate of its
output's size that counts a base as often as kustomize builds it (kustomize does not share a base
included twice): the estimate of a lattice of D levels, each including the next twice, is 2^D times
its files, computed in D steps.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

import yaml

from agent.errors import SourceError
from agent.sources import kustomization
from agent.sources.kustomization import BASE, FILES, NAMES, SMP, Ref

MAX_DEPTH = 50  # bases of bases of ... below one kustomization
# a URL or a remote base as kustomize reads one (scheme://, scheme::, git@host:, ?ref=), refused
# even when a file of that name exists; a host name first (github.com/org/repo) is named so when no
# such file exists
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:|^git@|[?&](ref|version|submodules|timeout)=|^//")
_HOST = re.compile(r"^[^/]+\.[A-Za-z]{2,}/")
Refusal = tuple[str, int, str]  # (kustomization file, line, why)
_REMOTE = ("is a remote base: the agent builds only from the files of the revision (no network); "
           "vendor it into the repository")


class Node(NamedTuple):
    """What building one kustomization directory reads."""

    refusal: Refusal | None
    files: frozenset[str]  # paths from the repository's top
    # bytes its output is expected to weigh, its bases counted as often as they are built
    estimate: int
    documents: int  # objects it is expected to build, counted so too
    height: int  # 1 + how deep its bases go
    # False: a file it names could not be read (so what it holds is not known)
    complete: bool = True


class Graph:
    """The kustomizations of one repository, read as builds reach them, within `max_bytes` read in
    all."""

    def __init__(self, files: dict[str, Any], max_bytes: int) -> None:
        self.files, self.max_bytes = files, max_bytes
        self.data: dict[str, bytes] = {}  # what is written into a build directory, by path
        self._nodes: dict[str, Node] = {}
        self._open: set[str] = set()  # the directories being read (a cycle comes back to one)
        self._read_bytes = 0

    def kustomization_of(self, directory: str) -> str | None:
        found = [p for p in (posixpath.join(directory, n) if directory else n for n in NAMES)
                 if p in self.files]
        return found[0] if found else None

    def node(self, directory: str, depth: int = 1) -> Node:
        """The directory's node (built once; `depth`: how deep below the first kustomization it is
        reached)."""
        known = self._nodes.get(directory)
        if known is not None:
            return known
        path = self.kustomization_of(directory) or directory
        if directory in self._open:
            why = "its bases include it again (a cycle): kustomize cannot build it"
            return Node((path, 1, why), frozenset(), 0, 0, 0)
        if depth > MAX_DEPTH:
            return Node((path, 1,
                         f"kustomizations nest more than {MAX_DEPTH} deep below the one built (a "
                                  "base of a base of ...): flatten the chain"), frozenset(), 0, 0,
                        MAX_DEPTH)
        self._open.add(directory)
        try:
            node = self._read(directory, path, depth)
        finally:
            self._open.discard(directory)
        self._nodes[directory] = node
        return node

    def _read(self, directory: str, path: str, depth: int) -> Node:
        parsed = self._parsed(directory, path)
        if isinstance(parsed, Node):
            return parsed
        self.data[path] = parsed.canonical
        return self._joined(directory, path, depth, parsed.refs)

    def _parsed(self, directory: str, path: str) -> kustomization.Parsed | Node:
        """The directory's kustomization read, or the node that refuses it (none readable, two,
        invalid)."""
        names = [p for p in (posixpath.join(directory, n) if directory else n for n in NAMES)
                 if p in self.files]
        # its kustomization is listed but may not be read (a link out of the repository, ...)
        if not names:
            listed = posixpath.join(directory, NAMES[0]) if directory else NAMES[0]
            return Node((listed, 1, "not read: the kustomization of this directory is not a "
                                    "regular file of the repository"),
                        frozenset(), 0, 0, 0, complete=False)
        if len(names) > 1:
            return Node((names[1], 1,
                         f"a second kustomization in {directory or '.'} ({', '.join(names)}): "
                         "kustomize refuses to choose; keep one"),
                        frozenset(), 0, 0, 0)
        try:
            return kustomization.read(self._take(path))
        except kustomization.Invalid as exc:
            return Node((path, exc.line, exc.message), frozenset(), 0, 0, 0)
        except (SourceError, OSError) as exc:
            return Node((path, 1, f"not read: {exc}"), frozenset(), 0, 0, 0, complete=False)

    def _joined(self, directory: str, path: str, depth: int, refs: Iterable[Ref]) -> Node:
        """The node of a kustomization read: its file with the nodes and the files its references
        name, the first refusal among them, and how much it builds."""
        files, refusal, estimate, documents, height, complete = {path}, None, 0, 0, 1, True
        for ref in refs:
            try:
                found = self._resolve(directory, ref, depth)
            except _Refused as exc:
                refusal = refusal or (path, ref.line, f"{ref.where} {ref.entry!r} {exc}")
                continue
            except (SourceError, OSError) as exc:
                refusal = refusal or (path, ref.line, f"{ref.where} {ref.entry!r}: not read: {exc}")
                complete = False
                continue
            if isinstance(found, Node):
                refusal, height = refusal or found.refusal, max(height, found.height + 1)
                complete = complete and found.complete
                files |= found.files
                estimate, documents = estimate + found.estimate, documents + found.documents
            elif ref.kind in (BASE, FILES):
                files.update(found)
                estimate += sum(len(self.data[f]) for f in found)
                documents += sum(self.data[f].count(b"\n---") + 1
                                 for f in found) if ref.kind == BASE else 1
            else:
                files.update(found)
        if height > MAX_DEPTH and refusal is None:
            refusal = (path, 1,
                       f"kustomizations nest more than {MAX_DEPTH} deep below it: flatten the "
                       f"chain")
        return Node(refusal, frozenset(files), estimate, documents, height, complete)

    def _resolve(self, directory: str, ref: Ref, depth: int) -> Node | list[str]:
        """The node or the files a reference names; _Refused saying why it may not be built."""
        entry = ref.entry
        if ref.kind == SMP and _inline(entry):
            normal = posixpath.normpath(entry)
            if normal.startswith(("/", "../")) or normal == "..":
                raise _Refused("is an inline patch that is also a path outside the repository: "
                               "kustomize would try to read that file first; write the patch in a "
                               "file of the repository")
            return []
        if ref.kind == FILES:
            if entry.count("=") > 1:
                raise _Refused("names more than one '=': kustomize reads [key=]path")
            entry = entry.partition("=")[2] if "=" in entry else entry
        target = self._target(directory, entry)
        if target in self.files and posixpath.basename(target) not in NAMES:
            return [self._add(target)]
        if ref.kind == BASE and self.kustomization_of(target) is not None:
            return self.node(target, depth + 1)
        if _HOST.search(entry):
            raise _Refused(_REMOTE)
        what = "a file or a directory with a kustomization" if ref.kind == BASE else "a file"
        raise _Refused(f"is not {what} of the repository (the Git work tree or commit of the "
                       f"directory read)")

    def _target(self, directory: str, entry: str) -> str:
        if _URL.search(entry):
            raise _Refused(_REMOTE)
        target = posixpath.normpath(posixpath.join(directory, entry))
        if entry.startswith("/") or target == ".." or target.startswith("../") or not entry:
            raise _Refused("is outside the repository (the Git work tree or commit of the "
                           "directory read; a directory outside Git is a repository of its own)")
        return "" if target == "." else target

    def _add(self, path: str) -> str:
        if path not in self.data:
            self.data[path] = self._take(path)
        return path

    def _take(self, path: str) -> bytes:
        """A file's bytes, within `max_bytes` for all the files read (SourceError beyond)."""
        file = self.files[path]
        if file.size + self._read_bytes > self.max_bytes:
            raise SourceError(f"the files the kustomize builds read are over {self.max_bytes:,} "
                              f"bytes")
        data = bytes(file.read())
        self._read_bytes += len(data)
        return data


class _Refused(Exception):
    """A reference the agent will not build from (the message follows the field and the entry)."""


def _inline(entry: str) -> bool:
    """A patchesStrategicMerge entry that is a patch itself (YAML of an object), not the path of
    one."""
    try:
        doc = yaml.load(entry, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return False
    return isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc
