"""One file's text -> its part of a revision (`load_text`): every YAML document in it composed by
the C parser, checked against the read budget before it is built (load/readbudget.py), built in one
pass when it is a plain tree (load/construct.py) and the general way otherwise, then checked
(load/document.py). A YAML error or a duplicate key is a problem at its line; a warning that recurs
in a file is listed once. A document's root node is kept only while it is checked.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import yaml

from agent.load import construct, document, fieldpath, readbudget, scalars
from agent.load.manifest import Manifest
from agent.load.sourcefile import FileText, SourceFile
from agent.load.yamlloader import Loader
from agent.model import names
from agent.model.limits import Limits
from agent.model.problems import Origin, Problem, Severity


def load_text(text: str, file: str, *, default_namespace: str = names.DEFAULT_NAMESPACE,
              budget: readbudget.ReadBudget | None = None,
              source: SourceFile | None = None) -> Manifest:
    """Loads one file's text (multi-document), spending `budget` (a fresh default one if None). The
    objects keep `source`, to read their text again, or else the text itself."""
    budget = budget or readbudget.ReadBudget(Limits())
    manifest = Manifest(objects=[], problems=[], files=1,
                        text=FileText(text if source is None else source))
    refused = budget.precheck(text, file)
    if refused is not None:
        manifest.problems.append(refused)
        return manifest
    loader = Loader(text)
    loader.duplicates = []
    # the file's warnings as its documents report them (Document)
    repeats: dict[tuple[str, str], int] = {}
    reading = _Reading(loader, text, file, default_namespace, manifest, repeats)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            start = len(loader.duplicates)
            data, nodes = _construct(loader, node, text)
            problem = budget.spend(node, text, file, nodes)
            if problem is not None:
                del loader.duplicates[start:]
                manifest.problems.append(problem)
                if budget.exhausted:
                    break
                continue
            if nodes is None:  # checked, now built the general way
                data, problem = _general(loader, node, file, start)
                if problem is not None:
                    manifest.documents += 1
                    manifest.problems.append(problem)
                    continue
            _load_document(reading, start, node, data)
    except yaml.MarkedYAMLError as exc:
        manifest.problems.append(_yaml_problem(exc, file))
    except yaml.YAMLError as exc:
        manifest.problems.append(Problem(Origin(file, 1), "", "", f"YAML error: {exc}"))
    finally:
        loader.dispose()
    _fold_repeated_warnings(manifest.problems, repeats)
    return manifest


def _fold_repeated_warnings(found: list[Problem], counted: dict[tuple[str, str], int]) -> None:
    """A warning that recurs in one file (the same field, the same words) is listed once, at its
    first place, with how many more there are: a file of 100 records written with the same shorthand
    gave 100 identical lines, and a repository 33,333, which hid everything else. Errors are all
    kept. `counted`: how many more of each the documents counted instead of reporting
    (Document.report)."""
    first: dict[tuple[str, str], int] = {}
    more: dict[tuple[str, str], int] = {key: count for key, count in counted.items() if count}
    kept: list[Problem] = []
    for problem in found:
        if problem.severity is Severity.WARNING:
            key = (problem.path, problem.message)
            if key in first:
                more[key] = more.get(key, 0) + 1
                continue
            first[key] = len(kept)
        kept.append(problem)
    if more:
        for key, count in more.items():
            shown = kept[first[key]]
            kept[first[key]] = dataclasses.replace(
                shown, message=f"{shown.message} (and {count:,} more like it in this file)")
        found[:] = kept


def _construct(loader: Loader, node: yaml.Node, text: str) -> tuple[Any, int | None]:
    """(data, node count) of a plain document, built in one pass; (None, None) when it must be
    checked for aliases first and built the general way."""
    if readbudget.ReadBudget.plain(node, text):
        start = len(loader.duplicates)
        try:
            return construct.tree(node, loader, loader.duplicates, loader.shared)
        except construct.Unusual:
            del loader.duplicates[start:]
    return None, None


def _general(loader: Loader, node: yaml.Node, file: str, start: int) -> tuple[Any, Problem | None]:
    """A document built the general way; a problem (and no data) when a scalar, a tag or a key
    cannot be constructed: the next document is still read."""
    try:
        return loader.construct_document(node), None
    except yaml.constructor.ConstructorError as exc:
        # what construct_document leaves behind when it stops half-way
        loader.constructed_objects, loader.recursive_objects, loader.state_generators = {}, {}, []
        loader.deep_construct = False
        del loader.duplicates[start:]
        if isinstance(exc, scalars.BadScalar):
            path = fieldpath.dotted(fieldpath.path_to(node, exc.node))
            return None, Problem(Origin(file, exc.line), "", path, exc.message)
        return None, _yaml_problem(exc, file)




def _yaml_problem(exc: yaml.MarkedYAMLError, file: str) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark else 1
    context = exc.context
    if context and exc.context_mark and exc.context_mark.line + 1 != line:
        context += f" (opened at line {exc.context_mark.line + 1})"
    what = ": ".join(str(x) for x in (context, exc.problem) if x)
    return Problem(Origin(file, line), "", "", f"YAML syntax error: {what}")


@dataclasses.dataclass(frozen=True)
class _Reading:
    """One file being read: its loader, text and name, the namespace its objects default to, the
    manifest its documents fill and the warnings they counted instead of repeating."""

    loader: Loader
    text: str
    file: str
    default_namespace: str
    manifest: Manifest
    repeats: dict[tuple[str, str], int]


def _load_document(reading: _Reading, start: int, node: yaml.Node, data: Any) -> None:
    """One document of the file, built (`data`) and checked; `start`: where its duplicate keys
    begin in the loader's list."""
    loader, file, manifest = reading.loader, reading.file, reading.manifest
    manifest.documents += 1
    doc = document.Document(file, node, data, manifest.problems, reading.text, manifest.text,
                            reading.repeats)
    if len(loader.duplicates) > start:
        for line, key in loader.duplicates[start:]:
            manifest.problems.append(Problem(Origin(file, line), "", "",
                                             f"duplicate key {key!r} in a mapping"))
    if data is None:
        return
    loaded = document.check(doc, reading.default_namespace)
    if loaded is not None and len(loader.duplicates) == start:
        assert isinstance(manifest.objects, list)  # one file's part: its own list
        manifest.objects.append(loaded)
