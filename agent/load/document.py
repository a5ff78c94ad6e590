"""One YAML document of a revision -> a validated object, or the problems it has, each at its line
(pure): a Bindy kind and version (others are skipped with a warning: kustomization.yaml and
friends live in the same repositories), the metadata the API server would refuse, the agent's
shorthands, the schema (strict types, camelCase only), then Bindy's admission rules on the validated
object and the fields without effect (load/inert.py).
"""

from __future__ import annotations

import sys
from typing import Any

import pydantic
import yaml

from agent.load import admission, fieldpath, inert, loaded, schemaerrors, shorthand
from agent.load.loaded import Loaded
from agent.load.sourcefile import FileText
from agent.model import kinds, syntax
from agent.model.key import ObjectKey
from agent.model.problems import Origin, Problem, Severity

_MAX_ERRORS = 50  # schema errors shown per document: a list of 100,000 wrong items is one mistake


class Document:
    """One YAML document being checked; collects its problems."""

    __slots__ = ("node", "data", "problems", "text", "file_text", "origin", "file", "obj", "_about",
                 "failed", "repeats")  # one per document of a revision: no dict each

    def __init__(self, file: str, node: yaml.Node, data: Any, problems: list[Problem], text: str,
                 file_text: FileText | None,
                 repeats: dict[tuple[str, str], int] | None = None) -> None:
        self.node, self.data, self.problems = node, data, problems
        self.text, self.file_text = text, file_text
        self.origin = Origin(file, node.start_mark.line + 1)
        self.file = file
        # the object its problems are about (`about`: written out when the first is reported)
        self.obj = ""
        self._about: ObjectKey | None = None
        self.failed = False
        # (path, message) of the warnings reported in this file so far -> how many more there were:
        # a warning that recurs is counted, not made again (load/parse.py lists it once, with the
        # count)
        self.repeats: dict[tuple[str, str], int] = {} if repeats is None else repeats

    def about(self, key: ObjectKey) -> None:
        """The object the problems reported from now on are about (`obj`, made when first
        needed)."""
        self._about = key

    def span(self) -> int:
        """Where the document's own text is in its file (from the line of its first node):
        Loaded.span."""
        return loaded.span(self.node.start_mark.index - self.node.start_mark.column,
                           self.node.end_mark.index)

    def report(self, loc: tuple[Any, ...], message: str,
               severity: Severity = Severity.ERROR) -> None:
        path = fieldpath.dotted(loc)
        if severity is Severity.WARNING:
            seen = self.repeats.get((path, message))
            self.repeats[(path, message)] = 0 if seen is None else seen + 1
            if seen is not None:
                return
        self.failed |= severity is Severity.ERROR
        if self._about is not None:
            self.obj, self._about = syntax.printable(str(self._about)), None
        self.problems.append(Problem(Origin(self.file, fieldpath.line_of(self.node, loc)), self.obj,
                                     path, message, severity))


def _check_metadata(doc: Document, meta: dict[str, Any]) -> None:
    """What the API server would refuse in metadata: names, namespaces, label and annotation
    keys."""
    for field, check, longest in (("name", syntax.subdomain_error, 253),
                                  ("namespace", syntax.label_error, 63)):
        value = meta.get(field)  # longer ones: ObjectMeta's max_length reports them
        if isinstance(value, str) and 0 < len(value) <= longest and (error := check(value)):
            doc.report(("metadata", field), f"invalid {field} {value!r}: {error}")
    for field in ("labels", "annotations"):
        mapping = meta.get(field)
        for key, value in (mapping.items() if isinstance(mapping, dict) else ()):
            if isinstance(key, str) and (error := syntax.label_key_error(key)):
                doc.report(("metadata", field, key), f"invalid key {key!r}: {error}")
            elif (field == "labels" and isinstance(value, str)
                  and (error := syntax.label_value_error(value))):
                doc.report(("metadata", field, key), f"invalid label value {value!r}: {error}")


