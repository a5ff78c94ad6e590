"""Files -> validated models. Every problem is collected, each with file:line and field path.

The libyaml C parser builds each document's node tree; we keep the root node (it carries line
marks) and construct plain Python data from it, so locating an error costs nothing unless there
is one. Unknown apiVersions are skipped with a warning (kustomization.yaml and friends live in
the same repositories); everything else that is wrong is an error.

A revision is untrusted input, so reading it is bounded (agent/model/limits.py): bytes per file
and per revision (checked against each file's listed size before it is read), documents per
revision, nesting depth, and the nodes YAML aliases may add when expanded - a few hundred bytes of
anchors can otherwise stand for millions of nodes. Each limit hit is a problem at file:line.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import operator
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import pydantic
import typing_extensions
import yaml

from agent.errors import FileRefused, SourceError
from agent.load import admission, bounds, construct, inert, scalars, shorthand
from agent.model import kinds, names, syntax
from agent.model.base import Resource
from agent.model.joined import Joined
from agent.model.key import ObjectKey
from agent.model.limits import Limits
from agent.model.problems import Origin, Problem, Severity

_MERGE_TAG = scalars.MERGE
_STR_TAG, _MAP_TAG, _SEQ_TAG = scalars.STR, scalars.MAP, scalars.SEQ
_IGNORE_TWO: Any = {}.get  # called as (parent node, index): returns the index, which the composer ignores
_IGNORE_NONE: Any = tuple  # called with no arguments: returns (), ignored
_RESOLVED_FIRST = frozenset(scalars.Loader.yaml_implicit_resolvers)
_RESOLVED: dict[tuple[str, tuple[bool, bool]], str] = {}
assert None not in _RESOLVED_FIRST and not scalars.Loader.yaml_path_resolvers
_MAX_ERRORS = 50  # schema errors shown per document: a list of 100,000 wrong items is one mistake


class FileText:
    """The text a file's objects were loaded from, read again only when a problem needs a field's
    own line (`Loaded.origin_at`): keeping every document's text cost 24 MB at 100,000 records. The
    objects of a cached file are handed each revision's file (`rebind`), so they never keep an old
    checkout's reader alive."""

    __slots__ = ("file", "_text")

    def __init__(self, file: SourceFile | str) -> None:
        self.file: SourceFile | str = file  # the file to read again, or the text itself
        self._text: str | None = file if isinstance(file, str) else None

    def rebind(self, file: SourceFile) -> None:
        if file is not self.file:  # a long-running agent's source hands out the same file while it is unchanged
            self.file, self._text = file, None

    def text(self) -> str | None:
        """The file's text (read once, then kept), or None when it can no longer be read."""
        if self._text is None and not isinstance(self.file, str):
            try:
                self._text = self.file.read().decode("utf-8")
            except (FileRefused, SourceError, OSError, UnicodeDecodeError):
                return None
        return self._text


_SPAN = 1 << 32  # Loaded.span: start * _SPAN + end, one int instead of a tuple of two


