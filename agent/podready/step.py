"""After a run's DNS step: the readiness gates of the pods that waited for their zones.

A new pod of an instance (a rollout: key rotation, `kubectl rollout restart`, a drain, a scale-up)
starts with no zones; it is observed as a server that *waits* (agent/model/podreadiness.py), written
every zone like any pod, and made Ready here once it serves them all (agent/podready/gates.py
decides which, agent/podready/condition.py sets the condition). Until then it is not in its
Service, and a rollout keeps the old pod serving.
"""

from __future__ import annotations

from collections.abc import Mapping

from agent.clients import dnsquery
from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint, by_server
from agent.clients.kubeapi import KubeApi
from agent.desired.hierarchy import Desired
from agent.model.steps import Steps, timed
from agent.podready import condition as podcondition
from agent.podready import gates as podgates
from agent.reconcile.dnsresult import DnsResult


def after_dns(api: KubeApi | None, desired: Desired, endpoints: Mapping[str, Endpoint] | None,
              dns: DnsResult | None, *, wait: float, deadline: Deadline, steps: Steps | None = None,
              serials: podcondition.Serials = dnsquery.serials) -> podcondition.GateResult:
    """Opens the gate of every waiting pod the run gave all its zones (timed as part of
    `verify`)."""
    if api is None or endpoints is None:
        return podcondition.GateResult()
    gates = podgates.gates(desired, endpoints, dns)
    if not gates:
        return podcondition.GateResult()
    with timed(steps if steps is not None else {}, "verify"):
        return podcondition.open_gates(api, gates, by_server(endpoints), wait=wait,
                                       deadline=deadline, serials=serials,
                                       answered=dns.answered if dns is not None else None)
