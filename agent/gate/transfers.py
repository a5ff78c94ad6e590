"""A rule of the second DNS round: a primary that refused the agent's zone transfer once more after
its allow-transfer was given the agent's addresses in this run is not written again (one PATCH per
zone per run); the zone is refused, said as what it likely is."""

from __future__ import annotations

from agent.model.findings import Refusal
from agent.plan.zoneplan import ZonePlan

STILL_REFUSED = ("zone {zone}: {servers} still refuses the agent's zone transfer after its "
                 "allow-transfer was set to the agent's addresses ({acl}): the transfers reach "
                 "named from another address (a NAT, a proxy, a sidecar); add that address to the "
                 "instance's allowTransfer, or set POD_IP to it")


def still_refused(zp: ZonePlan) -> Refusal | None:
    """The refusal of a zone whose primaries refuse the transfer again (its plan reopens them
    again)."""
    if not zp.reopen:
        return None
    return Refusal(zp.name, STILL_REFUSED.format(zone=zp.name, servers=", ".join(zp.reopen),
                                                 acl=", ".join(zp.allow_transfer or [])))
