"""The leader label on the agent's pods (agent/run/leaderlabel.py), which the webhook Service selects: a new
leader takes it off a pod that kept it, and labels itself even when it may not list pods."""

from __future__ import annotations

from typing import Any


class _Pods:
    """The agent namespace's pods as the API holds them (labels only), with the calls made."""

    def __init__(self, labels: dict[str, dict[str, str]], *, list_fails: bool = False) -> None:
        self.labels, self.list_fails, self.patches = labels, list_fails, []  # type: list[tuple[str, Any]]

    def list(self, kind: str, *, label_selector: str | None = None, namespace: str | None = None) -> list[Any]:
        from agent.errors import KubeError

        if self.list_fails:
            raise KubeError("pods is forbidden: cannot list", reason="forbidden")
        key, _, value = (label_selector or "").partition("=")
        return [{"metadata": {"name": n, "namespace": namespace, "labels": dict(lb)}}
                for n, lb in self.labels.items() if not key or lb.get(key) == value]

    def merge_patch(self, kind: str, namespace: str | None, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        self.patches.append((name, patch))
        for k, v in patch["metadata"]["labels"].items():
            if v is None:
                self.labels[name].pop(k, None)
            else:
                self.labels[name][k] = v
        return {}


def test_a_new_leader_takes_the_label_off_a_pod_that_kept_it() -> None:
    """HOLE: only a replica removes its own label. An old leader that cannot (its node partitioned, its
    container in CrashLoopBackOff before `start`, SIGKILL) keeps `bindy.firestoned.io/leader=true`, and
    the webhook Service (publishNotReadyAddresses: true, so not-ready and terminating pods stay in its
    endpoints) sends part of the pushes to it: lost, or 503, for as long as that pod exists."""
    from agent.model import names
    from agent.run.leaderlabel import LeaderLabel

    pods = _Pods({"old": {names.LEADER_LABEL: "true"}, "me": {}})
    LeaderLabel(pods, "bindy-agent", "me").follow(True)  # type: ignore[arg-type]
    assert pods.labels == {"old": {}, "me": {names.LEADER_LABEL: "true"}}


def test_a_leader_that_may_not_list_pods_still_labels_itself() -> None:
    from agent.model import names
    from agent.run.leaderlabel import LeaderLabel

    pods = _Pods({"old": {names.LEADER_LABEL: "true"}, "me": {}}, list_fails=True)
    label = LeaderLabel(pods, "bindy-agent", "me")  # type: ignore[arg-type]
    label.follow(True)
    label.follow(True)
    assert pods.labels["me"] == {names.LEADER_LABEL: "true"} and label.marked is True
