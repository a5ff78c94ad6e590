"""An instance whose pod cannot start says why, on the real kube-apiserver (issues 25, 26).

There is no kubelet here: the Deployment and ReplicaSet controllers create the instance's pod, and
the test writes what a kubelet writes when the image cannot be pulled (the pod's status subresource:
its bind9 container waiting with ErrImagePull). The next sync reads the pods of the instance that
is not ready and its Bind9Instance's Ready condition names the pod, the reason and the message."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from kubernetes import client

from agent.clients.kubeapi import KubeApi
from tests.support import agentrun, dnsrepo
from tests.support.procs import until

pytestmark = pytest.mark.integration

PULL = ('rpc error: code = NotFound desc = failed to pull and unpack image '
        '"docker.io/internetsystemsconsortium/bind9:9.18-not-here": not found')




def _conditions(crs: client.CustomObjectsApi, namespace: str, name: str) -> dict[str, dict[str, str]]:
    cr = crs.get_namespaced_custom_object("bindy.firestoned.io", "v1beta1", namespace, "bind9instances", name)
    return {c["type"]: c for c in cr["status"]["conditions"]}


def test_a_pod_whose_image_cannot_be_pulled_is_named_in_the_instances_ready_condition(
        tmp_path: pathlib.Path, kube_client: Any, namespace: str) -> None:
    root, _ = dnsrepo.unique_sample(tmp_path / "repo", namespace=namespace)
    api = KubeApi(kube_client)
    core, apps, crs = client.CoreV1Api(kube_client), client.AppsV1Api(kube_client), client.CustomObjectsApi(kube_client)
    first = agentrun.sync_dir(root, state=tmp_path / "state", kube_api=api, agent_namespace=namespace)
    assert first.kube is not None and first.kube.failed == {}, (first.outcome, first.message)

    selector = apps.read_namespaced_deployment("dns-primary-0", namespace).spec.selector.match_labels
    labels = ",".join(f"{k}={v}" for k, v in selector.items())
    pod = until("the primary's pod", lambda: core.list_namespaced_pod(namespace, label_selector=labels).items)[0]
    # a pod only created (no kubelet yet) is starting: the condition says no more than that
    again = agentrun.sync_dir(root, state=tmp_path / "state", kube_api=api, agent_namespace=namespace)
    assert again.kube is not None and again.kube.failed == {}, (again.outcome, again.message)
    assert _conditions(crs, namespace, "dns-primary-0")["Ready"]["message"] == "Waiting for pods to become ready"

    # what the kubelet writes when the image is not there
    core.patch_namespaced_pod_status(pod.metadata.name, namespace, {"status": {
        "phase": "Pending", "containerStatuses": [
            {"name": "bind9", "ready": False, "restartCount": 0, "image": "docker.io/internetsystemsconsortium/"
             "bind9:9.18-not-here", "imageID": "", "state": {"waiting": {"reason": "ErrImagePull", "message": PULL}}},
            {"name": "bindcar", "ready": False, "restartCount": 0, "image": "ghcr.io/firestoned/bindcar:v0.7.2",
             "imageID": "", "state": {"waiting": {"reason": "ContainerCreating"}}}]}})
    stuck = agentrun.sync_dir(root, state=tmp_path / "state", kube_api=api, agent_namespace=namespace)
    assert stuck.kube is not None and stuck.kube.failed == {}, (stuck.outcome, stuck.message)
    conds = _conditions(crs, namespace, "dns-primary-0")
    expected = (f"Waiting for pods to become ready: pod {pod.metadata.name}: ErrImagePull: container bind9: {PULL}")
    assert (conds["Ready"]["status"], conds["Ready"]["reason"], conds["Ready"]["message"]) == (
        "False", "NotReady", expected)
    assert (conds["Degraded"]["status"], conds["Degraded"]["message"]) == ("True", expected)
    # the secondary, whose pod is only starting, still says just that
    assert _conditions(crs, namespace, "dns-secondary-0")["Ready"]["message"] == "Waiting for pods to become ready"
    warnings = [e.message for e in core.list_namespaced_event(namespace).items
                if e.type == "Warning" and e.involved_object.name == "dns-primary-0"]
    assert any("ErrImagePull" in (m or "") for m in warnings), warnings
