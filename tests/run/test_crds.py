"""`install-crds` (agent/run/crds.py) goes through the same plan: the CRDs the models generate, once."""

from __future__ import annotations

from agent.desired.hierarchy import Desired
from agent.plan import crddiff
from agent.run import crds
from tests.support import crdworld
from tests.support.crdworld import _Api

desired = crdworld.desired  # the fixture, shared


def test_install_crds_goes_through_the_same_plan(desired: Desired) -> None:
    api = _Api()
    assert crds.install_crds(api) == crddiff.names()  # type: ignore[arg-type]
    assert crds.install_crds(api) == []  # type: ignore[arg-type]
    assert len(api.writes) == 12
