"""Which pods waiting for their zones now have them, and why the others do not (pure).

A pod *waits* while its containers are ready and its zones-loaded readiness gate is not True
(agent/model/podreadiness.py); the run writes it every zone and record of its instance like any pod.
After the DNS step, a waiting pod has its zones when, for every zone placed on its instance, the
zone's result says the pod is configured (a primary: the zone created and every RRset written; a
secondary: the zone created with its primaries), no verification on the pod failed, and the zone
did not stop (a primary error, a stale zone). The writer (agent/podready/condition.py) then asks
the pod itself for every zone's SOA - a secondary must have transferred it - before it sets the
condition True. A pod that does not have its zones keeps its gate closed, with the reason as the
condition's message (the instance's status shows it, agent/outcome/pods.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from agent.clients.endpoints import Endpoint
from agent.desired.hierarchy import Desired
from agent.model.servers import SERVER_SEPARATOR, instance_id, instance_of
from agent.reconcile.dnsresult import DnsResult, ZoneResult

SHOWN = 3  # zones named in a condition's message


@dataclasses.dataclass(frozen=True)
class Gate:
    """One waiting pod: its server id (`namespace/name@ip`), the zones it must answer, and, when it
    cannot be opened, why (`why`: "" when every zone was written to it)."""

    namespace: str
    pod: str
    server: str
    zones: tuple[str, ...]
    why: str = ""

    @property
    def loaded(self) -> bool:
        return not self.why


def placed(desired: Desired) -> dict[str, list[str]]:
    """Instance id -> the zones placed on it (either role)."""
    out: dict[str, list[str]] = {}
    for zone in desired.zones:
        for key in zone.instances:
            out.setdefault(instance_id(key), []).append(zone.name)
    return out


def waiting(endpoints: Mapping[str, Endpoint]) -> dict[str, str]:
    """Server id -> pod name of every pod that waits for its zones."""
    return {f"{instance}{SERVER_SEPARATOR}{s.name}": s.waiting
            for instance, endpoint in endpoints.items()
            for s in endpoint.servers if s.waiting}


def _why_not(server: str, result: ZoneResult | None) -> str:
    if result is None:
        return "not written in this run"
    state, message = result.servers.get(server, ("", "not written to this pod"))
    if state != "Configured":
        return message or state
    if any(c.server == server and not c.ok for c in result.checks):
        return "does not answer every record written"
    stopped = result.primary_error or result.stale or result.refused
    return f"stopped: {stopped}" if stopped else ""


def gates(desired: Desired, endpoints: Mapping[str, Endpoint], dns: DnsResult | None) -> list[Gate]:
    """Every waiting pod with the zones it must answer and, if any was not written to it, why."""
    on = placed(desired)
    results = {z.name: z for z in dns.zones} if dns is not None else {}
    out = []
    for server, pod in sorted(waiting(endpoints).items()):
        instance = instance_of(server)
        zones = tuple(sorted(on.get(instance, ())))
        if dns is None:
            missing = [(z, "the DNS step did not run") for z in zones]
        else:
            missing = [(z, why) for z in zones if (why := _why_not(server, results.get(z)))]
        why = "; ".join(f"{z.rstrip('.')}: {w}" for z, w in missing[:SHOWN])
        if len(missing) > SHOWN:
            why += f" (and {len(missing) - SHOWN} more zones)"
        namespace = instance.split("/", 1)[0]
        out.append(Gate(namespace, pod, server, zones, why))
    return out

