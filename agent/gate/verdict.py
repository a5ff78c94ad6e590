"""The one entry of the gate: every plan a run, a dry run, `plan --kubeconfig`, a pull request's
delta or a second DNS round may apply passes through `approve`, which returns it with the refusals
of the rules that apply to its scope (any refusal: nothing of it is applied).

    every scope      each zone's deletes and whole-zone removal, a large Kubernetes prune
                     (agent/gate/safety.py), zones found in sync left out
    STALE            (the zones planned again after they changed while written) every zone's, then a
                     primary that still refuses the agent's transfer (agent/gate/transfers.py)
"""

from __future__ import annotations

import dataclasses

from agent.gate import safety, transfers
from agent.model.findings import Refusal
from agent.model.scope import ALL, Scope, ScopeRule
from agent.plan.changes import Plan


def refusals(plan: Plan, policy: safety.Policy, scope: Scope = ALL) -> list[Refusal]:
    """Every reason to refuse `plan`, in the order people read them: the zones', in plan order, then
    the prune's (or, in a second round, the transfers still refused)."""
    if scope.rule is not ScopeRule.STALE:
        return safety.check(plan, policy)
    zones = plan.zones or []
    refused = [Refusal(zp.name, why) for zp in zones if (why := safety.zone_refusal(zp, policy))]
    named = {r.zone for r in refused}
    return refused + [r for zp in zones if zp.name not in named
                      and (r := transfers.still_refused(zp))]


def approve(plan: Plan, policy: safety.Policy, scope: Scope = ALL) -> Plan:
    """`plan` as the gate leaves it: the same plan, with its refusals (empty: it may be applied)."""
    return dataclasses.replace(plan, refused=tuple(refusals(plan, policy, scope)))
