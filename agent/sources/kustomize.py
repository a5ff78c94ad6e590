"""Repositories kept as kustomize overlays, rendered as Flux's kustomize-controller renders them.

Which directories are built:
  * a kustomization (`kustomization.yaml`, `kustomization.yml` or `Kustomization`) at the top of the
    directory the agent reads: that one is built, as Flux builds a Kustomization's path, and its
    output is the revision;
  * none there: the files are read one by one as before, except that each topmost directory below
    holding a kustomization whose files hold a Bindy object (`bindy.firestoned.io`) is built and its
    output replaces the directory's files; one whose files hold none (an unrelated
    `deploy/monitoring/`) is skipped with a warning and its files are read as they are;
  * YAML files below a built directory that no build reads are named in one warning (Flux ignores
    them too).

The repository is input the agent does not trust (SECURITY.md), so a build is confined before it
starts:
  * every kustomization it reaches is read strictly (agent/sources/kustomization.py): exact field
    names only, plugins and Helm charts refused; every file, directory or URL it names is resolved
    against its kustomization's directory and must be a file (or a kustomization's directory) of the
    repository: no URL, no absolute path, nothing outside; bases nest at most MAX_DEPTH deep,
    without a cycle;
  * only the files so named (of the same work tree or commit, through the source's own boundary) are
    written into an empty temporary directory, kustomizations as the data just checked; kustomize
    runs there, with no network where the machine allows it (agent/sources/kustbuild.py);
  * all the builds of a revision share one time budget and one output size (the revision's byte
    limit): a build whose bases would repeat past the size (a lattice of bases, each included twice)
    is refused from its files' sizes before it runs.

The built output is one file of the revision, named `<dir>/(kustomize build)`: a problem's line is
the line of `kubectl kustomize <dir>`'s output.
"""

from __future__ import annotations

import functools
import os
import posixpath
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from agent.errors import FileRefused, SourceError
from agent.sources.kustomization import NAMES as NAMES  # re-exported (links.py)

# the building modules are imported only for a kustomization: `validate` starts without them
if TYPE_CHECKING:
    from agent.sources import kustbuild
    from agent.sources.kustgraph import Graph, Node, Refusal

BUILT = "(kustomize build)"  # the file name of a directory's built output
# objects one build may make: kustomize's time grows with their square (4,096 take ~17 s on one busy
# core, 8,192 over a minute): far more cannot be built within the time all the builds of a revision
# may take, on any machine
MAX_BUILT_OBJECTS = 20_000
_BINDY = b"bindy.firestoned.io"


def kubectl() -> str | None:
    """The kubectl that carries kustomize (agent/sources/kustbuild.py)."""
    from agent.sources import kustbuild

    return kustbuild.kubectl()


class Built:
    """One directory's built output: a file of the revision (agent.load.sourcefile.SourceFile).
    (Plain classes, not dataclasses: this module is imported by every `validate`, and used by
    few.)"""

    __slots__ = ("path", "data")
    blob = None  # no content id: parsed again on every revision

    def __init__(self, path: str, data: bytes) -> None:
        self.path, self.data = path, data

    @property
    def size(self) -> int:
        return len(self.data)

    def read(self) -> bytes:
        return self.data


class Refused:
    """A kustomization the agent will not build (or a warning about one): read, it raises
    FileRefused."""

    __slots__ = ("path", "message", "line", "warning")
    size, blob = 0, None

    def __init__(self, path: str, message: str, line: int = 1, *, warning: bool = False) -> None:
        self.path, self.message, self.line, self.warning = path, message, line, warning

    def read(self) -> bytes:
        raise FileRefused(self.message, line=self.line, warning=self.warning)


# the repository's readable files (agent.load.sourcefile.SourceFile) by path from its top
Files = dict[str, Any]


class Repository:
    """Where a revision's directory sits in its repository: its path from the top (`prefix`), and
    the repository's files (every one, not only YAML: a kustomization may name an `.env` file); both
    asked only when a kustomization needs them."""

    def __init__(self, prefix: Callable[[], str], files: Callable[[], Sequence[Any]]) -> None:
        self._prefix, self._files = prefix, files

    @functools.cached_property
    def prefix(self) -> str:
        return self._prefix()

    def files(self) -> Files:
        return _by_path(self._files())


class Revision(list[Any]):
    """A revision's files, as the loader takes them (a list), that know their repository."""

    def __init__(self, files: Sequence[Any], repository: Repository | None) -> None:
        super().__init__(files)
        self.repository = repository


def within(files: Sequence[Any], path: str, everything: Callable[[], Sequence[Any]]) -> Revision:
    """The files of the directory `path` of a commit whose files are `everything()`."""
    return Revision(files, Repository(lambda: path.strip("/"), everything))


def _by_path(files: Sequence[Any]) -> Files:
    return {f.path: f for f in files if getattr(f, "refused", None) is None}


def roots(files: Sequence[Any]) -> list[str]:
    """The topmost directories (relative, "" for the top) that hold a kustomization."""
    found = sorted({posixpath.dirname(f.path) for f in files
                    if posixpath.basename(f.path) in NAMES},
                   key=lambda d: (d.count("/"), d))
    out: list[str] = []
    for d in found:
        if not any(_under(d, r) for r in out):
            out.append(d)
    return out


