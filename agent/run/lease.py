"""Leader election with a coordination.k8s.io/v1 Lease, so that only one replica syncs.

The holder renews the Lease every `renew` seconds; another replica takes it over once
`renewTime + leaseDurationSeconds` has passed. Every write carries the resourceVersion it read,
so two replicas racing for an expired Lease cannot both win. Stopping releases the Lease at once
(it is left expired).

A warm standby is preferred: a replica's `patience()` is how much longer it lets an expired Lease
lie before it takes it - none for a standby that has followed the revisions for a while, a lease
duration for one that has not (a pod just started: agent/run/agent.py). While a warm standby is
alive it takes the Lease first (it looks three times per duration); a cold replica takes it once
that extra time has passed and nobody did. A Lease that does not exist is taken at once.
"""

from __future__ import annotations

import datetime
import logging
import os
import socket
import uuid
from collections.abc import Callable

from agent.clients.kubeapi import KubeApi
from agent.errors import KubeError
from agent.model import names

log = logging.getLogger(__name__)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _fmt(t: datetime.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(value: str | None) -> datetime.datetime | None:
    if not value:
        return None
    return datetime.datetime.strptime(value.replace("Z", ""),
                                      "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=datetime.UTC)


def default_identity() -> str:
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}-{uuid.uuid4().hex[:6]}"


class LeaderElector:
    def __init__(self, api: KubeApi, namespace: str, *, name: str = names.LEASE_NAME,
                 identity: str | None = None, duration: int = names.DEFAULT_LEASE_DURATION,
                 patience: Callable[[], float] = lambda: 0.0) -> None:
        self.api, self.namespace, self.name = api, namespace, name
        self.identity = identity or default_identity()
        self.duration = duration
        # seconds past its expiry before this replica takes another's Lease
        self.patience = patience
        self.leader = False

    def _body(self, spec: dict[str, object],
              resource_version: str | None = None) -> dict[str, object]:
        meta: dict[str, object] = {"name": self.name, "namespace": self.namespace,
                                   "labels": dict(names.AGENT_APP_LABELS)}
        if resource_version:
            meta["resourceVersion"] = resource_version
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
                "spec": spec}

    def tick(self) -> bool:
        """Acquires or renews the Lease if it can; returns whether this replica leads now."""
        now = _now()
        try:
            lease = self.api.get("Lease", self.namespace, self.name)
            if lease is None:
                self.api.create(self._body({"holderIdentity": self.identity,
                                            "leaseDurationSeconds": self.duration,
                                            "acquireTime": _fmt(now), "renewTime": _fmt(now),
                                            "leaseTransitions": 0}))
                return self._set(True)
            spec = lease.get("spec") or {}
            holder = spec.get("holderIdentity") or ""
            renewed = _parse(spec.get("renewTime"))
            duration = int(spec.get("leaseDurationSeconds") or self.duration)
            mine = holder == self.identity
            if not mine and not self._may_take(renewed, duration, now, held=bool(holder)):
                return self._set(False)
            new = dict(spec, holderIdentity=self.identity, leaseDurationSeconds=self.duration,
                       renewTime=_fmt(now))
            if holder != self.identity:
                new["acquireTime"] = _fmt(now)
                new["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
            self.api.replace(self._body(new, lease["metadata"]["resourceVersion"]))
            return self._set(True)
        except KubeError as exc:
            if exc.reason != "conflict":
                log.warning("leader election: %s", exc)
            return self._set(False)

    def _may_take(self, renewed: datetime.datetime | None, duration: int, now: datetime.datetime, *,
                  held: bool) -> bool:
        """Another replica's Lease (or a released one) may be taken: expired, and for longer than
        this replica's patience."""
        if renewed is None:
            return True
        wait = datetime.timedelta(seconds=duration + self.patience())
        if renewed + wait < now:
            return True
        if held and renewed + datetime.timedelta(seconds=duration) < now:
            log.debug("leader election: the lease expired; this replica is not warm yet and leaves "
                      "it to a warm standby for %.0f s more",
                      (renewed + wait - now).total_seconds())
        return False

    def _set(self, leader: bool) -> bool:
        if leader != self.leader:
            log.info("leader election: %s %s the lease %s/%s", self.identity,
                     "holds" if leader else "lost", self.namespace, self.name)
        self.leader = leader
        return leader

    def release(self) -> None:
        """Gives the Lease up so a standby takes over without waiting for it to expire."""
        if not self.leader:
            return
        try:
            lease = self.api.get("Lease", self.namespace, self.name)
            if lease and (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                # expired now: a warm standby takes it at once, a cold one after its patience
                expired = _now() - datetime.timedelta(seconds=self.duration + 1)
                spec = dict(lease["spec"], holderIdentity="", renewTime=_fmt(expired))
                self.api.replace(self._body(spec, lease["metadata"]["resourceVersion"]))
        except KubeError as exc:
            log.warning("leader election: could not release the lease: %s", exc)
        self.leader = False
