"""The control plane is real: CRDs with a status subresource, and owner-reference garbage
collection by the real kube-controller-manager."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from tests.support.procs import wait_for

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.smoke.test"},
    "spec": {
        "group": "smoke.test", "scope": "Namespaced",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
        "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                          "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                          "status": {"type": "object", "properties": {"state": {"type": "string"}}}}}}}],
    },
}


def test_crd_with_status_subresource_round_trips(kube_client: Any, namespace: str) -> None:
    ext = client.ApiextensionsV1Api(kube_client)
    try:
        ext.create_custom_resource_definition(CRD)
    except client.ApiException as exc:
        assert exc.status == 409
    wait_for(lambda: any(c.type == "Established" and c.status == "True"
                      for c in (ext.read_custom_resource_definition("widgets.smoke.test").status.conditions or [])))
    api = client.CustomObjectsApi(kube_client)
    body = {"apiVersion": "smoke.test/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}}
    wait_for(lambda: _try_create(api, namespace, body))
    api.patch_namespaced_custom_object_status("smoke.test", "v1", namespace, "widgets", "w",
                                              {"status": {"state": "Ready"}})
    got = api.get_namespaced_custom_object("smoke.test", "v1", namespace, "widgets", "w")
    assert (got["spec"]["size"], got["status"]["state"]) == (3, "Ready")


def _try_create(api: client.CustomObjectsApi, namespace: str, body: dict[str, Any]) -> bool:
    try:
        api.create_namespaced_custom_object("smoke.test", "v1", namespace, "widgets", body)
        return True
    except client.ApiException as exc:
        if exc.status == 404:  # discovery not refreshed yet
            return False
        raise


def test_owner_reference_garbage_collection(kube_client: Any, namespace: str) -> None:
    core = client.CoreV1Api(kube_client)
    owner = core.create_namespaced_config_map(namespace, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="owner")))
    core.create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(
        name="child", owner_references=[client.V1OwnerReference(
            api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid)])))
    core.delete_namespaced_config_map("owner", namespace)

    def child_gone() -> bool:
        try:
            core.read_namespaced_config_map("child", namespace)
            return False
        except client.ApiException as exc:
            return exc.status == 404

    wait_for(child_gone, timeout=60)


def test_deployment_controller_creates_a_replicaset(kube_client: Any, namespace: str) -> None:
    apps = client.AppsV1Api(kube_client)
    labels = {"app": "smoke"}
    apps.create_namespaced_deployment(namespace, client.V1Deployment(
        metadata=client.V1ObjectMeta(name="d"),
        spec=client.V1DeploymentSpec(selector=client.V1LabelSelector(match_labels=labels),
                                     template=client.V1PodTemplateSpec(
                                         metadata=client.V1ObjectMeta(labels=labels),
                                         spec=client.V1PodSpec(containers=[client.V1Container(
                                             name="c", image="example.invalid/none")])))))
    wait_for(lambda: apps.list_namespaced_replica_set(namespace).items, timeout=60)
