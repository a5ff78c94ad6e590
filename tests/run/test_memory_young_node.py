"""A machine booted minutes ago: the monotonic clock is small, and "never" (0.0) must not read as
"a moment ago" - a new leader on a young node would trust a list of the cluster made before the old
leader's last write (Memory.take_over sets kube_at to 0.0 to force a full list), and zones read by a
cut reconcile would count as a full comparison."""

from __future__ import annotations

import pytest

from agent.model.observed import KubeObserved, ZoneObserved
from agent.observe.dnsobserve import DnsMemory
from agent.run import memorize
from agent.run import memory as memory_mod
from agent.run.memory import Memory


def test_never_is_not_fresh_on_a_node_booted_a_minute_ago(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_mod.time, "monotonic", lambda: 60.0)
    memory = Memory()
    memory.kube, memory.agent_namespace = KubeObserved({}, set(), set()), "bindy-agent"
    memory.dns = DnsMemory()
    memory.dns.remember("example.com.", "ns/primary", ZoneObserved({}, serial=1))
    memorize.take_over(memory, applied_at=0.0)  # a new leader: list the cluster again
    assert not memory.kube_fresh(600, "bindy-agent")
    assert not memory.dns_fresh(3600)  # zones read, but never compared in full
    memory.kube_at = memory.dns_at = 30.0  # read 30 s after boot: fresh
    assert memory.kube_fresh(600, "bindy-agent") and memory.dns_fresh(3600)
