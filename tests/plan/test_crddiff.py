"""Bindy's CRDs and the namespaces a sync creates are lines of the plan like every other Kubernetes object:
decided by the plan from what observe read, shown in text, JSON and Markdown (CRDs, then namespaces, then
the revision's objects), planned only when observed. The real API server half is
tests/integration/test_crd_plan_lines.py."""

from __future__ import annotations

import json
from typing import Any

from agent.desired.hierarchy import Desired
from agent.model import kinds, names, schema
from agent.plan import build, crddiff, render
from tests.support import crdworld
from tests.support.crdworld import CRD, NAMESPACES, _installed, _plan

desired = crdworld.desired  # the fixture, shared


def _targets(doc: dict[str, Any], kind: str) -> list[tuple[str, str]]:
    return [(c["action"], c["target"]["name"]) for c in doc["changes"] if c["target"].get("kind") == kind]


def test_a_fresh_cluster_plans_every_crd_and_namespace_create_in_text_json_and_markdown(desired: Desired) -> None:
    plan = _plan(desired, crds=dict.fromkeys(crddiff.names()))
    text = render.render_text(plan)
    for kind in kinds.KINDS.values():
        assert f"  + {CRD} {kind.crd_name}  (Bindy's CRD, generated from the agent's models)\n" in text
    assert "  + Namespace dns-system  (created: objects are declared in it)\n" in text
    assert (f"  + Namespace {names.DEFAULT_AGENT_NAMESPACE}  (created: the agent's own namespace (its inventory "
            "and state))\n") in text
    # CRDs, then namespaces, then the revision's objects: the order apply writes them in
    shown = [line.split()[1] for line in text.splitlines() if line.startswith("  + ")]
    assert shown[:14] == [CRD] * 12 + ["Namespace"] * 2 and not {CRD, "Namespace"} & set(shown[14:])
    assert text.splitlines()[-1] == "Plan: 52 to create, 0 to update, 0 to delete."  # 38 objects, 12 CRDs, 2 NS

    doc = json.loads(render.render_json(plan))
    assert _targets(doc, CRD) == [("create", k.crd_name) for k in kinds.KINDS.values()]
    assert _targets(doc, "Namespace") == [("create", ns) for ns in sorted(NAMESPACES)]
    assert doc["summary"] == {"create": 52, "update": 0, "delete": 0}
    crd_line = next(c for c in doc["changes"] if c["target"]["kind"] == CRD)
    assert crd_line["after"] == schema.crd(kinds.KINDS["ClusterBind9Provider"]) and crd_line["layer"] == "kubernetes"
    ns_line = next(c for c in doc["changes"] if c["target"] == {"kind": "Namespace", "namespace": None,
                                                                "name": "dns-system"})
    assert (ns_line["after"]["metadata"]["name"], ns_line["reason"]) == ("dns-system", build.NAMESPACE_DECLARED)

    markdown = render.render_markdown(plan)
    # in the fold of what the agent makes, not among the repository's CRs
    folded = markdown[markdown.index("<details>"):]
    assert (f"| `+` | `{CRD} dnszones.bindy.firestoned.io` | `(Bindy's CRD, generated from the agent's models)` |  |"
            in folded)
    assert "| `+` | `Namespace dns-system` | `(created: objects are declared in it)` |  |" in folded


def test_a_second_plan_after_apply_shows_neither_crds_nor_namespaces(desired: Desired) -> None:
    plan = _plan(desired, crds=_installed(), namespaces=set(NAMESPACES))
    assert plan.crds == [] and plan.namespaces == []
    shown = {c.target.kind for c in plan.changes if c.target.layer == "kubernetes"}  # type: ignore[union-attr]
    assert CRD not in shown and "Namespace" not in shown
    assert " CustomResourceDefinition " not in render.render_text(plan)


def test_a_crd_edited_by_hand_is_an_update_line_naming_the_field(desired: Desired) -> None:
    installed = _installed()
    name = kinds.KINDS["TXTRecord"].crd_name
    edited = installed[name]
    assert edited is not None
    del edited["spec"]["versions"][0]["additionalPrinterColumns"]
    plan = _plan(desired, crds=installed, namespaces=set(NAMESPACES))
    assert [(c.action, c.name) for c in plan.crds] == [("update", name)]
    text = render.render_text(plan)
    assert (f"  ~ {CRD} {name}  (the installed CRD differs from the agent's models) changed: "
            "spec.versions[0].additionalPrinterColumns\n") in text


def test_crds_not_observed_are_not_planned(desired: Desired) -> None:
    """A run that installs no CRD (--no-install-crds), or remembers the cluster, reads none and plans none;
    without --create-namespaces no namespace is planned (the objects in one say why they wait)."""
    plan = _plan(desired, crds=None, create_namespaces=False)
    assert plan.crds == [] and plan.namespaces == []
    assert {c.target.kind for c in plan.changes}.isdisjoint({CRD, "Namespace"})  # type: ignore[union-attr]
    assert "namespace dns-system does not exist" in next(iter(plan.blocked.values()))
    assert "CustomResourceDefinition" not in render.render_text(build.offline(desired))