def check(doc: Document, default_namespace: str) -> Loaded | None:
    data = doc.data
    if not isinstance(data, dict):
        doc.report((), f"expected a mapping (a Kubernetes object), got {type(data).__name__}")
        return None
    kind = _kind_of(doc, data)
    if kind is None:
        return None
    # equal to what they were: one str object for every document instead of one each (kept with
    # every loaded object; 18 MB at 100,000 records)
    data["apiVersion"], data["kind"] = kinds.API_VERSION, kind.name
    meta: dict[str, Any] = data["metadata"] if isinstance(data.get("metadata"), dict) else {}
    name, namespace = meta.get("name"), meta.get("namespace")
    if type(namespace) is str:
        meta["namespace"] = namespace = sys.intern(namespace)
    if kind.namespaced and namespace is None and isinstance(name, str):
        meta["namespace"] = namespace = default_namespace
    key = ObjectKey(kind.name, namespace if kind.namespaced else None, str(name))
    if isinstance(name, str):
        doc.about(key)
    else:
        doc.obj = kind.name
    if not kind.namespaced and namespace is not None:
        doc.report(("metadata", "namespace"),
                   f"{kind.name} is cluster-scoped; remove metadata.namespace")
    _check_metadata(doc, meta)

    if "status" in data:
        del data["status"]
        doc.report(("status",), "ignored: status is written by the agent, not read from Git",
                   Severity.WARNING)
    for path, message, is_error in shorthand.normalise(kind.name, data):
        loc = tuple(path.split("."))
        doc.report(loc, message, Severity.ERROR if is_error else Severity.WARNING)
    model = _validate(doc, kind, data)
    return None if model is None or doc.failed else Loaded(key, model, doc.origin, doc.file_text,
                                                           doc.span())


def _kind_of(doc: Document, data: dict[str, Any]) -> kinds.Kind | None:
    """The Bindy kind a document declares; None (reported) for other objects, versions and kinds."""
    api_version, kind_name = data.get("apiVersion"), data.get("kind")
    if (api_version == kinds.API_VERSION and type(kind_name) is str
        and (kind := kinds.KINDS.get(kind_name))):
        return kind  # almost every document: Bindy's version and kind, nothing to report
    group = api_version.split("/")[0] if isinstance(api_version, str) else None
    if group != kinds.GROUP:
        if kind_name in kinds.KINDS:
            doc.report(("apiVersion",), f"{kind_name} needs apiVersion: {kinds.API_VERSION}")
        elif api_version is None and kind_name is None:
            doc.report((), "skipped: not a Kubernetes object (no apiVersion/kind)",
                       Severity.WARNING)
        else:
            doc.report((), f"skipped: not a Bindy object ({api_version} {kind_name})",
                       Severity.WARNING)
        return None
    if api_version != kinds.API_VERSION:
        doc.report(("apiVersion",), f"unsupported version {api_version!r}; use {kinds.API_VERSION}")
        return None
    kind = kinds.KINDS.get(kind_name) if isinstance(kind_name, str) else None
    if kind is None:
        import difflib  # only for a document of an unknown kind

        close = difflib.get_close_matches(str(kind_name), list(kinds.KINDS), n=1, cutoff=0.6)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        doc.report(("kind",), f"unknown kind {kind_name!r} in {kinds.API_VERSION}{hint}")
    return kind


def _validate(doc: Document, kind: kinds.Kind, data: dict[str, Any]) -> Any:
    """The schema model of the document, then the API server's admission rules; None on schema
    errors."""
    try:
        model = kind.model.from_document(data)  # strict types, Bindy's spelling of fields only
    except pydantic.ValidationError as exc:
        errors = exc.errors()
        for err in errors[:_MAX_ERRORS]:
            loc, message = schemaerrors.message(err, kind.model)
            doc.report(loc, message)
        if len(errors) > _MAX_ERRORS:
            doc.report((), f"and {len(errors) - _MAX_ERRORS:,} more schema errors in this document "
                       f"(the first {_MAX_ERRORS} are shown)")
        return None
    # after the schema, as the API server does, and on the validated object: what it reads is what
    # the plan is made of, however a document spelled it
    for violation in admission.violations(kind.name, model):
        doc.report(violation.loc, violation.message)
    # fields bindy-agent does not act on (load/inert.py)
    for loc, entry in inert.found(kind.name, data):
        doc.report(loc, entry.message(), Severity.WARNING)
    model.share_field_sets()
    return model
