"""The shared state records when the leader last wrote the cluster: a rerun of the same revision with
the same outcome keeps the old time (no state write) only when it wrote no Kubernetes object, since a
standby trusts its own list of the cluster only if it was made after the leader's last write."""

from __future__ import annotations

import time
import types

from agent.model.key import ObjectKey
from agent.model.ownership import RunState
from agent.reconcile.kubeapply import KubeResult
from agent.run import orchestrator
from agent.run.memory import Memory
from agent.run.planner import Options


def _rerun(kube: KubeResult | None) -> tuple[float, float]:
    run = orchestrator._Run(None, None, Options(), "r1", Memory())  # type: ignore[arg-type]
    earlier = time.time() - 5
    run.state = RunState("abc", "abc", "applied", earlier, message="applied abc")
    result = orchestrator.RunOutcome("r1", "abc", "applied", message="applied abc")
    result.kube = kube
    return earlier, run._next_state(types.SimpleNamespace(revision="abc"), result).reconciled_at  # type: ignore[arg-type]


def test_a_rerun_that_wrote_nothing_keeps_the_time_and_one_that_wrote_records_it() -> None:
    earlier, kept = _rerun(None)
    assert kept == earlier
    earlier, now = _rerun(KubeResult([], applied=[ObjectKey("ConfigMap", "dns-system", "x")]))
    assert now > earlier + 4
