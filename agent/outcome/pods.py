"""Why an instance's pods do not start, read from the pods' status as the kubelet and the scheduler
write it (pure).

A Deployment only counts pods; the reason one cannot start is in the pod: a container waiting with
`ErrImagePull`, `ImagePullBackOff`, `ErrImageNeverPull` or `CrashLoopBackOff`, or the scheduler's
`Unschedulable` (no node fits, a claim that does not exist). Pods still starting
(`ContainerCreating`, `PodInitializing`, not yet scheduled) are no problem and say nothing, so the
message of a starting instance stays the same from run to run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from agent.model import names

# what the kubelet says of a container that is only starting
STARTING = frozenset({"ContainerCreating", "PodInitializing"})
# characters of the kubelet's or scheduler's message kept (an image pull error can be long)
MESSAGE_LIMIT = 300


@dataclasses.dataclass(frozen=True)
class Problem:
    """The first pod (by name) that cannot start, and how many more cannot."""

    pod: str
    reason: str  # the waiting reason, `Unschedulable`, or the failed pod's reason
    detail: str  # "container bind9: <message>" / the scheduler's message
    others: int = 0

    def message(self) -> str:
        plural = "s" if self.others > 1 else ""
        more = f" (and {self.others} more pod{plural})" if self.others else ""
        return f"pod {self.pod}: {self.reason}: {self.detail}{more}".rstrip(": ")


def _short(text: Any) -> str:
    """The message on one line, at most MESSAGE_LIMIT characters: its start and its end, since an
    error chain ends with its cause (containerd's pull error: `...: 401 Unauthorized`, `...: not
    found`)."""
    flat = " ".join(str(text or "").split())
    if len(flat) <= MESSAGE_LIMIT:
        return flat
    head = MESSAGE_LIMIT * 2 // 5
    return f"{flat[:head]} ... {flat[len(flat) - (MESSAGE_LIMIT - head - 5):]}"


def _container(status: dict[str, Any]) -> tuple[str, str] | None:
    """(reason, detail) for a container that is waiting for something other than its start."""
    waiting = (status.get("state") or {}).get("waiting")
    if not waiting or not waiting.get("reason") or waiting["reason"] in STARTING:
        return None
    detail = f"container {status.get('name', '?')}"
    message = _short(waiting.get("message"))
    last = (status.get("lastState") or {}).get("terminated")
    if not message and last:  # a crash loop's message is only the back-off: say how it last ended
        message = _short(f"last exited with code {last.get('exitCode')}"
                         + (f" ({last['reason']})" if last.get("reason") else "")
                         + (f": {last['message']}" if last.get("message") else ""))
    return waiting["reason"], f"{detail}: {message}" if message else detail


def of_pod(pod: dict[str, Any]) -> tuple[str, str] | None:
    """(reason, detail) of why this pod cannot start, or None when it is running or only
    starting."""
    status = pod.get("status") or {}
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return None  # going away: its replacement says how it is doing
    if status.get("phase") == "Failed":
        return status.get("reason") or "Failed", _short(status.get("message"))
    for cstatus in [*(status.get("initContainerStatuses") or []),
                    *(status.get("containerStatuses") or [])]:
        found = _container(cstatus)
        if found is not None:
            return found
    for cond in status.get("conditions") or []:
        if (cond.get("type") == "PodScheduled" and cond.get("status") == "False"
                and cond.get("reason")):
            return cond["reason"], _short(cond.get("message"))
    # it runs, but the agent could not give it every zone
    for cond in status.get("conditions") or []:
        if (cond.get("type") == names.ZONES_LOADED_CONDITION and cond.get("status") == "False"
                and cond.get("reason")):
            return cond["reason"], _short(cond.get("message"))
    return None


def problem(pods: Iterable[dict[str, Any]]) -> Problem | None:
    """Why the instance's pods cannot start: the first pod by name that cannot, or None."""
    found = []
    for pod in sorted(pods, key=lambda p: str((p.get("metadata") or {}).get("name", ""))):
        why = of_pod(pod)
        if why is not None:
            found.append((str(pod["metadata"].get("name", "?")), why))
    if not found:
        return None
    name, (reason, detail) = found[0]
    return Problem(name, reason, detail, len(found) - 1)

