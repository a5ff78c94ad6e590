"""One kustomization file, read strictly before kustomize may see it (agent/sources/kustomize.py
builds).

kustomize reads a kustomization as JSON with Go's decoder, which matches field names
case-insensitively and with Unicode folding (`RESOURCES` and `reſources` are `resources` to it). So
the agent reads every field by its exact name against kustomize's own types (kustomize v5,
sigs.k8s.io/kustomize/api/types) and refuses, at its line, any other field, a duplicate, an alias
merge (`<<`) or a value of the wrong shape. Every value that names a file, a directory or a URL is
listed (`Ref`) for the caller to resolve inside the repository; plugins and Helm charts are refused.
What kustomize then reads is not the file as written but the data just checked, written back as JSON
(`Parsed.canonical`): a YAML reading that differed between PyYAML and Go cannot smuggle a field past
the check.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import yaml

# the names kustomize and Flux read
NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")

_STR = "tag:yaml.org,2002:str"
# what a value may be
S, MAP, PATH, BASE, FILES, SMP = "scalar", "map", "path", "base", "files", "smp"
_PLUGIN = "a {} plugin (it would run code)"
REFUSED = {"generators": _PLUGIN.format("generator"), "transformers": _PLUGIN.format("transformer"),
           "validators": _PLUGIN.format("validator"), "helmCharts": "a Helm chart",
           "helmGlobals": "a Helm chart", "helmChartInflationGenerator": "a Helm chart"}

_GVK = {"group": S, "version": S, "kind": S}
_SELECTOR = {**_GVK, "name": S, "namespace": S, "labelSelector": S, "annotationSelector": S}
_GEN_OPTIONS = {"labels": MAP, "annotations": MAP, "disableNameSuffixHash": S, "immutable": S}
_GENERATOR = {"namespace": S, "name": S, "behavior": S, "literals": [S], "files": [FILES],
              "envs": [PATH], "env": PATH, "options": _GEN_OPTIONS}
_PATCH = {"path": PATH, "patch": S, "target": _SELECTOR, "options": MAP}
_FIELD_OPTIONS = {"delimiter": S, "index": S, "encoding": S, "create": S}
_REPLACEMENT = {"path": PATH,
                "source": {**_GVK, "name": S, "namespace": S, "fieldPath": S,
                           "options": _FIELD_OPTIONS},
                "targets": [{"select": _SELECTOR, "reject": [_SELECTOR], "fieldPaths": [S],
                             "options": _FIELD_OPTIONS}]}
_IMAGE = {"name": S, "newName": S, "newTag": S, "digest": S, "tagSuffix": S}
FIELDS: dict[str, Any] = {
    "apiVersion": S, "kind": S,
    "metadata": {"name": S, "namespace": S, "labels": MAP, "annotations": MAP},
    "openapi": {"path": PATH, "version": S}, "namePrefix": S, "nameSuffix": S, "namespace": S,
    "commonLabels": MAP, "commonAnnotations": MAP,
    "labels": [{"pairs": MAP, "includeSelectors": S, "includeTemplates": S,
                "fields": [{**_GVK, "path": S, "create": S}]}],
    "patchesStrategicMerge": [SMP], "patchesJson6902": [_PATCH], "patches": [_PATCH],
    "images": [_IMAGE], "imageTags": [_IMAGE], "replacements": [_REPLACEMENT],
    "replicas": [{"name": S, "count": S}],
    "vars": [{"name": S, "objref": {"apiVersion": S, **_GVK, "name": S, "namespace": S},
              "fieldref": {"fieldPath": S}}],
    "sortOptions": {"order": S, "legacySortOptions": {"orderFirst": [S], "orderLast": [S]}},
    "resources": [BASE], "components": [BASE], "bases": [BASE], "crds": [PATH],
    "configMapGenerator": [_GENERATOR], "secretGenerator": [{**_GENERATOR, "type": S}],
    "generatorOptions": _GEN_OPTIONS, "configurations": [PATH], "buildMetadata": [S],
    **{field: None for field in REFUSED},
}


class Invalid(Exception):
    """A kustomization the agent will not hand to kustomize: why, at which line."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message, self.line = message, line


class Ref(NamedTuple):
    """A value of a kustomization that names a file, a directory or a URL."""

    where: str  # the field, e.g. resources[2] or patches[0].path
    entry: str  # as written
    line: int
    kind: str  # BASE: a file or a kustomization's directory; PATH: a file; FILES: [key=]a file;
    # SMP: a strategic merge patch entry: a file, or (inline: `entry` is its YAML) a patch, still
    # checked as a path


