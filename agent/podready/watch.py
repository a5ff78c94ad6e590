"""Runs the agent as soon as a BIND9 pod waits for its zones, or an instance's pods become ready,
not ready or gone - not at the next interval.

A new pod of an instance (a rollout, a drain, a scale-up) is Ready only once the agent gave it every
zone (agent/model/podreadiness.py, agent/podready/step.py); until then a rollout keeps the old pod
serving. This poller lists the generated BIND9 pods of the target namespaces every POLL seconds (one
list per namespace: the agent's Role may `list pods` there, not `watch`), and when a pod starts
waiting, asks the worker for a run (trigger "pods"). A pod that still waits after that run (its
zones failed) is asked for again after RETRY_FIRST seconds, doubling up to `longest`. While any
pod waits, the agent knows (`waiting`: posted to the trigger queue, agent/run/throttle.py, and
handed to the memory by the sync worker): a run does not stop at an unchanged head.

Statuses follow pods: the generated Deployments are listed too, and when one's readiness moves (a
pod became Ready once the agent gave it its zones, a pod was deleted or crashed, a scale to 0) its
instance is posted (`moved`, the same way) and a run is asked for, which writes that instance's
status and its zones' within seconds, with no push and no resync. Only the leader polls (a standby's
run would not write); a new leader's first look only takes note (its first run computes every
status).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from agent.clients.kubeapi import KubeApi
from agent.errors import KubeError
from agent.model import names, podreadiness
from agent.model.key import ObjectKey

log = logging.getLogger("agent.run.podwatch")  # the lines operators already filter on
POLL = 2.0  # seconds between two looks at the pods
RETRY_FIRST = 5.0  # seconds before a pod that still waits after a run is asked for again
TRIGGER = "pods"
SELECTOR = f"app.kubernetes.io/name=bind9,{names.MANAGED_BY_KEY}={names.MANAGED_BY_VALUE}"


def readiness(deployment: dict[str, object]) -> tuple[object, ...]:
    """What an instance's status is made of, of its Deployment: wanted, ready, updated, available
    and unavailable replicas, and whether the controller has seen the current generation."""
    spec, status, meta = (deployment.get(k) or {} for k in ("spec", "status", "metadata"))
    assert isinstance(spec, dict) and isinstance(status, dict) and isinstance(meta, dict)
    counts = ("readyReplicas", "updatedReplicas", "availableReplicas", "unavailableReplicas")
    seen = (status.get("observedGeneration") or 0) >= (meta.get("generation") or 0)
    return (spec.get("replicas"), *(status.get(f) or 0 for f in counts), seen)


def _instance_of(deployment: dict[str, Any]) -> ObjectKey:
    """The Bind9Instance a generated Deployment runs (same namespace and name)."""
    meta = deployment["metadata"]
    return ObjectKey("Bind9Instance", meta.get("namespace"), meta["name"])


class PodWatch:
    """`look()` once per POLL on a thread of its own (`start`/`stop`)."""

    def __init__(self, api: KubeApi, *, trigger: Callable[[str], None],
                 waiting: Callable[[bool], None], leading: Callable[[], bool],
                 longest: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 moved: Callable[[set[ObjectKey]], None] = lambda keys: None) -> None:
        self.api, self.trigger, self.waiting, self.leading = api, trigger, waiting, leading
        self.longest, self.clock, self.moved = longest, clock, moved
        # Bind9Instance -> its Deployment's readiness
        self.ready: dict[ObjectKey, tuple[object, ...]] | None = None
        # pod uid -> (when it is asked for next, the wait after)
        self.due: dict[str, tuple[float, float]] = {}
        self.stopping = threading.Event()
        self.warned = False  # a failed list was logged as a warning
        self.thread = threading.Thread(target=self._loop, name="podwatch", daemon=True)

    def look(self) -> bool:
        """One look at the pods; True when it asked for a run."""
        if not self.leading():
            self.due.clear()
            self.ready = None
            return False
        moved = self._readiness()
        try:
            pods = self.api.list("Pod", label_selector=SELECTOR)
        except KubeError as exc:  # said once
            (log.debug if self.warned else log.warning)(
                "cannot list the BIND9 pods (%s): a new pod gets its zones, and is Ready, only at "
                "the next resync (allow `list pods` in the target namespaces: "
                "deploy/target/role.yaml)", exc)
            self.warned = True
            return False
        now = self.clock()
        waiting = {str(p["metadata"].get("uid") or p["metadata"]["name"]): p
                   for p in pods if podreadiness.is_waiting(p)}
        self.waiting(bool(waiting))
        self.due = {uid: self.due[uid] for uid in waiting if uid in self.due}
        asked = False
        for uid, pod in waiting.items():
            when, after = self.due.get(uid, (now, RETRY_FIRST))
            if now >= when:
                asked = True
                self.due[uid] = (now + after, min(self.longest, after * 2))
                meta = pod["metadata"]
                log.info("pod %s/%s runs and waits for its zones: a run is asked for",
                         meta.get("namespace"), meta.get("name"))
        if asked or moved:
            self.trigger(TRIGGER)
        return asked or moved

    def _readiness(self) -> bool:
        """Whether an instance's Deployment readiness moved since the last look (its instance is
        then on `moved`). The first look (this replica just started leading) only takes note."""
        try:
            found = self.api.list("Deployment", label_selector=SELECTOR)
        except KubeError as exc:
            log.debug("cannot list the BIND9 Deployments (%s): statuses follow pods at the next "
                      "run", exc)
            return False
        now = {_instance_of(d): readiness(d) for d in found}
        before, self.ready = self.ready, now
        if before is None:
            return False
        changed = {k for k in now.keys() | before.keys() if now.get(k) != before.get(k)}
        if changed:
            log.info("pods of %s moved (ready, not ready or gone): their statuses are written now",
                     ", ".join(sorted(f"{k.namespace}/{k.name}" for k in changed)[:10]))
            self.moved(changed)
        return bool(changed)

    def _loop(self) -> None:
        while not self.stopping.wait(POLL):
            try:
                self.look()
            except Exception:  # the thread's boundary: log, keep looking
                log.exception("podwatch: looking at the pods failed")

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
