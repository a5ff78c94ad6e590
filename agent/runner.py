"""One run: apply a validated revision - Kubernetes objects, then DNS, then CR status.

Issue-level orchestration only: each step lives in agent/reconcile/. Fetching from Git and the
commit report wrap this (agent/sources, agent/report).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from agent.config import Endpoint
from agent.desired import Desired
from agent.reconcile import dns, kube
from agent.reconcile.dnsstate import Store
from agent.reconcile.kubeapi import KubeApi


@dataclasses.dataclass
class RunResult:
    revision: str | None
    kube: kube.SyncOutcome | None
    dns: dns.DnsResult | None
    dry_run: bool

    @property
    def refused(self) -> list[str]:
        return [z.refused for z in self.dns.zones if z.refused] if self.dns else []

    @property
    def failures(self) -> list[str]:
        out: list[str] = []
        if self.kube and self.kube.result:
            out += [f"{k}: {m}" for k, m in sorted(self.kube.result.failed.items(), key=lambda kv: str(kv[0]))]
        if self.dns:
            for z in self.dns.zones:
                out += [f"{z.name}: {e}" for e in (z.primary_error, z.secondary_error) if e]
                out += [f"{z.name}: {c.server} does not answer the new {c.name} {c.rtype}"
                        for c in z.checks if not c.ok]
            out += self.dns.errors
        return out


def apply_revision(state: Desired, *, revision: str | None, kube_api: KubeApi | None = None,
                   endpoints: Mapping[str, Endpoint] | Callable[[], Mapping[str, Endpoint]] | None = None,
                   store: Store | None = None,
                   dry_run: bool = False, force: bool = False, install_crds: bool = True,
                   agent_namespace: str = kube.DEFAULT_AGENT_NAMESPACE, rotate_rndc_keys: bool = False,
                   batch: int = 1000, verify_wait: float = 10) -> RunResult:
    kube_outcome = None
    if kube_api is not None:
        kube_outcome = kube.sync(kube_api, state, revision=revision, dry_run=dry_run, install=install_crds,
                                 agent_namespace=agent_namespace, rotate_rndc_keys=rotate_rndc_keys, statuses=False)
    dns_result = None
    if endpoints is not None and store is not None:
        if callable(endpoints):  # resolved after the Kubernetes step created the Services and Secrets
            endpoints = endpoints()
        dns_state = store.load()
        dns_result = dns.sync(state, endpoints, dns_state, force=force, dry_run=dry_run, batch=batch,
                              verify_wait=verify_wait)
        if not dry_run:
            store.save(dns_state)
    if kube_api is not None and kube_outcome is not None and kube_outcome.result is not None:
        kube.write_statuses(kube_api, state, kube_outcome.result, revision=revision, dns=dns_result)
    return RunResult(revision, kube_outcome, dns_result, dry_run)
