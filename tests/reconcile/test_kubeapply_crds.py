"""Server-side apply of a plan's CRD and namespace lines (agent/reconcile/kubeapply.py): CRDs first, then
namespaces, then the revision's objects; a plan without CRD lines writes no CRD."""

from __future__ import annotations

from agent.desired.hierarchy import Desired
from agent.model.observed import KubeObserved
from agent.plan import crddiff
from agent.reconcile import kubeapply
from tests.support import crdworld
from tests.support.crdworld import CRD, NAMESPACES, _Api, _installed, _plan

desired = crdworld.desired  # the fixture, shared


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
