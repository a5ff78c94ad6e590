"""What a run returns: its outcome, what it planned and wrote, what failed, and how long each step
took (agent/run/orchestrator.py makes it; the CLI, the scheduler, the metrics and the report read
it)."""

from __future__ import annotations

import dataclasses

from agent.model import problems
from agent.model.steps import Steps
from agent.plan.changes import Plan
from agent.reconcile import dnsresult, kubeapply
from agent.run.decision import Decision


@dataclasses.dataclass
class RunOutcome:
    run_id: str
    revision: str | None
    # applied / partial / rejected / unchanged / unreachable / busy / planned / preempted
    outcome: str
    problems: list[problems.Problem] = dataclasses.field(default_factory=list)
    plan: Plan | None = None
    kube: kubeapply.KubeResult | None = None
    dns: dnsresult.DnsResult | None = None
    superseded: list[str] = dataclasses.field(default_factory=list)
    parsed: bool = False
    notes_pushed: bool | None = None
    message: str = ""
    errors: list[str] = dataclasses.field(default_factory=list)  # steps that failed as a whole
    # the newest commit is one the gate or validation refused (this run or before)
    rejected_head: bool = False
    # the wall time of each step this run made (steps.py)
    steps: Steps = dataclasses.field(default_factory=dict)
    replan: Plan | None = None  # the second round's plan, of the zones found stale while applying
    deadline_hit: bool = False  # the run's deadline passed with something left undone
    # a later run may do what this one could not (the errors' `retryable`: a server or pod not
    # reachable yet, the deadline): a long-running agent runs again soon instead of at its next tick
    retryable: bool = False
    # the run's kind and why (agent/run/decide.py); None: busy, unreachable early
    decision: Decision | None = None

    @property
    def refusals(self) -> list[str]:
        return list(self.plan.refusals) if self.plan else []

    @property
    def failures(self) -> list[str]:
        out = list(self.errors)
        if self.kube is not None:
            out += [f"{k}: {m}"
                    for k, m in sorted(self.kube.failed.items(), key=lambda kv: str(kv[0]))]
        if self.dns is not None:
            for z in self.dns.zones:
                out += [f"{z.name}: {e}"
                        for e in (z.primary_error, z.secondary_error, z.refused, z.stale) if e]
                out += [f"{z.name}: {c.server} does not answer the new {c.name} {c.rtype}"
                        for c in z.checks if not c.ok]
            out += self.dns.errors
        return out

    @property
    def conflicts(self) -> list[str]:
        if self.plan is None:
            return []
        if self.replan is None:
            return list(self.plan.conflicts)
        again = {zp.name for zp in self.replan.zones or []}
        return [c for c in self.plan.conflicts
                if c.split(": ", 1)[0] not in again] + list(self.replan.conflicts)
