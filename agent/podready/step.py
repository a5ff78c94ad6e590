"""After a run's DNS step: the readiness gates of the pods that waited for their zones.

A new pod of an instance (a rollout: key rotation, `kubectl rollout restart`, a drain, a scale-up)
starts with no zones; it is observed as a server that *waits* (agent/observe/podwait.py), written
every zone like any pod, and made Ready here once it serves them all (agent/outcome/zonesloaded.py
decides which, agent/reconcile/podgate.py sets the condition). Until then it is not in its
Service, and a rollout keeps the old pod serving.
"""

from __future__ import annotations

from collections.abc import Mapping

from agent.clients import rfc2136
from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint, by_server
from agent.clients.kubeapi import KubeApi
from agent.desired.hierarchy import Desired
from agent.outcome import zonesloaded
from agent.reconcile import podgate
from agent.reconcile.dnsresult import DnsResult
from agent.run.steps import Steps, timed


def after_dns(api: KubeApi | None, desired: Desired, endpoints: Mapping[str, Endpoint] | None,
              dns: DnsResult | None, *, wait: float, deadline: Deadline, steps: Steps | None = None,
              serials: podgate.Serials = rfc2136.serials) -> podgate.GateResult:
    """Opens the gate of every waiting pod the run gave all its zones (timed as part of `verify`)."""
    if api is None or endpoints is None:
        return podgate.GateResult()
    gates = zonesloaded.gates(desired, endpoints, dns)
    if not gates:
        return podgate.GateResult()
    with timed(steps if steps is not None else {}, "verify"):
        return podgate.open_gates(api, gates, by_server(endpoints), wait=wait, deadline=deadline, serials=serials)