class Parsed(NamedTuple):
    refs: list[Ref]
    canonical: bytes  # what kustomize reads: the checked data, as JSON


def read(text: bytes) -> Parsed:
    """A kustomization's references and canonical form; Invalid (at its line) when anything is not
    as kustomize's types say, or names a plugin or a Helm chart."""
    try:
        node = yaml.compose(text.decode("utf-8"), Loader=yaml.CSafeLoader)
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        raise Invalid(f"not a kustomization kustomize can read: {exc}",
                      mark.line + 1 if mark else 1) from None
    if node is None:
        return Parsed([], b"{}\n")
    if not isinstance(node, yaml.MappingNode):
        raise Invalid("not a kustomization (a mapping of fields)", _line(node))
    import json  # only for a kustomization

    refs: list[Ref] = []
    data = _walk(node, FIELDS, "", refs)
    return Parsed(refs, json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8") + b"\n")


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _walk(node: yaml.Node, schema: Any, where: str, refs: list[Ref]) -> Any:
    """`node` checked against `schema` (a dict of fields, a [list], or one of S, MAP, PATH, ...), as
    plain data."""
    if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null":
        return None
    if isinstance(schema, dict):
        return _fields(node, schema, where, refs)
    if isinstance(schema, list):
        if not isinstance(node, yaml.SequenceNode):
            raise Invalid(f"{where or 'the kustomization'}: a list was expected", _line(node))
        return [_walk(item, schema[0], f"{where}[{i}]", refs) for i, item in enumerate(node.value)]
    if schema == MAP:
        if not isinstance(node, yaml.MappingNode):
            raise Invalid(f"{where}: a mapping of names to values was expected", _line(node))
        return {str(_scalar(k, where)): _scalar(v, where) for k, v in node.value}
    value = _scalar(node, where)
    if schema != S:
        if node.tag != _STR:
            raise Invalid(f"{where}: a path (a string) was expected", _line(node))
        refs.append(Ref(where, value, _line(node), schema))
    return value


def _scalar(node: yaml.Node, where: str) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        raise Invalid(f"{where}: a single value was expected", _line(node))
    if node.tag == _STR:
        return node.value
    try:
        value = yaml.constructor.SafeConstructor().construct_object(node)
    except yaml.YAMLError:
        raise Invalid(f"{where}: a value with a tag ({node.tag}) kustomize may read otherwise",
                      _line(node)) from None
    return value if isinstance(value, (bool, int, float)) or value is None else node.value


def _fields(node: yaml.Node, schema: dict[str, Any], where: str, refs: list[Ref]) -> dict[str, Any]:
    if not isinstance(node, yaml.MappingNode):
        raise Invalid(f"{where or 'the kustomization'}: a mapping of fields was expected",
                      _line(node))
    out: dict[str, Any] = {}
    for key, value in node.value:
        name = key.value if isinstance(key, yaml.ScalarNode) and key.tag == _STR else None
        here = f"{where}.{name}" if where else str(name)
        if name is None or name not in schema:
            raise Invalid(_unknown(key, schema, where), _line(key))
        if name in out:
            raise Invalid(f"{here}: given twice", _line(key))
        if schema[name] is None:  # a plugin or a Helm chart
            if value.tag == "tag:yaml.org,2002:null" or (not isinstance(value, yaml.ScalarNode)
                                                         and not value.value):
                out[name] = None
                continue
            raise Invalid(f"{here}: {REFUSED[name]} is refused: the agent builds kustomizations "
                          "without plugins, exec functions or Helm; render it in CI and commit the "
                          "output", _line(key))
        out[name] = _walk(value, schema[name], here, refs)
    return out


def _unknown(key: yaml.Node, schema: dict[str, Any], where: str) -> str:
    import json
    shown = json.dumps(key.value if isinstance(key, yaml.ScalarNode) else "<not a name>",
                       ensure_ascii=True)
    place = f" in {where}" if where else ""
    folded = [name for name in schema if isinstance(key, yaml.ScalarNode) and name.casefold() ==
              str(key.value).casefold()]
    if folded:
        return (f"field {shown}{place} is not {folded[0]!r}: kustomize would read it as "
                f"{folded[0]!r}, the agent reads "
                "field names exactly as kustomize writes them; write it so")
    return (f"unknown field {shown}{place}: not a field of a kustomization (kustomize v5); the "
            "agent builds only kustomizations it can read whole")
