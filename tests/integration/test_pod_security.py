"""The generated pods meet Pod Security "restricted" on a real kube-apiserver.

The API server here is Kubernetes 1.20, built from Debian's source: it has no PodSecurity
admission plugin (added in 1.22), so a namespace labelled pod-security.kubernetes.io/enforce=
restricted is not enforced by it. The tests therefore check in two independent ways:
  * its predecessor, PodSecurityPolicy admission, enforces a policy equivalent to "restricted" on
    a dedicated API server, and the pods the real ReplicaSet controller creates from the synced
    Deployments are admitted by it unchanged (PSP would otherwise mutate a pod into compliance);
  * the Deployments as the shared API server stored them (its defaults applied) pass the Pod
    Security Standards' restricted rules, applied by agent/desired/podsecurity.py (every rule of
    which has its own unit test in tests/gate/test_podsecurity.py).
"""

from __future__ import annotations

import copy
import pathlib
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, dynamic

from agent.desired import podsecurity
from tests.support import procs
from tests.support.kube import KubeCluster
from tests.support.kuberepo import _repo, _sync
from tests.support.procs import wait_for

ENFORCE = {"pod-security.kubernetes.io/enforce": "restricted"}
# The "restricted" PodSecurityPolicy: the Pod Security Standards' restricted profile in PSP's terms
# (they say nothing about supplemental groups: RunAsAny), plus a read-only root filesystem.
RESTRICTED_PSP = {
    "apiVersion": "policy/v1beta1", "kind": "PodSecurityPolicy",
    "metadata": {"name": "restricted",
                 "annotations": {"seccomp.security.alpha.kubernetes.io/allowedProfileNames": "runtime/default"}},
    "spec": {
        "privileged": False, "allowPrivilegeEscalation": False, "requiredDropCapabilities": ["ALL"],
        "allowedCapabilities": ["NET_BIND_SERVICE"], "hostNetwork": False, "hostIPC": False, "hostPID": False,
        "volumes": sorted(podsecurity.RESTRICTED_VOLUMES), "readOnlyRootFilesystem": True,
        "runAsUser": {"rule": "MustRunAsNonRoot"}, "seLinux": {"rule": "RunAsAny"},
        "supplementalGroups": {"rule": "RunAsAny"},
        "fsGroup": {"rule": "MustRunAs", "ranges": [{"min": 1, "max": 65535}]},
    },
}


def _namespace(api_client: Any, labels: dict[str, str] | None = None) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    client.CoreV1Api(api_client).create_namespace(client.V1Namespace(
        metadata=client.V1ObjectMeta(name=name, labels=labels)))
    return name


def _as_dict(api_client: Any, obj: Any) -> dict[str, Any]:
    return dict(api_client.sanitize_for_serialization(obj))


def test_the_api_server_has_no_pod_security_admission_so_the_standards_are_checked_here() -> None:
    apiserver = procs.require("kube-apiserver", component="kube-apiserver")
    plugins = subprocess.run([apiserver, "--help"], capture_output=True, text=True, check=False).stdout
    assert "PodSecurityPolicy" in plugins
    assert "PodSecurity," not in plugins and "PodSecurity " not in plugins, \
        "this kube-apiserver has PodSecurity admission: enforce the namespace label for real instead"


def test_synced_deployments_as_stored_by_the_api_server_meet_restricted(
        kube: KubeCluster, kube_client: Any, tmp_path: pathlib.Path) -> None:
    namespace = _namespace(kube_client, ENFORCE)
    try:
        _, outcome = _sync(kube, _repo(tmp_path, namespace), namespace)
        assert outcome.kube is not None and outcome.kube.ok, outcome.kube.failed if outcome.kube else None
        apps = client.AppsV1Api(kube_client)
        for name in ("dns-primary-0", "dns-secondary-0"):
            template = _as_dict(kube_client, apps.read_namespaced_deployment(name, namespace))["spec"]["template"]
            pod = template["spec"]
            assert podsecurity.check_pod(pod, podsecurity.RESTRICTED, template["metadata"].get("annotations")) == []
            assert pod["automountServiceAccountToken"] is False
            assert all(c["securityContext"]["readOnlyRootFilesystem"] for c in pod["containers"])
    finally:
        client.CoreV1Api(kube_client).delete_namespace(namespace)


@pytest.fixture(scope="module")
def psp_kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeCluster]:
    """A second control plane whose API server admits pods only through PodSecurityPolicy."""
    cluster = KubeCluster(tmp_path_factory.mktemp("kube-psp"), admission_plugins=("PodSecurityPolicy",))
    try:
        cluster.start()
        api_client = cluster.api_client()
        dynamic.DynamicClient(api_client).resources.get(
            api_version="policy/v1beta1", kind="PodSecurityPolicy").create(body=RESTRICTED_PSP)
        api_client.close()
        yield cluster
    finally:
        cluster.stop()


def test_pods_of_the_synced_deployments_are_admitted_unchanged_by_a_restricted_pod_security_policy(
        psp_kube: KubeCluster, tmp_path: pathlib.Path) -> None:
    api_client = psp_kube.api_client()
    core, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
    namespace = _namespace(api_client, ENFORCE)
    _, outcome = _sync(psp_kube, _repo(tmp_path, namespace), namespace)
    assert outcome.kube is not None and outcome.kube.ok, outcome.kube.failed if outcome.kube else None

    def pods() -> list[Any]:
        return list(core.list_namespaced_pod(namespace, label_selector="app.kubernetes.io/name=bind9").items)

    wait_for(lambda: len(pods()) == 2, timeout=60)  # created by the real ReplicaSet controller
    for pod in pods():
        assert pod.metadata.annotations["kubernetes.io/psp"] == "restricted"
        created = _as_dict(api_client, pod)["spec"]
        deployment = apps.read_namespaced_deployment(pod.metadata.labels["app.kubernetes.io/instance"], namespace)
        template = _as_dict(api_client, deployment)["spec"]["template"]["spec"]
        assert created["securityContext"] == template["securityContext"]  # nothing for PSP to add or change
        assert [c["securityContext"] for c in created["containers"]] == \
            [c["securityContext"] for c in template["containers"]]

    # The same policy refuses what the agent generated before, and a hostPath volume.
    template = _as_dict(api_client, apps.read_namespaced_deployment("dns-primary-0", namespace))["spec"]["template"]
    bare = copy.deepcopy(template)
    del bare["spec"]["securityContext"]
    for container in bare["spec"]["containers"]:
        del container["securityContext"]
    host = copy.deepcopy(template)
    host["spec"]["volumes"].append({"name": "host", "hostPath": {"path": "/"}})
    for body, reason in ((bare, "seccomp"), (host, "hostPath")):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "namespace": namespace}, **body}
        with pytest.raises(client.ApiException) as refused:
            core.create_namespaced_pod(namespace, pod, dry_run="All")
        assert refused.value.status == 403 and "unable to admit pod" in str(refused.value.body), refused.value.body
        assert reason in str(refused.value.body)
    api_client.close()
