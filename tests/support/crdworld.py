"""Bindy's CRDs and the sample's namespaces as plan lines, for unit tests of planning and applying them: the
sample's desired state (module fixture `desired`), a CRD as the API server holds it, every CRD installed, a
plan against a cluster with some CRDs and namespaces, and a Kubernetes API that keeps what is applied."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agent.desired import hierarchy
from agent.desired.hierarchy import Desired
from agent.model import names
from agent.model.observed import KubeObserved, Observed
from agent.plan import build, crddiff
from agent.plan.changes import Plan
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
    return build.build(desired, Observed(kube, None),
                       choices=build.KubeChoices(create_namespaces=create_namespaces))


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
