"""Issue 24, round 2: Bindy's CRDs and the namespaces a sync creates are lines of the plan like every
other Kubernetes object - read before any write (observe), decided by the plan, shown in text, JSON
and Markdown, gated, then written by reconcile/ in that order - and `verify` / "settled" each name one
thing. The real API server half (a fresh cluster, a second plan, a refused revision) is
tests/integration/test_crd_plan_lines.py."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from agent.clients import rfc2136
from agent.desired import hierarchy
from agent.desired.hierarchy import Desired
from agent.model import kinds, names, schema
from agent.model.observed import KubeObserved, Observed
from agent.plan import build, crddiff, render
from agent.plan.changes import Plan
from agent.plan.zoneplan import ZonePlan
from agent.reconcile import dnsapply, dnsverify, kubeapply
from agent.run import crds
from tests.conftest import SAMPLE, load_dir

CRD = "CustomResourceDefinition"
NAMESPACES = ("dns-system", names.DEFAULT_AGENT_NAMESPACE)


@pytest.fixture(scope="module")
def desired() -> Desired:
    manifest = load_dir(SAMPLE)
    assert manifest.ok
    return hierarchy.build(manifest)


def _established(body: dict[str, Any]) -> dict[str, Any]:
    """A CRD as the API server holds it: the body applied, plus what the server fills in."""
    live = copy.deepcopy(body)
    live["metadata"].update(uid="u-" + body["metadata"]["name"], resourceVersion="1", generation=1)
    live["status"] = {"conditions": [{"type": "Established", "status": "True"}],
                      "acceptedNames": live["spec"]["names"]}
    return live


def _installed() -> dict[str, dict[str, Any] | None]:
    return {body["metadata"]["name"]: _established(body) for body in crddiff.wanted()}


def _plan(desired: Desired, *, crds: dict[str, dict[str, Any] | None] | None,
          namespaces: set[str] = frozenset(), create_namespaces: bool = True) -> Plan:  # type: ignore[assignment]
    kube = KubeObserved({}, set(), set(namespaces), crds=crds)
    return build.build(desired, Observed(kube, None), create_namespaces=create_namespaces)


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


class _Api:
    """A Kubernetes API that keeps what is applied and records every write in order."""

    namespaces = None

    def __init__(self, objects: dict[tuple[str, str | None, str], dict[str, Any]] | None = None) -> None:
        self.objects = dict(objects or {})
        self.writes: list[tuple[str, str]] = []

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.objects.get((kind, namespace, name))

    def list(self, kind: str, **_: Any) -> list[dict[str, Any]]:
        return [v for (k, _ns, _n), v in self.objects.items() if k == kind]

    def apply(self, body: dict[str, Any]) -> dict[str, Any]:
        meta = body["metadata"]
        self.writes.append((body["kind"], meta["name"]))
        stored = _established(body) if body["kind"] == CRD else {**body, "metadata": {**meta, "uid": "u"}}
        self.objects[(body["kind"], meta.get("namespace"), meta["name"])] = stored
        return stored


def test_apply_writes_the_planned_crds_then_namespaces_then_objects(desired: Desired) -> None:
    plan = _plan(desired, crds=dict.fromkeys(crddiff.names()))
    api = _Api()
    result = kubeapply.apply(api, plan, KubeObserved({}, set(), set()),  # type: ignore[arg-type]
                             options=kubeapply.KubeApplyOptions())
    assert result.ok, result.failed
    kinds_written = [kind for kind, _ in api.writes]
    assert kinds_written[:14] == [CRD] * 12 + ["Namespace"] * 2
    assert CRD not in kinds_written[14:] and len(result.applied) == 38


def test_apply_of_a_plan_without_crd_lines_writes_no_crd(desired: Desired) -> None:
    plan = _plan(desired, crds=_installed(), namespaces=set(NAMESPACES))
    api = _Api()
    kubeapply.apply(api, plan, KubeObserved({}, set(), set(NAMESPACES)),  # type: ignore[arg-type]
                    options=kubeapply.KubeApplyOptions())
    assert [w for w in api.writes if w[0] in (CRD, "Namespace")] == []


def test_install_crds_goes_through_the_same_plan(desired: Desired) -> None:
    api = _Api()
    assert crds.install_crds(api) == crddiff.names()  # type: ignore[arg-type]
    assert crds.install_crds(api) == []  # type: ignore[arg-type]
    assert len(api.writes) == 12


def test_each_name_means_one_thing() -> None:
    """Reading served data back, confirming a run's zones, the queued zones of an apply and a zone
    already in sync each have their own name; the old ones that meant several things are gone."""
    assert callable(rfc2136.confirm_served) and callable(dnsverify.confirm_zones)
    assert callable(dnsapply.DnsApply.confirm_queued)
    assert not hasattr(rfc2136, "verify") and not hasattr(dnsverify, "verify")
    assert not hasattr(dnsapply.DnsApply, "verify")
    fields = {f.name for f in ZonePlan.__dataclass_fields__.values()}
    assert "in_sync" in fields and "settled" not in fields
    assert hasattr(ZonePlan, "ownership_after") and not hasattr(ZonePlan, "settled_ownership")