def _under(path: str, top: str) -> bool:
    return top == "" or path == top or path.startswith(top + "/")


def render(files: Sequence[Any], *, max_bytes: int) -> Sequence[Any]:
    """The revision's files with each directory built replaced by its output (a `Built` file, or a
    `Refused` one saying why it was not built); `files` itself when there is no kustomization. The
    files of a `Revision` may build from others elsewhere in its repository; others from
    themselves."""
    tops = roots(files)
    if not tops:
        return files
    import tempfile  # only for a kustomization: a plain repository's `validate` starts without them

    from agent.sources import kustbuild
    from agent.sources.kustgraph import Graph

    repository = getattr(files, "repository", None)
    prefix = repository.prefix if repository is not None else ""
    graph = Graph(repository.files() if repository is not None else _by_path(files), max_bytes)
    budget = kustbuild.Budget(kustbuild.TIMEOUT, max_bytes)
    skipped: dict[str, Refused] = {}
    # (directory, its kustomization, node, output)
    done: list[tuple[str, str, Node, Built | Refused]] = []
    with tempfile.TemporaryDirectory(prefix="bindy-kustomize-") as tmp:
        for top in tops:
            start = posixpath.join(prefix, top) if prefix else top
            # listed, not readable (a link out): the loader says why
            if graph.kustomization_of(start) is None:
                continue
            node = graph.node(start)
            own = _relative(graph.kustomization_of(start) or posixpath.join(start, NAMES[0]),
                            prefix)
            if top and node.complete and not _holds_bindy(graph, node):
                skipped[own] = Refused(own, "skipped: a kustomization whose files hold no Bindy "
                                       "object (bindy.firestoned.io): not built; the files of its "
                                       "directory are read one by one", warning=True)
                continue
            done.append((top, own, node, _built(top, start, own, node, graph, tmp, budget, prefix)))
    plain = [skipped.get(f.path, f) for f in files
             if not any(_under(f.path, top) for top, *_ in done)]
    return plain + [output for *_, output in done] + _unread(files, done, prefix)


def _relative(path: str, prefix: str) -> str:
    return posixpath.relpath(path, prefix) if prefix else path


def _holds_bindy(graph: Graph, node: Node) -> bool:
    return any(_BINDY in graph.data[path] for path in node.files
               if posixpath.basename(path) not in NAMES)


def _built(top: str, start: str, own: str, node: Node, graph: Graph, tmp: str,
           budget: kustbuild.Budget, prefix: str) -> Built | Refused:
    from agent.sources import kustbuild

    if node.refusal is not None:
        return _refused(node.refusal, prefix)
    if node.documents > MAX_BUILT_OBJECTS:
        return Refused(own, f"not built: it would build about {node.documents:,} objects (its "
                       f"bases counted as often as kustomize builds them), more than the "
                       f"{MAX_BUILT_OBJECTS:,} kustomize can build within the {budget.seconds:.0f} "
                       "s the builds of a revision may take; render it in CI and commit the "
                       "output, or include each base once")
    if node.estimate > budget.left:
        return Refused(own, f"not built: it would build about {node.estimate:,} bytes (its bases "
                       f"counted as often as kustomize builds them), over the {budget.left:,} "
                       "bytes left of the revision's byte limit (--max-revision-bytes) for its "
                       "kustomize builds")
    n = len(os.listdir(tmp))
    work, home = os.path.join(tmp, f"build-{n}"), os.path.join(tmp, f"home-{n}")
    os.makedirs(home)
    for path in node.files:
        target = os.path.join(work, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as out:
            out.write(graph.data[path])
    try:
        data = kustbuild.build(os.path.join(work, start) if start else work, home, budget,
                               shown=work)
    except SourceError as exc:
        return Refused(own, str(exc))
    return Built(posixpath.join(top, BUILT) if top else BUILT, data)


def _refused(refusal: Refusal, prefix: str) -> Refused:
    path, line, message = refusal
    return Refused(_relative(path, prefix), message, line)


def _unread(files: Sequence[Any], done: list[tuple[str, str, Node, Built | Refused]],
            prefix: str) -> list[Refused]:
    """One warning naming the YAML files below a built directory that no build read."""
    built = [(top, own, node) for top, own, node, output in done if isinstance(output, Built)]
    read = {_relative(path, prefix) for *_, node in built for path in node.files}
    unread = [f.path for f in files if any(_under(f.path, top) for top, *_ in built)
              and f.path not in read
              and getattr(f, "refused", None) is None]
    if not unread:
        return []
    where = ", ".join(unread[:5]) + (f" and {len(unread) - 5:,} more" if len(unread) > 5 else "")
    tops, own = ", ".join(top or "." for top, *_ in built), built[0][1]
    n, many = len(unread), len(unread) > 1
    return [Refused(own, f"{n:,} YAML file{'s' if many else ''} below {tops} "
                         f"{'are' if many else 'is'} read by no kustomize build, so not by the "
                         f"agent (as Flux): {where}; name {'them' if many else 'it'} "
                         "in a kustomization's resources, or move it out of the directory the "
                         "agent reads",
                    warning=True)]
