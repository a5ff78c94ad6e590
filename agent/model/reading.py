"""How a run reads the world before it plans: Kubernetes listed, recalled from memory or not read;
DNS by zone transfers, by every zone's serial, by the serials of a few zones, or not at all. Observe
reads what it is told; the run's decision (agent/run/decision.py) says what."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class KubeRead(StrEnum):
    LIST = "list"  # list the cluster
    RECALL = "recall"  # what the last run read and wrote, remembered
    NONE = "none"  # not read (push-first: Kubernetes is left to the reconcile)


class DnsRead(StrEnum):
    TRANSFER = "transfer"  # nothing remembered: zone transfers, ownership records read again
    SERIALS = "serials"  # remembered zones, every zone's serial asked
    # remembered zones, only the serials of the scope's, changed and waiting zones asked
    FOCUSED = "focused"
    NONE = "none"


@dataclass(frozen=True)
class Reading:
    kube: KubeRead
    dns: DnsRead
    remembered: bool  # start from the DNS world remembered (else from nothing seen)
    refresh_ownership: bool  # read the zones' ownership records again
    zones_first: bool  # a reconcile that may yield reads the zones, then Kubernetes
    plan_memo: bool  # reuse the zone plans of unchanged zones (trusting the remembered cluster)


# what a one-shot run reads (the CLI, a sweep): the cluster listed, every zone transferred, nothing
# remembered
IN_FULL = Reading(KubeRead.LIST, DnsRead.TRANSFER, remembered=False, refresh_ownership=True,
                  zones_first=False, plan_memo=False)
# how a push's zones are read while the reconcile it cut waits (push-first): their serials against
# what is remembered, the cluster not at all (the reconcile applies it), the zone plans of unchanged
# zones reused
PUSHED_ZONES = Reading(KubeRead.NONE, DnsRead.FOCUSED, remembered=True, refresh_ownership=False,
                       zones_first=False, plan_memo=True)
