"""What a run saw of the world before deciding anything: the input of `plan.build` besides Git.

`None` for a layer means it was not observed (no cluster given, no zone endpoints given); the plan
then says so instead of guessing. Filled by agent/observe/kubeobserve.py and dnsobserve.py;
empty for an offline plan.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agent.model.key import ObjectKey
from agent.model.ownership import Key, ZoneOwnership
from agent.model.rrset import RRset


@dataclasses.dataclass
class KubeObserved:
    # objects carrying the agent's labels, and same-named ones it must not touch
    live: dict[ObjectKey, dict[str, Any]]
    inventory: set[ObjectKey]  # what the agent recorded as created
    namespaces: set[str]  # the namespaces that exist
    # the inventory as last written (to write it only when it changes)
    inventory_text: str | None = None
    # Bindy's CRDs by name, as installed (None: not installed); None: not read, the run installs no
    # CRD
    crds: dict[str, dict[str, Any] | None] | None = None


@dataclasses.dataclass
class ZoneObserved:
    """One zone on one primary instance."""

    rrsets: dict[Key, RRset] | None  # None: the server does not have the zone
    error: str = ""  # set when the server could not be asked: nothing may be planned for it
    serial: int | None = None  # the SOA serial these RRsets are of
    # not transferred: the serial had not moved since the agent last saw the zone
    remembered: bool = False
    # the server refused the agent's AXFR (the zone's allow-transfer lacks its address)
    refused: bool = False


@dataclasses.dataclass(frozen=True)
class Reach:
    """How other servers reach one instance (transfers, NOTIFY) and the name of the TSIG key its
    zones accept UPDATEs with; no secret. What the zone API bodies are made of."""

    # `ip:port` (IPv6 in brackets), as BIND takes them in primaries / also-notify
    addresses: tuple[str, ...]
    hosts: tuple[str, ...]  # the same addresses without port, for an allow-transfer ACL
    # the agent's own addresses; None: named.conf's ACL applies
    transfer_acl: tuple[str, ...] | None = None
    update_key: str | None = None


@dataclasses.dataclass
class DnsObserved:
    ownership: dict[str, ZoneOwnership]  # zone -> what the agent placed and wrote
    # zone -> server -> what it serves: every server (pod) of each primary, and each pod of a
    # secondary found without the zone (rrsets None); a server is an instance id, or
    # "namespace/name@pod" (`pods`)
    zones: dict[str, dict[str, ZoneObserved]]
    reachable: set[str]  # instance ids ("namespace/name") the agent has an endpoint for
    # only these zones were asked; the others are as the agent left them
    focus: set[str] | None = None
    # how each reachable instance is reached (empty: not known, e.g. offline; no zone API body is
    # made)
    servers: dict[str, Reach] = dataclasses.field(default_factory=dict)
    # instance -> the servers (pods) it is written to one by one; an instance not here is one server
    pods: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    # instance -> why it has no server yet (no pod at all: starting, or scaled to 0); nothing is
    # asked of it or planned on it, and that is not an error: its zones are written once its pods
    # run
    starting: dict[str, str] = dataclasses.field(default_factory=dict)
    # the servers that are pods waiting for their zones (new, replaced)
    fresh: frozenset[str] = frozenset()
    # server -> zone -> the SOA serial it answered when observed (None: no answer, or not held);
    # only the zones asked (agent/observe/soaserials.py): what the run reuses instead of asking
    # again
    serials: dict[str, dict[str, int | None]] = dataclasses.field(default_factory=dict)

    def servers_of(self, instance: str) -> tuple[str, ...]:
        return self.pods.get(instance, (instance,))


@dataclasses.dataclass
class Observed:
    kube: KubeObserved | None = None
    dns: DnsObserved | None = None
