"""The Lease holder's pod carries the label `bindy.firestoned.io/leader: "true"`.

The webhook Service (deploy/service.yaml) selects it, so a push's webhook reaches the replica that
syncs, never the standby (which would have nothing to do with it) and never a replica that is still
starting. The label follows leadership: set when this replica takes the Lease, removed when it loses
or releases it. A replica that cannot write it (no pod of that name, RBAC without `patch pods`) says
so once per change and keeps syncing: the scheduled pulls still serve every push.
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
        self.marked: bool | None = None  # what the pod's label says, as far as this replica wrote it
        self.failed: bool | None = None  # the value whose write failed last (said once)

    def follow(self, leader: bool) -> None:
        """Writes the label when it differs from `leader` (or its last write failed)."""
        if self.marked == leader:
            return
        patch = {"metadata": {"labels": {names.LEADER_LABEL: "true" if leader else None}}}
        try:
            self.api.merge_patch("Pod", self.namespace, self.pod, patch)
        except KubeError as exc:
            if self.failed != leader:  # said once, not on every renewal
                log.warning("could not %s the label %s on pod %s/%s (%s): the Service bindy-agent sends "
                            "webhooks to the pod with this label; allow `patch pods` in %s (deploy/rbac.yaml) "
                            "or pushes wait for the next scheduled pull", "set" if leader else "remove",
                            names.LEADER_LABEL, self.namespace, self.pod, exc, self.namespace)
            self.failed, self.marked = leader, None
            return
        log.info("pod %s/%s %s the label %s", self.namespace, self.pod, "carries" if leader else "no longer carries",
                 names.LEADER_LABEL)
        self.failed, self.marked = None, leader
