"""The zone API calls of one zone's plan, with the bodies they send (pure): a create per instance
the zone is placed on, and the transfers (also-notify, allow-transfer) of its primaries. Made when
planning, from the instances' addresses the observe step read, so that the plan shows what apply
will send and apply only sends it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent.desired import zonebody
from agent.desired.placement import Zone
from agent.model.observed import Reach
from agent.model.servers import instance_of
from agent.plan.zoneplan import Transfers


def transfers(primary: str, secondaries: list[str], servers: Mapping[str, Reach]) -> Transfers:
    """The secondaries' addresses for the primary's also-notify, and the per-zone allow-transfer ACL
    (its secondaries' pod addresses and the agent's own; None where named.conf's ACL applies)."""
    known = [servers[s] for s in secondaries if s in servers]
    notify = tuple(a for s in known for a in s.addresses)
    own = servers.get(instance_of(primary))  # `primary` may be one of its servers (pods)
    acl = own.transfer_acl if own is not None else None
    if acl is None:
        return Transfers(notify, None)
    hosts = {h for s in known for h in s.hosts}
    return Transfers(notify, tuple(sorted(hosts | set(acl))) if hosts else ())


def sources(primaries: list[str], servers: Mapping[str, Reach]) -> list[str]:
    """The addresses a secondary of `primaries` transfers from (its zone's `primaries`): every ready
    pod of each primary instance, with its DNS port."""
    return [a for p in primaries if p in servers for a in servers[p].addresses]


def create_body(zone: Zone, instance: str, role: str, primaries: list[str], secondaries: list[str],
                servers: Mapping[str, Reach]) -> dict[str, Any] | str:
    """The create body of `zone` on `instance` (an instance, or one of its servers) in `role`, or
    why none can be made (a string)."""
    if role == "secondary":
        found = sources(primaries, servers)
        if not found:
            return f"no ready pod of its primaries {', '.join(primaries)} to transfer from"
        return zonebody.secondary(zone.name, primaries=found)
    sent = transfers(instance, secondaries, servers)
    reach = servers.get(instance_of(instance))
    return zonebody.primary(zone, update_key=reach.update_key if reach else None,
                            also_notify=list(sent.also_notify),
                            allow_transfer=list(sent.allow_transfer)
                            if sent.allow_transfer is not None else None)
