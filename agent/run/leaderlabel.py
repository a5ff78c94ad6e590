"""The Lease holder's pod carries the label `bindy.firestoned.io/leader: "true"`.

The webhook Service (deploy/service.yaml) selects it, so a push's webhook reaches the replica that
syncs, never the standby (which would have nothing to do with it) and never a replica that is still
starting. The label follows leadership: set when this replica takes the Lease, removed when it loses
or releases it. A replica that cannot write it (no pod of that name, RBAC without `patch pods`) says
so once per change and keeps syncing: the scheduled pulls still serve every push.

A replica that takes the Lease also takes the label off every other pod that still carries it: an
old leader that could not remove its own (its node partitioned, its container killed and
crash-looping) would otherwise keep a share of the webhooks for as long as its pod exists (the
Service publishes not-ready and terminating pods). Without `list pods` it says so once and labels
itself all the same.
"""

from __future__ import annotations

import logging

from agent.clients.kubeapi import KubeApi
from agent.errors import KubeError
from agent.model import names

log = logging.getLogger(__name__)


class LeaderLabel:
    def __init__(self, api: KubeApi, namespace: str, pod: str) -> None:
        self.api, self.namespace, self.pod = api, namespace, pod
        # what the pod's label says, as far as this replica wrote it
        self.marked: bool | None = None
        self.failed: bool | None = None  # the value whose write failed last (said once)
        # the other pods' labels were taken off since this replica last took the Lease
        self.swept = True
        self.sweep_failed = False  # said once

    def follow(self, leader: bool) -> None:
        """Writes the label when it differs from `leader` (or its last write failed); a leader also
        takes it off the other pods (until that succeeds once per leadership)."""
        if leader and self.marked is not True:
            self.swept = False
        if leader and not self.swept:
            self._sweep()
        if self.marked == leader:
            return
        patch = {"metadata": {"labels": {names.LEADER_LABEL: "true" if leader else None}}}
        try:
            self.api.merge_patch("Pod", self.namespace, self.pod, patch)
        except KubeError as exc:
            if self.failed != leader:  # said once, not on every renewal
                log.warning("could not %s the label %s on pod %s/%s (%s): the Service bindy-agent "
                            "sends webhooks to the pod with this label; allow `patch pods` in %s "
                            "(deploy/rbac.yaml) or pushes wait for the next scheduled pull",
                            "set" if leader else "remove", names.LEADER_LABEL, self.namespace,
                            self.pod, exc, self.namespace)
            self.failed, self.marked = leader, None
            return
        log.info("pod %s/%s %s the label %s", self.namespace, self.pod,
                 "carries" if leader else "no longer carries", names.LEADER_LABEL)
        self.failed, self.marked = None, leader

    def _sweep(self) -> None:
        """Takes the label off every pod but this one: they do not lead (this replica holds the
        Lease)."""
        off = {"metadata": {"labels": {names.LEADER_LABEL: None}}}
        try:
            for pod in self.api.list("Pod", namespace=self.namespace,
                                     label_selector=f"{names.LEADER_LABEL}=true"):
                other = pod["metadata"]["name"]
                if other != self.pod:
                    self.api.merge_patch("Pod", self.namespace, other, off)
                    log.info("pod %s/%s no longer carries the label %s: this replica leads",
                             self.namespace, other, names.LEADER_LABEL)
        except KubeError as exc:
            if not self.sweep_failed:
                log.warning("could not take the label %s off the other pods of %s (%s): a pod that "
                            "kept it gets a share of the webhooks; allow `list pods` in %s "
                            "(deploy/rbac.yaml)", names.LEADER_LABEL,
                            self.namespace, exc, self.namespace)
            self.sweep_failed = True
            return
        self.swept, self.sweep_failed = True, False