@dataclasses.dataclass(frozen=True, slots=True)
class Loaded:
    key: ObjectKey
    model: Resource
    origin: Origin
    text: FileText | None = dataclasses.field(default=None, repr=False, compare=False)  # its file's
    span: int = dataclasses.field(default=0, repr=False, compare=False)  # where in it: start * _SPAN + end
    # (field path, name, namespace) of the Secrets it names, once asked (gate.tenancy): kept with the
    # object, which a long-running agent reuses while its file is unchanged
    secrets: list[tuple[str, str, str | None]] | None = dataclasses.field(default=None, repr=False, compare=False)

    def origin_at(self, path: str) -> Origin:
        """file:line of a dotted field path such as "spec.ipv4Addresses[1]" in this document.

        The document is read and composed again only here, when a problem needs a line: keeping
        every node tree alive instead would cost far more (memory, and garbage-collector scans).
        Its own line when the file can no longer be read or no longer holds this object there.
        """
        text = self.text.text() if self.text is not None and path else None
        if not text:
            return self.origin
        start, end = divmod(self.span, _SPAN)
        try:
            node = yaml.compose(text[start:end], Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            return self.origin
        if not _defines(node, self.key):
            return self.origin
        loc: list[Any] = []
        for part in re.split(r"\.(?![^\[]*\])", path):
            name, *indexes = re.split(r"\[(\d+)\]", part)
            if name:
                loc.append(name)
            loc += [int(i) for i in indexes if i]
        return Origin(self.origin.file, self.origin.line - 1 + _line_of(node, tuple(loc)))


def _defines(node: yaml.Node | None, key: ObjectKey) -> bool:
    """Whether a composed document is the object `key` (a local file may have changed since)."""
    def value(mapping: yaml.Node | None, name: str) -> yaml.Node | None:
        if isinstance(mapping, yaml.MappingNode):
            return next((v for k, v in mapping.value if k.value == name), None)
        return None

    kind, meta = value(node, "kind"), value(node, "metadata")
    name = value(meta, "name")
    return (isinstance(kind, yaml.ScalarNode) and kind.value == key.kind
            and isinstance(name, yaml.ScalarNode) and name.value == key.name)


@dataclasses.dataclass
class Manifest:
    """A parsed revision: its valid objects (file order) and every problem found."""

    objects: Sequence[Loaded]  # a list; for a revision, its files' lists read as one (model/joined.py)
    problems: list[Problem]
    files: int = 0
    documents: int = 0
    by_file: list[Sequence[Loaded]] = dataclasses.field(default_factory=list)  # the same objects, file by file
    text: FileText | None = None  # one file's part: what its objects' text is read from

    @property
    def ok(self) -> bool:
        return not any(p.severity is Severity.ERROR for p in self.problems)

    def of_kind(self, *names: str) -> list[Loaded]:
        """The objects of these kinds, in load order (indexed once: a revision may hold 100,000)."""
        if len(names) == 1:
            return self._of_kind(names[0])
        return [o for name in names for o in self._of_kind(name)]

    def _of_kind(self, name: str) -> list[Loaded]:
        parts: list[Manifest] | None = self.__dict__.get("_parts")
        if parts is None or "_by_kind" in self.__dict__:
            return self.kinds().get(name, [])
        asked: dict[str, list[Loaded]] = self.__dict__.setdefault("_asked", {})  # joined from the files' indexes
        found = asked.get(name)
        if found is None:
            found = asked[name] = list(itertools.chain.from_iterable(p.kinds().get(name, ()) for p in parts))
        return found

    def kinds(self) -> dict[str, list[Loaded]]:
        """The objects by kind (built once; load_files builds it from its files' as it goes, or joins
        a kind from its files' when first asked)."""
        index: dict[str, list[Loaded]] | None = self.__dict__.get("_by_kind")
        if index is None:
            parts: list[Manifest] | None = self.__dict__.get("_parts")
            index = self.__dict__["_by_kind"] = (_index(self.objects) if parts is None else {})
            for part in parts or []:
                _extend(index, part.kinds())
        return index

    def keys(self) -> dict[ObjectKey, Origin]:
        """Where each object is defined (the first, when a key is defined twice); kept, like the
        kind index, with a file's part while it is cached."""
        found: dict[ObjectKey, Origin] | None = self.__dict__.get("_keys")
        if found is None:
            found = self.__dict__["_keys"] = {}
            for obj in self.objects:
                found.setdefault(obj.key, obj.origin)
        return found


def _index(objects: Sequence[Loaded]) -> dict[str, list[Loaded]]:
    index: dict[str, list[Loaded]] = {}
    for obj in objects:
        index.setdefault(obj.key.kind, []).append(obj)
    return index


class _Loader(scalars.Loader):
    """The C loader with Kubernetes' YAML schema (load/scalars.py), plus a record of duplicate mapping
    keys (PyYAML silently keeps the last), and a faster way to the same tag for the scalars no
    implicit resolver can match."""

    duplicates: list[tuple[int, str]]

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        # The composer calls these two around every node, for path resolvers; there are none (asserted
        # at the top), so Resolver's own methods return at once - but a Python call per node costs a
        # tenth of the parse. Builtins that accept the same arguments and do nothing cost far less.
        self.descend_resolver = _IGNORE_TWO  # type: ignore[method-assign]
        self.ascend_resolver = _IGNORE_NONE  # type: ignore[method-assign]
        self.shared = construct.Shared()  # a file's recurring values, one object each

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        # Exactly what Resolver.resolve answers when no path resolvers are set (asserted at the top):
        # a quoted scalar, or a plain one whose first character starts no implicit resolver, is a str.
        if kind is not yaml.ScalarNode:
            return _MAP_TAG if kind is yaml.MappingNode else _SEQ_TAG
        if not implicit[0] or (value and value[0] not in _RESOLVED_FIRST):
            return _STR_TAG
        if len(value) <= 32:  # keys and short values repeat: remember them
            tag = _RESOLVED.get((value, implicit))
            if tag is None:
                tag = _RESOLVED[(value, implicit)] = self._resolve(kind, value, implicit)
                if len(_RESOLVED) > 4096:
                    _RESOLVED.clear()
            return tag
        return self._resolve(kind, value, implicit)

    def _resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        return str(super().resolve(kind, value, implicit))  # type: ignore[no-untyped-call]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
                continue
            if key_node.value in seen:
                self.duplicates.append((key_node.start_mark.line + 1, key_node.value))
            seen.add(key_node.value)
        return super().construct_mapping(node, deep)


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int:
    """The line of the deepest node along `loc` (a key's own line for the last mapping step)."""
    assert node is not None
    line = node.start_mark.line + 1
    for i, step in enumerate(loc):
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if key_node.value == step:
                    line = key_node.start_mark.line + 1
                    node = value_node
                    break
            else:  # a key with dots in it, as a label or an annotation has: the rest of the path
                rest = ".".join(str(s) for s in loc[i:])
                return next((k.start_mark.line + 1 for k, _ in node.value if k.value == rest), line)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            node = node.value[step]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _unwrap(annotation: Any) -> Any:
    """Strip Optional/list/dict/Annotated wrappers down to a model class, if there is one."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            annotation = args[0] if len(args) == 1 else None
        elif origin is list:
            annotation = typing.get_args(annotation)[0]
        elif origin is dict:
            annotation = typing.get_args(annotation)[1]
        else:
            return annotation


def _fields(shape: Any) -> dict[str, Any] | None:
    """A model's or a TypedDict's keys as written in YAML, each with its annotation; None otherwise."""
    if isinstance(shape, type) and issubclass(shape, pydantic.BaseModel):
        return {f.alias or n: f.annotation for n, f in shape.model_fields.items()}
    if typing_extensions.is_typeddict(shape):
        return typing_extensions.get_type_hints(shape)
    return None


def _shape_at(model: type[pydantic.BaseModel], loc: tuple[Any, ...]) -> Any:
    """The model or TypedDict at a location of a document (None: none is known there)."""
    current: Any = model
    for step in loc:
        fields = _fields(current)
        if isinstance(step, int) or fields is None:
            continue
        if step not in fields:
            return None
        current = _unwrap(fields[step])
    return current


def _allowed_keys(model: type[pydantic.BaseModel], loc: tuple[Any, ...]) -> list[str]:
    return list(_fields(_shape_at(model, loc)) or ())


def _bindy_spelling(model: type[pydantic.BaseModel], loc: tuple[Any, ...]) -> str | None:
    """Bindy's name of a field written as the agent's Python attribute (volume_mounts: volumeMounts)."""
    shape = _shape_at(model, loc[:-1])
    if isinstance(shape, type) and issubclass(shape, pydantic.BaseModel):
        field = shape.model_fields.get(str(loc[-1]))
        if field is not None and field.alias and field.alias != loc[-1]:
            return field.alias
    return None


# what a strict type error expects; the API server checks the CRD's types the same way
_EXPECTED = {"int_type": "an integer", "string_type": "a string", "bool_type": "true or false",
             "list_type": "a list", "dict_type": "a mapping", "model_type": "a mapping"}


def _yaml_type(value: Any) -> str:
    """What YAML made of a value, in the words of a YAML author."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"the integer {value}" if value.bit_length() <= 128 else "an integer"  # no 4,300-digit str()
    if isinstance(value, float):
        return f"the number {value!r} (not an integer)"
    if isinstance(value, str):
        return f"the string {value[:40]!r}" + ("..." if len(value) > 40 else "")
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "a mapping"
    return "a list" if isinstance(value, list) else f"a {type(value).__name__}"


def _type_message(kind: str, value: Any) -> str:
    expected = _EXPECTED[kind]
    message = f"must be {expected} (the API server checks types strictly), not {_yaml_type(value)}"
    if kind == "int_type" and isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return f"{message}: write the number without quotes"
    if kind == "int_type" and isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return f"{message}: write {int(value)}"
    if kind == "string_type" and isinstance(value, (bool, int, float)):
        return (f"{message}: quote it to keep it text (YAML reads unquoted numbers, true/false, yes/no, "
                "on/off and y/n as other types)")
    if kind == "bool_type" and isinstance(value, str) and value.lower() in ("true", "false"):
        return f"{message}: write {value.lower()} without quotes"
    return message


def _dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for step in loc:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


def _message(err: Any, model: type[pydantic.BaseModel]) -> tuple[tuple[Any, ...], str]:
    loc, kind, value = tuple(err["loc"]), err["type"], err.get("input")
    if kind == "extra_forbidden":
        bindy = _bindy_spelling(model, loc)
        if bindy is not None:
            return loc, (f"unknown field (did you mean '{bindy}'?): Bindy's fields are spelled in "
                         "camelCase, as in its CRDs")
        allowed = _allowed_keys(model, loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return loc, f"unknown field{hint}"
    if kind in _EXPECTED:
        return loc, _type_message(kind, value)
    if kind == "missing":
        return loc, "required field is missing"
    msg = err["msg"]
    msg = msg[0].lower() + msg[1:]
    if kind == "string_pattern_mismatch" and isinstance(value, str):
        pattern = err.get("ctx", {}).get("pattern", "")
        if pattern.endswith(r"\.$") and not value.endswith("."):
            return loc, f"must be a fully qualified name ending with '.' (write '{value}.')"
        return loc, f"{value!r} does not match the required pattern {pattern}"
    if not isinstance(value, (dict, list)):
        msg += f" (got {value!r})"
    return loc, msg


class _Document:
    """One YAML document being checked; collects its problems."""

    def __init__(self, file: str, node: yaml.Node, data: Any, problems: list[Problem], text: str,
                 file_text: FileText | None) -> None:
        self.node, self.data, self.problems, self.text, self.file_text = node, data, problems, text, file_text
        self.origin = Origin(file, node.start_mark.line + 1)
        self.file = file
        self.obj = ""
        self.failed = False

    def span(self) -> int:
        """Where the document's own text is in its file (from the line of its first node): Loaded.span."""
        return (self.node.start_mark.index - self.node.start_mark.column) * _SPAN + self.node.end_mark.index

    def report(self, loc: tuple[Any, ...], message: str, severity: Severity = Severity.ERROR) -> None:
        line = _line_of(self.node, loc)
        self.failed |= severity is Severity.ERROR
        self.problems.append(Problem(Origin(self.file, line), self.obj, _dotted(loc), message, severity))


def _check_metadata(doc: _Document, meta: dict[str, Any]) -> None:
    """What the API server would refuse in metadata: names, namespaces, label and annotation keys."""
    for field, check, longest in (("name", syntax.subdomain_error, 253), ("namespace", syntax.label_error, 63)):
        value = meta.get(field)  # longer ones: ObjectMeta's max_length reports them
        if isinstance(value, str) and 0 < len(value) <= longest and (error := check(value)):
            doc.report(("metadata", field), f"invalid {field} {value!r}: {error}")
    for field in ("labels", "annotations"):
        mapping = meta.get(field)
        for key, value in (mapping.items() if isinstance(mapping, dict) else ()):
            if isinstance(key, str) and (error := syntax.label_key_error(key)):
                doc.report(("metadata", field, key), f"invalid key {key!r}: {error}")
            elif field == "labels" and isinstance(value, str) and (error := syntax.label_value_error(value)):
                doc.report(("metadata", field, key), f"invalid label value {value!r}: {error}")


def _check_document(doc: _Document, default_namespace: str) -> Loaded | None:
    data = doc.data
    if not isinstance(data, dict):
        doc.report((), f"expected a mapping (a Kubernetes object), got {type(data).__name__}")
        return None
    kind = _kind_of(doc, data)
    if kind is None:
        return None
    # equal to what they were: one str object for every document instead of one each (kept with every
    # loaded object; 18 MB at 100,000 records)
    data["apiVersion"], data["kind"] = kinds.API_VERSION, kind.name
    meta: dict[str, Any] = data["metadata"] if isinstance(data.get("metadata"), dict) else {}
    name, namespace = meta.get("name"), meta.get("namespace")
    if type(namespace) is str:
        meta["namespace"] = namespace = sys.intern(namespace)
    if kind.namespaced and namespace is None and isinstance(name, str):
        meta["namespace"] = namespace = default_namespace
    key = ObjectKey(kind.name, namespace if kind.namespaced else None, str(name))
    doc.obj = syntax.printable(str(key)) if isinstance(name, str) else kind.name
    if not kind.namespaced and namespace is not None:
        doc.report(("metadata", "namespace"), f"{kind.name} is cluster-scoped; remove metadata.namespace")
    _check_metadata(doc, meta)

    if "status" in data:
        del data["status"]
        doc.report(("status",), "ignored: status is written by the agent, not read from Git",
                   Severity.WARNING)
    for path, message, is_error in shorthand.normalise(kind.name, data):
        loc = tuple(path.split("."))
        doc.report(loc, message, Severity.ERROR if is_error else Severity.WARNING)
    model = _validate(doc, kind, data)
    return None if model is None or doc.failed else Loaded(key, model, doc.origin, doc.file_text, doc.span())


def _kind_of(doc: _Document, data: dict[str, Any]) -> kinds.Kind | None:
    """The Bindy kind a document declares; None (reported) for other objects, versions and kinds."""
    api_version, kind_name = data.get("apiVersion"), data.get("kind")
    group = api_version.split("/")[0] if isinstance(api_version, str) else None
    if group != kinds.GROUP:
        if kind_name in kinds.KINDS:
            doc.report(("apiVersion",), f"{kind_name} needs apiVersion: {kinds.API_VERSION}")
        elif api_version is None and kind_name is None:
            doc.report((), "skipped: not a Kubernetes object (no apiVersion/kind)", Severity.WARNING)
        else:
            doc.report((), f"skipped: not a Bindy object ({api_version} {kind_name})", Severity.WARNING)
        return None
    if api_version != kinds.API_VERSION:
        doc.report(("apiVersion",), f"unsupported version {api_version!r}; use {kinds.API_VERSION}")
        return None
    kind = kinds.KINDS.get(kind_name) if isinstance(kind_name, str) else None
    if kind is None:
        close = difflib.get_close_matches(str(kind_name), list(kinds.KINDS), n=1, cutoff=0.6)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        doc.report(("kind",), f"unknown kind {kind_name!r} in {kinds.API_VERSION}{hint}")
    return kind


def _validate(doc: _Document, kind: kinds.Kind, data: dict[str, Any]) -> Any:
    """The schema model of the document, then the API server's admission rules; None on schema errors."""
    try:
        model = kind.model.from_document(data)  # strict types, Bindy's spelling of fields only
    except pydantic.ValidationError as exc:
        errors = exc.errors()
        for err in errors[:_MAX_ERRORS]:
            loc, message = _message(err, kind.model)
            doc.report(loc, message)
        if len(errors) > _MAX_ERRORS:
            doc.report((), f"and {len(errors) - _MAX_ERRORS:,} more schema errors in this document "
                       f"(the first {_MAX_ERRORS} are shown)")
        return None
    # after the schema, as the API server does, and on the validated object: what it reads is what
    # the plan is made of, however a document spelled it
    for violation in admission.violations(kind.name, model):
        doc.report(violation.loc, violation.message)
    for loc, entry in inert.found(kind.name, data):  # fields bindy-agent does not act on (load/inert.py)
        doc.report(loc, entry.message(), Severity.WARNING)
    model.share_field_sets()
    return model


def load_text(text: str, file: str, *, default_namespace: str = names.DEFAULT_NAMESPACE,
              budget: bounds.ReadBudget | None = None, source: SourceFile | None = None) -> Manifest:
    """Loads one file's text (multi-document), spending `budget` (a fresh default one if None). The
    objects keep `source`, to read their text again, or else the text itself."""
    budget = budget or bounds.ReadBudget(Limits())
    manifest = Manifest(objects=[], problems=[], files=1, text=FileText(text if source is None else source))
    refused = budget.precheck(text, file)
    if refused is not None:
        manifest.problems.append(refused)
        return manifest
    loader = _Loader(text)
    loader.duplicates = []
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
            _load_document(loader, start, node, data, text, file, default_namespace, manifest)
    except yaml.MarkedYAMLError as exc:
        manifest.problems.append(_yaml_problem(exc, file))
    except yaml.YAMLError as exc:
        manifest.problems.append(Problem(Origin(file, 1), "", "", f"YAML error: {exc}"))
    finally:
        loader.dispose()
    _fold_repeated_warnings(manifest.problems)
    return manifest


def _fold_repeated_warnings(found: list[Problem]) -> None:
    """A warning that recurs in one file (the same field, the same words) is listed once, at its first
    place, with how many more there are: a file of 100 records written with the same shorthand gave
    100 identical lines, and a repository 33,333, which hid everything else. Errors are all kept."""
    first: dict[tuple[str, str], int] = {}
    more: dict[tuple[str, str], int] = {}
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


def _construct(loader: _Loader, node: yaml.Node, text: str) -> tuple[Any, int | None]:
    """(data, node count) of a plain document, built in one pass; (None, None) when it must be
    checked for aliases first and built the general way."""
    if bounds.ReadBudget.plain(node, text):
        start = len(loader.duplicates)
        try:
            return construct.tree(node, loader, loader.duplicates, loader.shared)
        except construct.Unusual:
            del loader.duplicates[start:]
    return None, None


def _general(loader: _Loader, node: yaml.Node, file: str, start: int) -> tuple[Any, Problem | None]:
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
            return None, Problem(Origin(file, exc.line), "", _dotted(_path_to(node, exc.node)), exc.message)
        return None, _yaml_problem(exc, file)


def _path_to(root: yaml.Node, target: yaml.Node) -> tuple[Any, ...]:
    """The field path of a node in a document (a key: its mapping's path and the key), () if not found."""
    todo: list[tuple[yaml.Node, tuple[Any, ...]]] = [(root, ())]
    seen: set[int] = set()
    while todo:
        node, loc = todo.pop()
        if node is target:
            return loc
        if id(node) in seen:  # an alias: visited already
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                name = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
                if key_node is target:
                    return (*loc, name)
                todo.append((value_node, (*loc, name)))
        elif isinstance(node, yaml.SequenceNode):
            todo += [(item, (*loc, i)) for i, item in enumerate(node.value)]
    return ()


def _yaml_problem(exc: yaml.MarkedYAMLError, file: str) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark else 1
    context = exc.context
    if context and exc.context_mark and exc.context_mark.line + 1 != line:
        context += f" (opened at line {exc.context_mark.line + 1})"
    what = ": ".join(str(x) for x in (context, exc.problem) if x)
    return Problem(Origin(file, line), "", "", f"YAML syntax error: {what}")


def _load_document(loader: _Loader, start: int, node: yaml.Node, data: Any, text: str, file: str,
                   default_namespace: str, manifest: Manifest) -> None:
    manifest.documents += 1
    doc = _Document(file, node, data, manifest.problems, text, manifest.text)
    for line, key in loader.duplicates[start:]:
        manifest.problems.append(Problem(Origin(file, line), "", "", f"duplicate key {key!r} in a mapping"))
    if data is None:
        return
    loaded = _check_document(doc, default_namespace)
    if loaded is not None and len(loader.duplicates) == start:
        assert isinstance(manifest.objects, list)  # one file's part: its own list
        manifest.objects.append(loaded)


class SourceFile(Protocol):
    """One file of a revision, as a source (agent/sources/) hands it over."""

    @property
    def path(self) -> str:
        """Relative to the revision root, with '/' separators."""

    @property
    def size(self) -> int:
        """Its size in bytes as listed, known before reading (limits are checked against it)."""

    def read(self) -> bytes:
        """The file's bytes (at most `size`); raises FileRefused when it may not be read (a
        problem of that file), or SourceError / OSError when it cannot be."""


def _read(file: SourceFile, budget: bounds.ReadBudget, problems: list[Problem]) -> str | None:
    """The file's text, or None after reporting why it was not read."""
    try:
        problem = budget.admit(file.path, file.size)  # before a byte is read
        if problem is None:
            data = file.read()
            problem = budget.admit(file.path, len(data))  # in case a source listed too small a size
            if problem is None:
                budget.bytes -= len(data)
                return data.decode("utf-8")
    except FileRefused as exc:
        severity = Severity.WARNING if exc.warning else Severity.ERROR
        problem = Problem(Origin(file.path, 1), "", "", str(exc), severity)
    except (UnicodeDecodeError, OSError, SourceError) as exc:
        problem = Problem(Origin(file.path, 1), "", "", f"cannot read file: {exc}")
    problems.append(problem)
    return None


_Spent = tuple[int, int, int, int]  # what a file took of the read budget: bytes, documents, nodes, alias nodes


@dataclasses.dataclass(frozen=True)
class _Parsed:
    part: Manifest
    spent: _Spent


class FileCache:
    """The files of the last revision, parsed and validated, by path and content id (a Git blob id):
    a file whose content did not change is neither read nor parsed again. Only the latest
    revision's files are kept; a change of default namespace or limits starts afresh.

    It also keeps where each object of the last revision was defined, when no object was defined
    twice: the next revision then checks only the keys of the files that changed, instead of
    every key of the repository (see `_combine`)."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], _Parsed] = {}
        self._context: tuple[object, ...] = ()
        self._parts: list[Manifest] = []  # the last revision's parts, in file order ...
        self._seen: dict[ObjectKey, Origin] | None = None  # ... and their keys; None: start afresh
        self._asked: dict[str, list[Loaded]] = {}  # ... and the kinds asked of it, joined (Manifest.of_kind)
        self._touched: set[str] = set()  # the kinds of the files that differ from the last revision's
        self._last = _Positions()  # the last revision's files, position by position
        self.hits = self.misses = 0
        self.loaded = False  # a revision has been loaded through it

    def _take(self, key: tuple[str, str], budget: bounds.ReadBudget) -> Manifest | None:
        parsed = self._entries.get(key)
        if parsed is None or not budget.afford(parsed.spent):
            return None  # read and parsed again, so that an exceeded limit is reported as usual
        budget.charge(parsed.spent)
        self.hits += 1
        return parsed.part


def _content_id(file: SourceFile) -> str:
    return str(getattr(file, "blob", "") or "")


def _merge(total: Manifest, part: Manifest, seen: dict[ObjectKey, Origin]) -> bool:
    """Adds one file's part; True when it defines a key again. A cached part keeps its key and kind
    indexes, so an unchanged file costs set and list operations, not a loop over its objects."""
    total.documents += part.documents
    total.problems += part.problems
    kept = part.objects  # usually the file's own list, shared: the same object run after run for a cache
    keys = part.keys()
    twice = seen.keys() & keys.keys() if len(keys) == len(kept) else set(keys)  # or defined twice within
    if twice:
        kept = []
        for obj in part.objects:
            first = seen.setdefault(obj.key, obj.origin)
            if first is obj.origin:
                kept.append(obj)
            else:
                total.problems.append(Problem(obj.origin, str(obj.key), "",
                                              f"duplicate object: already defined at {first}"))
    else:
        seen.update(keys)
    _add(total, kept, _index(kept) if twice else part.kinds())
    return bool(twice)


def _add(total: Manifest, kept: Sequence[Loaded], kinds_of: dict[str, list[Loaded]]) -> None:
    _extend(total.__dict__.setdefault("_by_kind", {}), kinds_of)
    total.by_file.append(kept)


def _extend(index: dict[str, list[Loaded]], kinds_of: dict[str, list[Loaded]]) -> None:
    """A revision's kind index, extended by the next file's."""
    for kind, found in kinds_of.items():
        index.setdefault(kind, []).extend(found)


def _changed_keys(parts: list[Manifest], cache: FileCache) -> dict[ObjectKey, Origin] | None:
    """The last revision's key map updated for the parts that differ (by identity) from its
    parts, when that can be done without changing a verdict: None when some key is now defined
    twice (or was last time), so that the caller merges in order and reports each duplicate at
    the right file."""
    seen, old = cache._seen, cache._parts
    cache._seen = None  # taken: whatever happens below, the next revision starts from what is left
    if seen is None:
        return None
    now, before = {id(p) for p in parts}, {id(p) for p in old}
    added = [p for p in parts if id(p) not in before]
    cache._touched = set()
    for part in old:
        if id(part) not in now:
            cache._touched.update(part.kinds())
            gone = part.keys()
            for key in gone:
                seen.pop(key, None)  # a key left behind by mistake could only force the full merge
    for part in added:
        cache._touched.update(part.kinds())
        keys = part.keys()
        if len(keys) != len(part.objects) or not seen.keys().isdisjoint(keys):
            return None
        seen.update(keys)
    return seen


def _combine(parts: list[Manifest], cache: FileCache | None) -> Manifest:
    """One manifest of the files' parts, in file order; each object key once (the first
    definition wins, the others are problems)."""
    total = Manifest(objects=[], problems=[], files=len(parts))
    seen = _changed_keys(parts, cache) if cache is not None else None
    clean = True
    if seen is None:
        seen = {}
        for part in parts:
            clean &= not _merge(total, part, seen)
        total.objects = list(itertools.chain.from_iterable(total.by_file))
    else:  # nothing defined twice: the files' lists as they are; a kind's index when asked
        total.documents = sum(part.documents for part in parts)
        total.problems = list(itertools.chain.from_iterable(part.problems for part in parts))
        total.by_file = [part.objects for part in parts]
        total.objects = Joined(total.by_file)
        total.__dict__["_parts"] = parts
        if cache is not None:  # a kind no changed file has is the very list the last revision joined
            total.__dict__["_asked"] = {k: v for k, v in cache._asked.items() if k not in cache._touched}
    if cache is not None:
        cache._parts, cache._seen = parts, seen if clean else None
        cache._asked = total.__dict__.setdefault("_asked", {})  # filled as the revision is asked for kinds
    return total


def load_files(files: Sequence[SourceFile], *, default_namespace: str = names.DEFAULT_NAMESPACE,
               limits: Limits | None = None, cache: FileCache | None = None,
               progress: Callable[[int, int], None] | None = None) -> Manifest:
    """Loads every file of a revision within `limits`; paths in problems are the files' relative
    paths. With a `cache`, files whose content id did not change since the last call are reused.
    `progress` hears (files loaded, files), at most a hundred times."""
    limits = limits or Limits()
    if cache is not None and cache._context != (default_namespace, limits):
        cache._entries, cache._context, cache._parts, cache._seen = {}, (default_namespace, limits), [], None
        cache._last = _Positions()
    loaded = _reuse(files, cache, limits, default_namespace) if cache is not None else None
    if loaded is None:
        loaded = _load_in_order(files, cache, limits, default_namespace, progress)
    elif progress is not None:
        progress(len(files), len(files))
    parts, positions, fresh = loaded
    if cache is not None:
        cache._entries, cache._last = fresh, positions
        cache.loaded = True
    return _combine(parts, cache)


@dataclasses.dataclass
class _Positions:
    """What a revision's files were, position by position: the file objects, the cache key of each
    one that was cached (None: read again every time), and what the cached ones took together.
    Empty: the next revision is read in order."""

    files: list[SourceFile] = dataclasses.field(default_factory=list)
    keys: list[tuple[str, str] | None] = dataclasses.field(default_factory=list)
    spent: _Spent = (0, 0, 0, 0)


_Loaded = tuple[list[Manifest], _Positions, dict[tuple[str, str], _Parsed]]


def _one(file: SourceFile, budget: bounds.ReadBudget, cache: FileCache | None, default_namespace: str,
         fresh: dict[tuple[str, str], _Parsed]) -> tuple[Manifest, tuple[str, str] | None]:
    """One file's part, from the cache or read and parsed, and its cache key (None: not cached)."""
    key = (file.path, _content_id(file))
    part = cache._take(key, budget) if cache is not None and key[1] else None
    if part is not None:
        assert cache is not None
        fresh[key] = cache._entries[key]
        if part.text is not None:
            part.text.rebind(file)  # this revision's file: the same content, read from this checkout
        return part, key
    before, limited = budget.counters(), budget.limited
    unread: list[Problem] = []
    text = _read(file, budget, unread)
    if text is None:
        return Manifest(objects=[], problems=unread, files=1), None
    part = load_text(text, file.path, default_namespace=default_namespace, budget=budget, source=file)
    if cache is None or not key[1] or budget.limited != limited:  # cut by what was left: may read whole next time
        return part, None
    cache.misses += 1
    fresh[key] = _Parsed(part, budget.spent_since(before))
    return part, key


def _load_in_order(files: Sequence[SourceFile], cache: FileCache | None, limits: Limits, default_namespace: str,
                   progress: Callable[[int, int], None] | None) -> _Loaded:
    budget = bounds.ReadBudget(limits)
    parts: list[Manifest] = []
    keys: list[tuple[str, str] | None] = []
    fresh: dict[tuple[str, str], _Parsed] = {}
    step = max(1, len(files) // 100)
    for i, file in enumerate(files, 1):
        if budget.exhausted:
            break
        part, key = _one(file, budget, cache, default_namespace, fresh)
        parts.append(part)
        keys.append(key)
        if progress is not None and (i % step == 0 or i == len(files)):
            progress(i, len(files))
    if len(parts) < len(files):  # a limit stopped it: the next revision is read in order again
        return parts, _Positions(), fresh
    return parts, _Positions(list(files), keys, _sum(fresh[k].spent for k in keys if k is not None)), fresh


def _sum(spent: Iterable[_Spent], sign: int = 1, start: _Spent = (0, 0, 0, 0)) -> _Spent:
    b, d, n, a = start
    for sb, sd, sn, sa in spent:
        b, d, n, a = b + sign * sb, d + sign * sd, n + sign * sn, a + sign * sa
    return b, d, n, a


def _reuse(files: Sequence[SourceFile], cache: FileCache, limits: Limits, default_namespace: str) -> _Loaded | None:
    """The revision's parts when it is the last one's files but a few (a long-running agent's source
    hands out the same file objects while they are unchanged): the few are read or taken from the
    cache, the rest are the last parts as they are, and what they took is charged at once. None
    when that cannot give what reading in order gives: another number of files, most of them
    changed, or a limit reached (then the order decides what is read)."""
    last = cache._last
    if not last.files or len(last.files) != len(files) or len(cache._parts) != len(files):
        return None
    keys = list(last.keys)
    changed = [i for i, same in enumerate(map(operator.is_, last.files, files)) if not same or keys[i] is None]
    if len(changed) > len(files) // 4:
        return None
    old = [cache._entries[k] for i in changed if (k := keys[i]) is not None]
    kept = _sum((o.spent for o in old), -1, last.spent)
    budget = bounds.ReadBudget(limits)
    if not budget.afford(kept):
        return None
    budget.charge(kept)
    fresh = dict(cache._entries)
    for i in changed:
        if (k := keys[i]) is not None:
            fresh.pop(k, None)
    parts = list(cache._parts)
    hits = cache.hits
    for i in changed:
        parts[i], keys[i] = _one(files[i], budget, cache, default_namespace, fresh)
        if budget.exhausted or budget.limited:  # what was left decided: only the order gives the answer
            cache.hits = hits
            return None
    cache.hits += len(files) - len(changed)
    spent = _sum((fresh[k].spent for i in changed if (k := keys[i]) is not None), 1, kept)
    return parts, _Positions(list(files), keys, spent), fresh
