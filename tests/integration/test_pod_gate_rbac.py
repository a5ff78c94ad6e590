"""The zones-loaded readiness gate against a real API server, with deploy/'s RBAC (issue 26).

`kubectl apply -k deploy/`, then as the agent's ServiceAccount: it may patch a pod's status in a
target namespace (only that: not the pod, not in kube-system), and the patch the agent sends sets
its condition without touching the kubelet's (a Pod object stands for a running pod: no kubelet here).
"""

from __future__ import annotations

import pathlib
import subprocess
from typing import Any

import pytest
from kubernetes import client

from agent.clients.kubeapi import KubeApi
from agent.model import names
from agent.podready import condition as podcondition
from tests.conftest import ROOT
from tests.support.kube import (
    KUBECTL,
    KubeCluster,
    service_account_token,
    token_client,
    token_kubeconfig,
)

pytestmark = pytest.mark.integration


def _kubectl(kubeconfig: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KUBECTL), "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def agent_token(kube: KubeCluster) -> str:
    done = _kubectl(kube.kubeconfig, "apply", "-k", str(ROOT / "deploy"))
    assert done.returncode == 0, done.stderr
    admin = kube.api_client()
    try:
        return service_account_token(admin, "bindy-agent", "bindy-agent")
    finally:
        admin.close()


def _can_i(kubeconfig: pathlib.Path, verb: str, resource: str, namespace: str, sub: str = "") -> bool:
    done = _kubectl(kubeconfig, "auth", "can-i", verb, resource, "-n", namespace,
                    *([f"--subresource={sub}"] if sub else []))
    assert done.stdout.strip() in ("yes", "no"), done.stderr
    return done.stdout.strip() == "yes"


def test_the_agent_may_patch_a_pods_status_in_a_target_namespace_and_nothing_more(
        kube: KubeCluster, agent_token: str, tmp_path: pathlib.Path) -> None:
    kubeconfig = token_kubeconfig(kube, agent_token, tmp_path / "agent.kubeconfig")
    assert _can_i(kubeconfig, "patch", "pods", "dns-system", "status")
    assert not _can_i(kubeconfig, "patch", "pods", "dns-system")  # the pod itself: never
    assert not _can_i(kubeconfig, "update", "pods", "dns-system", "status")
    assert not _can_i(kubeconfig, "patch", "pods", "kube-system", "status")


def test_the_agents_patch_sets_its_condition_and_keeps_the_kubelets(kube: KubeCluster, agent_token: str) -> None:
    admin = kube.api_client()
    core = client.CoreV1Api(admin)
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gated", "namespace": "dns-system"},
                           "spec": {"containers": [{"name": "bind9", "image": "bind9"}], "automountServiceAccountToken": False,
                                    "readinessGates": [{"conditionType": names.ZONES_LOADED_CONDITION}]}}
    try:  # no controller-manager here to make the namespace's default ServiceAccount
        core.create_namespaced_service_account("dns-system", {"metadata": {"name": "default"}})
    except client.ApiException as exc:
        assert exc.status == 409, exc
    core.create_namespaced_pod("dns-system", pod)
    # what the kubelet would have written of a running pod whose containers are ready
    core.patch_namespaced_pod_status("gated", "dns-system", {"status": {"conditions": [
        {"type": "ContainersReady", "status": "True"}, {"type": "Ready", "status": "False"}]}})
    api = KubeApi(token_client(kube, agent_token))
    try:
        api.patch_status("Pod", "dns-system", "gated", podcondition.condition_patch(loaded=False, why="x: later",
                                                                                    now="2026-11-26T10:00:00Z"))
        api.patch_status("Pod", "dns-system", "gated", podcondition.condition_patch(loaded=True, why="",
                                                                                    now="2026-11-26T10:00:01Z"))
    finally:
        api.close()
    live = core.read_namespaced_pod_status("gated", "dns-system")
    conditions = {c.type: (c.status, c.reason) for c in live.status.conditions}
    assert conditions == {"ContainersReady": ("True", None), "Ready": ("False", None),
                          names.ZONES_LOADED_CONDITION: ("True", "ZonesLoaded")}, conditions
    admin.close()
