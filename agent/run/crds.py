"""`bindy-agent install-crds`: Bindy's 12 CRDs, generated from the models, through the same three
steps as a sync's CRD lines: read the installed ones (observe), compare (plan), write those that
differ (reconcile); then wait until all are Established."""

from __future__ import annotations

import time

from agent.clients.kubeapi import KubeApi
from agent.observe import kubeobserve
from agent.plan import crddiff
from agent.reconcile import crdapply


def install_crds(api: KubeApi, *, timeout: float = 60) -> list[str]:
    """Applies every CRD that differs from the models' and waits until all are Established. Returns
    the names of those written."""
    written = crdapply.apply(api, crddiff.diff(kubeobserve.crds(api)), wait=timeout)
    crdapply.established(api, crddiff.names(), until=time.monotonic() + timeout)
    return written
