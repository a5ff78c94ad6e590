"""Opens the zones-loaded readiness gate of the pods that now serve every zone of their instance.

A generated BIND9 pod is Ready only once its condition `bindy.firestoned.io/zones-loaded` is True
(agent/desired/workloads.py): until then its Service sends it nothing and a rollout keeps the old
pod. After the DNS step, for each waiting pod the run wrote every zone to
(agent/podready/gates.py decides which), the pod itself is asked for every zone's SOA until it
answers them all (a secondary transfers its zones after they are created) or `wait` runs out; then
its condition is set True (PATCH pods/status). A pod that does not serve them all gets the
condition False with why, and stays not Ready: the next run (agent/podready/watch.py asks for one)
tries again.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Set

from agent.clients import dnsquery
from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint
from agent.clients.kubeapi import KubeApi
from agent.errors import AgentError
from agent.model import names
from agent.podready.gates import SHOWN, Gate
from agent.reconcile import events

log = logging.getLogger("agent.reconcile.podgate")  # the lines operators already filter on
POLL = 0.25  # seconds between two SOA sweeps of a pod that does not answer every zone yet
MESSAGE_LIMIT = 1000  # characters of a condition's message


LOADED = "ZonesLoaded"  # the condition's reason when True
NOT_LOADED = "ZonesNotLoaded"  # when False: the message says which zones and why


def condition_patch(*, loaded: bool, why: str, now: str) -> dict[str, object]:
    """The strategic merge patch of a pod's status that sets its zones-loaded condition (merged into
    `status.conditions` by `type`: the kubelet's conditions stay as they are)."""
    message = "every zone of its instance is served by this pod" if loaded else why[:MESSAGE_LIMIT]
    return {"status": {"conditions": [{
        "type": names.ZONES_LOADED_CONDITION, "status": "True" if loaded else "False",
        "reason": LOADED if loaded else NOT_LOADED, "message": message,
        "lastTransitionTime": now}]}}


@dataclasses.dataclass
class GateResult:
    opened: list[str] = dataclasses.field(default_factory=list)  # namespace/pod
    closed: dict[str, str] = dataclasses.field(default_factory=dict)  # namespace/pod -> why
    errors: list[str] = dataclasses.field(default_factory=list)


# dnsquery.serials: (endpoint, zones, timeout=) -> serial
Serials = Callable[..., Mapping[str, "int | None"]]


def unanswered(endpoint: Endpoint, zones: tuple[str, ...], *, wait: float, deadline: Deadline,
               serials: Serials = dnsquery.serials) -> list[str]:
    """The zones `endpoint` (one pod) does not answer an SOA for within `wait` seconds (asked again
    every POLL seconds while some are missing)."""
    if not zones:
        return []
    until = time.monotonic() + max(0.0, min(wait, deadline.remaining()))
    left = list(zones)
    while True:
        found = serials(endpoint, left, timeout=deadline.timeout(2))
        left = [z for z in left if found.get(z) is None]
        if not left or time.monotonic() + POLL > until:
            return left
        time.sleep(POLL)


def open_gates(api: KubeApi, gates: list[Gate], servers: Mapping[str, Endpoint], *, wait: float,
               deadline: Deadline, serials: Serials = dnsquery.serials,
               answered: Mapping[str, Set[str]] | None = None) -> GateResult:
    """Sets each waiting pod's zones-loaded condition: True when the run wrote it every zone and it
    answers them all, else False with why. `answered`: server -> the zones it answered an SOA for
    after the run's writes (agent/reconcile/dnsconfirm.py): those are not asked again."""
    out = GateResult()
    for gate in gates:
        where = f"{gate.namespace}/{gate.pod}"
        why = gate.why
        if not why and gate.server in servers:
            known = answered.get(gate.server, set()) if answered is not None else set()
            missing = unanswered(servers[gate.server],
                                 tuple(z for z in gate.zones if z not in known), wait=wait,
                                 deadline=deadline, serials=serials)
            if missing:
                names_ = ", ".join(z.rstrip(".") for z in missing[:SHOWN])
                more = f" and {len(missing) - SHOWN} more" if len(missing) > SHOWN else ""
                why = (f"{names_}{more}: not answered by the pod yet (a secondary transfers them "
                       f"from its primaries)")
        patch = condition_patch(loaded=not why, why=why, now=events.now())
        try:
            deadline.check(f"setting the zones-loaded condition of pod {where}")
            api.patch_status("Pod", gate.namespace, gate.pod, patch)
        except AgentError as exc:
            log.warning("pod %s: its zones-loaded condition could not be set (%s): it stays not "
                        "Ready", where, exc)
            out.errors.append(f"pod {where}: zones-loaded condition not set: {exc}")
            continue
        if why:
            log.info("pod %s waits for its zones: %s", where, why)
            out.closed[where] = why
        else:
            log.info("pod %s serves every zone of its instance (%d): Ready", where, len(gate.zones))
            out.opened.append(where)
    return out
