"""JSON Schemas and Kubernetes CRDs generated from the models (pure; the CLI writes the files).

A CRD needs a *structural* OpenAPI v3 schema: no `$ref`, no `anyOf` with null (use `nullable`),
no `additionalProperties: false`, and `x-kubernetes-preserve-unknown-fields` on free-form objects.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from agent.model import kinds, names

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_KEEP = (
    "description", "type", "format", "enum", "default", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "pattern", "minLength", "maxLength", "minItems", "maxItems", "required",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
)


def json_schema(kind: kinds.Kind) -> dict[str, Any]:
    schema = kind.model.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": f"https://{kinds.GROUP}/schemas/{kinds.VERSION}/{kind.name}.json",
        **schema,
    }


def _structural(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _structural(merged, defs)
    if "anyOf" in node:
        return _nullable(node, defs)
    out = _kept(node)
    if "properties" in node:
        out["type"] = "object"
        out["properties"] = {k: _structural(v, defs) for k, v in node["properties"].items()}
    if "items" in node:
        out["items"] = _structural(node["items"], defs)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and extra:
        out["additionalProperties"] = _structural(extra, defs)
    elif out.get("type") == "object" and "properties" not in node and extra is not False:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _nullable(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """An anyOf of one type and maybe null: that type, `nullable` with null (a structural schema has
    no anyOf)."""
    options = [o for o in node["anyOf"] if o.get("type") != "null"]
    nullable = len(options) < len(node["anyOf"])
    if len(options) != 1:
        raise ValueError(f"cannot make a structural schema of anyOf {node['anyOf']!r}")
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    merged = _structural({**options[0], **rest}, defs)
    if nullable:
        merged["nullable"] = True
    return merged


def _kept(node: dict[str, Any]) -> dict[str, Any]:
    """The keywords of a node a structural schema keeps (a const as a one-value enum, an enum typed
    string, no null default)."""
    out: dict[str, Any] = {k: node[k] for k in _KEEP if k in node}
    if "const" in node:
        out["enum"] = [node["const"]]
    if "enum" in out and "type" not in out:
        out["type"] = "string"
    if out.get("default", 0) is None:
        del out["default"]
    return out


def crd(kind: kinds.Kind) -> dict[str, Any]:
    schema = kind.model.model_json_schema(by_alias=True, mode="validation")
    defs = schema.get("$defs", {})
    props = schema["properties"]
    open_api: dict[str, Any] = {
        "description": (kind.model.__doc__ or kind.name).strip().splitlines()[0],
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": _structural(props["spec"], defs),
            "status": _structural(props["status"], defs),
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": kind.crd_name,
            "labels": dict(names.MANAGED_BY),
        },
        "spec": {
            "group": kinds.GROUP,
            "names": {
                "kind": kind.name,
                "listKind": f"{kind.name}List",
                "plural": kind.plural,
                "singular": kind.singular,
                "shortNames": list(kind.short_names),
                "categories": ["bindy"],
            },
            "scope": "Namespaced" if kind.namespaced else "Cluster",
            "versions": [
                {
                    "name": kinds.VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": n, "type": t, "jsonPath": p} for n, t, p in kind.columns
                    ],
                    "schema": {"openAPIV3Schema": open_api},
                }
            ],
        },
    }


def rendered() -> dict[str, str]:
    """Every generated file: relative path under schemas/ -> exact text."""
    files: dict[str, str] = {}
    for kind in kinds.KINDS.values():
        files[f"json/{kind.name}.json"] = json.dumps(json_schema(kind), indent=2,
                                                     sort_keys=True) + "\n"
        files[f"crds/{kind.crd_name}.yaml"] = yaml.safe_dump(
            crd(kind), sort_keys=False, width=100, default_flow_style=False
        )
    files["crds/kustomization.yaml"] = _crd_kustomization()
    return files


def _crd_kustomization() -> str:
    """A kustomize base of the CRDs, so `deploy/kustomization.yaml` can include
    `../schemas/crds`."""
    names = sorted(f"{kind.crd_name}.yaml" for kind in kinds.KINDS.values())
    body = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": names}
    return ("# Generated by `bindy-agent schemas`: the 12 CRDs as a kustomize base (deploy/ "
            "includes it).\n") + \
        yaml.safe_dump(body, sort_keys=False)


def spec_paths(node: dict[str, Any], prefix: str = "spec") -> set[str]:
    """Dotted field paths of a structural schema (`[]` for list items, `{}` for map values).

    A free-form node (preserve-unknown-fields) ends its branch with a `.*` path: anything below
    is accepted.
    """
    paths = {prefix}
    if node.get("x-kubernetes-preserve-unknown-fields"):
        paths.add(prefix + ".*")
    for key, child in (node.get("properties") or {}).items():
        paths |= spec_paths(child, f"{prefix}.{key}")
    if isinstance(node.get("items"), dict):
        paths |= spec_paths(node["items"], prefix + "[]")
    if isinstance(node.get("additionalProperties"), dict):
        paths |= spec_paths(node["additionalProperties"], prefix + "{}")
    return paths
