"""What a plan covers: every zone and Kubernetes, the zones a push changed (push-first), or the
zones a second DNS round reads again. The planner, the gate and the writers read it; nothing here
decides."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ScopeRule(StrEnum):
    ALL = "all"  # every zone, Kubernetes included
    # push-first: the zones the push changed, resolved once desired is built
    CHANGED_ZONES = "changed-zones"
    # the second DNS round: the zones whose serial moved while the first was written
    STALE = "stale"


@dataclass(frozen=True)
class Scope:
    zones: frozenset[str] | None  # None: every zone
    kubernetes: bool  # Kubernetes observed, planned and applied
    rule: ScopeRule

    @classmethod
    def changed_zones(cls) -> Scope:
        """Push-first: zones unresolved until the desired state is built; Kubernetes left to the
        reconcile."""
        return cls(None, False, ScopeRule.CHANGED_ZONES)

    @classmethod
    def stale(cls, zones: frozenset[str]) -> Scope:
        return cls(zones, False, ScopeRule.STALE)


ALL = Scope(None, True, ScopeRule.ALL)
