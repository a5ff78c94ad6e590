"""An instance whose pods cannot start says why (issues 25, 26): its Ready condition names the pod and
the kubelet's or scheduler's reason and message (a bad image, a crash loop, unschedulable), read from
the pods of its Deployment; pods only starting say no more than that. Pure: pod and Deployment JSON
as the API server returns them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from agent.desired import hierarchy
from agent.model.key import ObjectKey
from agent.observe import kubeobserve
from agent.outcome import conditions, pods, status
from agent.reconcile.kubeapply import KubeResult
from tests.conftest import SAMPLE, load_dir

PULL = 'rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/x/bind9:not-here": not found'


def _deployment(replicas: int = 1, ready: int = 0, name: str = "dns-primary-0") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "dns-system", "generation": 1},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {
                "app.kubernetes.io/instance": name, "app.kubernetes.io/name": "bind9"}}},
            "status": {"observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas,
                       "readyReplicas": ready}}


def _pod(name: str, *, waiting: tuple[str, str] | None = None, last: dict[str, Any] | None = None,
         scheduled: tuple[str, str] | None = None, phase: str = "Pending", ready: bool = False) -> dict[str, Any]:
    bind9: dict[str, Any] = {"name": "bind9", "ready": ready, "restartCount": 3 if last else 0,
                             "image": "docker.io/x/bind9:not-here"}
    bind9["state"] = {"waiting": {"reason": waiting[0], "message": waiting[1]}} if waiting else {
        "running": {"startedAt": "2026-01-01T00:00:00Z"}}
    if last:
        bind9["lastState"] = {"terminated": last}
    sidecar = {"name": "bindcar", "ready": True, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}
    status_: dict[str, Any] = {"phase": phase, "containerStatuses": [bind9, sidecar]}
    if scheduled:
        status_ = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                       "reason": scheduled[0], "message": scheduled[1]}]}
    return {"metadata": {"name": name, "namespace": "dns-system"}, "spec": {"containers": []}, "status": status_}


def _by_type(conds: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    return {c["type"]: c for c in conds}


def test_a_bad_image_makes_the_instance_not_ready_and_degraded_naming_the_pod_and_the_kubelets_reason() -> None:
    conds = _by_type(conditions.readiness(_deployment(), [_pod("dns-primary-0-7c9-abcde", waiting=("ErrImagePull", PULL))]))
    assert (conds["Ready"]["status"], conds["Ready"]["reason"]) == ("False", "NotReady")
    assert conds["Ready"]["message"] == ("Waiting for pods to become ready: pod dns-primary-0-7c9-abcde: ErrImagePull: "
                                         f"container bind9: {PULL}")
    assert (conds["Degraded"]["status"], conds["Degraded"]["message"]) == ("True", conds["Ready"]["message"])
    assert "Progressing" not in conds
    for reason in ("ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName"):
        message = conditions.readiness(_deployment(), [_pod("p", waiting=(reason, "Back-off pulling image"))])[0]["message"]
        assert f"pod p: {reason}: container bind9: Back-off pulling image" in message


def test_a_crash_loop_says_how_the_container_last_ended() -> None:
    crashing = _pod("dns-primary-0-7c9-abcde", waiting=("CrashLoopBackOff", ""), phase="Running",
                    last={"exitCode": 1, "reason": "Error", "message": "named: loading configuration: file not found"})
    ready = conditions.readiness(_deployment(), [crashing])[0]
    assert ready["message"] == ("Waiting for pods to become ready: pod dns-primary-0-7c9-abcde: CrashLoopBackOff: "
                                "container bind9: last exited with code 1 (Error): named: loading configuration: "
                                "file not found")


def test_an_unschedulable_pod_gives_the_schedulers_message() -> None:
    why = '0/1 nodes are available: persistentvolumeclaim "dns-primary-0-zones" not found.'
    conds = _by_type(conditions.readiness(_deployment(), [_pod("dns-primary-0-x", scheduled=("Unschedulable", why))]))
    assert conds["Ready"]["message"] == f"Waiting for pods to become ready: pod dns-primary-0-x: Unschedulable: {why}"
    assert conds["Degraded"]["status"] == "True"


def test_pods_only_starting_say_nothing_more_and_the_first_bad_pod_is_named_with_a_count() -> None:
    starting = [_pod("a", waiting=("ContainerCreating", "")), _pod("b", waiting=("PodInitializing", "")),
                {"metadata": {"name": "c"}, "status": {"phase": "Pending"}}]
    conds = _by_type(conditions.readiness(_deployment(3), starting))
    assert conds["Ready"]["message"] == "Waiting for pods to become ready"
    assert (conds["Progressing"]["status"], conds["Degraded"]["status"]) == ("True", "False")
    two_bad = [_pod("z", waiting=("ErrImagePull", "x")), _pod("m", waiting=("ImagePullBackOff", "y")),
               _pod("a", ready=True, phase="Running")]
    message = conditions.readiness(_deployment(3, 1), two_bad)[0]["message"]
    assert message == "1/3 pods are ready: pod m: ImagePullBackOff: container bind9: y (and 1 more pod)"
    going = {**_pod("old", waiting=("ErrImagePull", "x")), "metadata": {"name": "old", "deletionTimestamp": "t"}}
    assert pods.problem([going]) is None  # a pod being deleted is not the instance's problem


def test_a_ready_instance_ignores_its_pods_and_long_messages_are_cut() -> None:
    assert conditions.readiness(_deployment(1, 1), [_pod("p", waiting=("ErrImagePull", "x"))])[0]["reason"] == "AllReady"
    found = pods.problem([_pod("p", waiting=("ErrImagePull", "y" * 2000))])
    assert found is not None and len(found.message()) < pods.MESSAGE_LIMIT + 60


class _Pods:
    """A KubeApi that lists pods and counts what it was asked."""

    namespaces = None

    def __init__(self, items: list[dict[str, Any]], forbidden: bool = False) -> None:
        self.items, self.forbidden, self.asked = items, forbidden, []  # type: list[tuple[str, str | None, str | None]]

    def list(self, kind: str, *, label_selector: str | None = None, namespace: str | None = None) -> list[dict[str, Any]]:
        self.asked.append((kind, label_selector, namespace))
        if self.forbidden:
            from agent.errors import KubeError
            raise KubeError('pods is forbidden: User "system:serviceaccount:bindy-agent:bindy-agent" cannot list',
                            reason="forbidden")
        return self.items


def test_only_unready_deployments_have_their_pods_listed_by_selector_and_only_status_is_kept() -> None:
    live = {ObjectKey("Deployment", "dns-system", "dns-primary-0"): _deployment(1, 1),
            ObjectKey("Deployment", "dns-system", "broken-0"): _deployment(1, 0, name="broken-0")}
    pod = _pod("broken-0-abc", waiting=("ErrImagePull", PULL))
    pod["spec"] = {"containers": [{"env": [{"name": "SECRET", "value": "do-not-keep"}]}]}
    api = _Pods([pod])
    listed = kubeobserve.pods(api, conditions.unready(live))  # type: ignore[arg-type]
    assert api.asked == [("Pod", "app.kubernetes.io/instance=broken-0,app.kubernetes.io/name=bind9", "dns-system")]
    assert list(listed) == [ObjectKey("Deployment", "dns-system", "broken-0")]
    kept = listed[ObjectKey("Deployment", "dns-system", "broken-0")][0]
    assert "spec" not in kept and "do-not-keep" not in str(kept) and kept["status"] == pod["status"]
    # without `list pods` (an older Role) the status says what the Deployment says, and the run goes on
    assert kubeobserve.pods(_Pods([pod], forbidden=True), conditions.unready(live)) == {}  # type: ignore[arg-type]


def test_the_instance_status_after_a_sync_names_the_pod_that_cannot_start(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    desired = hierarchy.build(load_dir(root))
    key = ObjectKey("Deployment", "dns-system", "dns-primary-0")
    result = KubeResult([], {key: _deployment()})
    pod = _pod("dns-primary-0-7c9-abcde", waiting=("ErrImageNeverPull", 'Container image "x" is not present'))
    shown = status.wanted(desired, result, revision=None, pods={key: [pod]})
    ready = _by_type(shown[ObjectKey("Bind9Instance", "dns-system", "dns-primary-0")]["conditions"])["Ready"]
    assert ready["status"] == "False" and "pod dns-primary-0-7c9-abcde: ErrImageNeverPull" in ready["message"]


def test_the_unready_deployments_of_the_instances_asked_are_found_without_walking_the_others() -> None:
    broken, ready, other = (ObjectKey("Deployment", "dns-system", n) for n in ("broken-0", "dns-primary-0", "x-0"))
    live = {broken: _deployment(1, 0, name="broken-0"), ready: _deployment(1, 1),
            other: _deployment(1, 0, name="x-0")}
    instances = [ObjectKey("Bind9Instance", "dns-system", n) for n in ("broken-0", "dns-primary-0", "gone-0")]
    assert conditions.unready(live, instances) == [live[broken]]  # x-0 is no instance of the revision
    assert conditions.unready(live) == [live[broken], live[other]]
