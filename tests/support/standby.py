"""A standby's collaborators without a cluster or a server, for unit tests of following and taking over:
a source at one revision, and what a follow's plan returns for a given list of the cluster."""

from __future__ import annotations

import pathlib
from types import SimpleNamespace
from typing import Any

from agent.model.observed import KubeObserved, Observed


class _Source:
    def __init__(self, tmp: pathlib.Path) -> None:
        self.lock_path = tmp / "lock"

    def bound(self, _remaining: Any) -> None:
        pass

    def snapshot(self) -> Any:
        return SimpleNamespace(revision="a" * 40)


def _planned(kube: KubeObserved) -> Any:
    validated = SimpleNamespace(desired=SimpleNamespace(zones=[]), ok=True)
    return SimpleNamespace(validated=validated, plan=object(), observed=Observed(kube=kube), kube_fast=False,
                           dns_fast=False, error=None)
