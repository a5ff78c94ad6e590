"""The README's first zone on a real kube-apiserver, the way the quickstart's "from your machine" step
says: its namespace created, `bindy-agent install-crds`, then `bindy-agent sync my-dns --kubeconfig`. The
API server accepts every CR of it, every Kubernetes object the offline plan listed is then in the cluster,
and a second sync of the same files writes nothing."""

from __future__ import annotations

import json
import pathlib
from typing import Any

from kubernetes import client

from tests.support import clirun
from tests.support.firstzone import README, yaml_files
from tests.support.kube import KubeCluster

GROUP, VERSION = "bindy.firestoned.io", "v1beta1"
CORE = {"ServiceAccount": "service_account", "Secret": "secret", "ConfigMap": "config_map", "Service": "service"}


def _read(api_client: Any, kind: str, namespace: str, name: str) -> dict[str, Any]:
    """The live object, whatever its kind (a 404 raises)."""
    if kind in CORE:
        found = getattr(client.CoreV1Api(api_client), f"read_namespaced_{CORE[kind]}")(name, namespace)
    elif kind == "Deployment":
        found = client.AppsV1Api(api_client).read_namespaced_deployment(name, namespace)
    else:
        return client.CustomObjectsApi(api_client).get_namespaced_custom_object(  # type: ignore[no-any-return]
            GROUP, VERSION, namespace, kind.lower() + "s", name)
    return api_client.sanitize_for_serialization(found)  # type: ignore[no-any-return]


def test_the_readme_first_zone_syncs_into_a_real_cluster_as_planned(
        kube: KubeCluster, kube_client: Any, namespace: str, tmp_path: pathlib.Path) -> None:
    repo = tmp_path / "my-dns"
    repo.mkdir()
    for name, text in yaml_files(README.read_text()).items():
        (repo / name).write_text(text.replace("dns-system", namespace))  # a namespace of its own on a shared cluster
    kubeconfig = str(kube.kubeconfig)
    scope = ("--allowed-namespaces", namespace, "--agent-namespace", namespace, "--state", str(tmp_path / "state"))

    planned = clirun.main("plan", str(repo), "-o", "json", "--allowed-namespaces", namespace)
    assert planned.returncode == 0, planned.stderr
    wanted = [c["target"] for c in json.loads(planned.stdout)["changes"] if c["layer"] == "kubernetes"]
    assert len(wanted) == 21, wanted

    installed = clirun.main("install-crds", "--kubeconfig", kubeconfig)
    assert installed.returncode == 0, installed.stderr
    synced = clirun.main("sync", str(repo), "--kubeconfig", kubeconfig, *scope)
    assert synced.returncode == 0, synced.stdout + synced.stderr

    live = {(t["kind"], t["name"]): _read(kube_client, t["kind"], t["namespace"], t["name"]) for t in wanted}
    assert live[("DNSZone", "example-com")]["spec"]["zoneName"] == "example.com"
    assert live[("MXRecord", "mx")]["spec"]["mailServer"] == "mail.example.com."
    assert {obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] for obj in live.values()} == {"bindy-agent"}

    again = clirun.main("sync", str(repo), "--kubeconfig", kubeconfig, *scope)
    assert again.returncode == 0, again.stdout + again.stderr
    after = {key: _read(kube_client, key[0], namespace, key[1])["metadata"]["resourceVersion"] for key in live}
    assert after == {key: obj["metadata"]["resourceVersion"] for key, obj in live.items()}, "the second sync wrote"
