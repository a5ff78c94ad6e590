"""Smoke test of the e2e node: the objects the agent generates for a Bind9Instance (ServiceAccount,
RNDC Secret, ConfigMap with named.conf, Deployment of bind9 + the zone API sidecar, Service), with
the images pointed at the local ones, run on the real node: the pod becomes Ready (the test sets the
zones-loaded readiness condition the agent would set), the sidecar
answers its API at the pod IP and adds a zone over rndc, and named serves it - by `dig` at the pod
IP and at the Service's cluster IP (kube-proxy)."""

from __future__ import annotations

import base64
import json
import pathlib
import secrets
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from agent.desired import hierarchy, workloads
from agent.model import names
from tests.conftest import load_dir
from tests.support.node import Node

API_TOKEN = secrets.token_hex(16)
ZONE = "smoke.test"


def _objects(tmp: pathlib.Path, namespace: str, node: Node) -> list[dict[str, Any]]:
    """What the agent generates for the primary instance of a one-instance cluster, ready to create."""
    (tmp / "cluster.yaml").write_text(f"""
apiVersion: bindy.firestoned.io/v1beta1
kind: Bind9Cluster
metadata: {{name: smoke, namespace: {namespace}}}
spec:
  version: "9.18"
  primary: {{replicas: 1}}
  global: {{recursion: false, allowQuery: ["any"]}}
""")
    manifest = load_dir(tmp)
    assert manifest.ok, [str(p) for p in manifest.problems]
    wanted = {"ServiceAccount", "Secret", "ConfigMap", "Deployment", "Service"}
    out = []
    for obj in hierarchy.build(manifest).objects:
        if obj.key.kind not in wanted or (obj.key.kind != "ServiceAccount" and "primary" not in obj.key.name):
            continue
        body = json.loads(json.dumps(obj.body))
        if obj.key.kind == "Secret":  # what the reconciler fills in on first creation
            data = body["stringData"]
            data["secret"] = base64.b64encode(secrets.token_bytes(32)).decode()
            data[workloads.KEY_FILE] = workloads.key_block(data["key-name"], data["algorithm"], data["secret"])
        if obj.key.kind == "Deployment":  # the local images, as a user with a private registry would
            bind9, sidecar = body["spec"]["template"]["spec"]["containers"]
            bind9["image"], sidecar["image"] = node.image("bind9"), node.image("zone-api")
            bind9["imagePullPolicy"] = sidecar["imagePullPolicy"] = "Never"
            sidecar["env"].append({"name": "BIND_API_TOKEN", "value": API_TOKEN})
        out.append(body)
    assert sorted(o["kind"] for o in out) == sorted(wanted)
    return out


def _create(api: Any, body: dict[str, Any]) -> None:
    from kubernetes import client

    ns, kind = body["metadata"]["namespace"], body["kind"]
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    create = {"ServiceAccount": core.create_namespaced_service_account, "Secret": core.create_namespaced_secret,
              "ConfigMap": core.create_namespaced_config_map, "Service": core.create_namespaced_service,
              "Deployment": apps.create_namespaced_deployment}[kind]
    create(ns, body)


def _ready_pod(api: Any, namespace: str, timeout: float) -> Any:
    from kubernetes import client

    core = client.CoreV1Api(api)
    deadline = time.monotonic() + timeout
    pods: list[Any] = []
    while time.monotonic() < deadline:
        pods = core.list_namespaced_pod(namespace).items
        for pod in pods:
            conds = {c.type: c.status for c in pod.status.conditions or []}
            if conds.get("Ready") == "True" and pod.status.pod_ip:
                return pod
            if conds.get("ContainersReady") == "True" and conds.get(names.ZONES_LOADED_CONDITION) != "True":
                # the agent's part (podready/condition.py): the pod joins its Service once it has its zones
                core.patch_namespaced_pod_status(pod.metadata.name, namespace, {"status": {"conditions": [
                    {"type": names.ZONES_LOADED_CONDITION, "status": "True", "reason": "SmokeTest"}]}})
        time.sleep(0.5)
    states = [(p.metadata.name, p.status.phase, [(c.name, c.state.to_dict()) for c in p.status.container_statuses or []])
              for p in pods]
    events = [(e.involved_object.name, e.reason, e.message) for e in core.list_namespaced_event(namespace).items]
    pytest.fail(f"no Ready pod in {namespace} after {timeout:.0f} s:\npods: {states}\nevents: {events}")


def _http(url: str, *, method: str = "GET", body: Any = None, token: str | None = API_TOKEN) -> tuple[int, Any]:
    req = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json",
                                          **({"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(req, timeout=15) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def dig(server: str, port: int, name: str, rtype: str) -> list[str]:
    done = subprocess.run(["dig", f"@{server}", "-p", str(port), "+short", "+norec", "+time=2", "+tries=2",
                           name, rtype], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, f"dig @{server} -p {port} {name} {rtype}: {done.stdout}{done.stderr}"
    return done.stdout.split("\n")[:-1]


@pytest.fixture(scope="module")
def instance(node: Node, api: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from kubernetes import client

    namespace = f"e2e-smoke-{secrets.token_hex(3)}"
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": namespace}})
    try:
        created = time.monotonic()
        objects = _objects(tmp_path_factory.mktemp("smoke"), namespace, node)
        for body in objects:
            _create(api, body)
        pod = _ready_pod(api, namespace, timeout=180)
        print(f"\n[e2e] first pod Ready {time.monotonic() - created:.1f} s after its objects were created")
        service = core.read_namespaced_service(objects[-1]["metadata"]["name"] if objects[-1]["kind"] == "Service"
                                               else next(o for o in objects if o["kind"] == "Service")["metadata"]["name"],
                                               namespace)
        yield {"namespace": namespace, "pod_ip": pod.status.pod_ip, "cluster_ip": service.spec.cluster_ip}
    finally:
        core.delete_namespace(namespace)


def test_the_generated_bind9_pod_serves_a_zone_added_through_its_sidecar(instance: dict[str, Any]) -> None:
    ip = instance["pod_ip"]
    api = f"http://{ip}:{workloads.API_PORT}/api/v1"
    assert _http(f"{api}/health", token=None) == (200, {"status": "ok"})
    assert _http(f"{api}/zones", token=None)[0] == 401
    status, body = _http(f"{api}/server/status")
    assert status == 200 and "server is up and running" in body["status"], body
    status, body = _http(f"{api}/zones", method="POST", body={
        "zoneName": ZONE, "zoneType": "primary",
        "zoneConfig": {"ttl": 300, "soa": {"primaryNs": f"ns1.{ZONE}.", "adminEmail": f"admin.{ZONE}.", "serial": 7},
                       "nameServers": [f"ns1.{ZONE}."], "nameServerIps": {f"ns1.{ZONE}.": ip},
                       "records": [{"name": "www", "type": "A", "value": "192.0.2.80", "ttl": 60}]}})
    assert status == 201, body
    assert dig(ip, workloads.DNS_CONTAINER_PORT, ZONE, "SOA") == [f"ns1.{ZONE}. admin.{ZONE}. 7 3600 600 604800 86400"]
    assert dig(ip, workloads.DNS_CONTAINER_PORT, f"www.{ZONE}", "A") == ["192.0.2.80"]
    assert _http(f"{api}/zones")[1]["zones"] == [ZONE]


def test_the_service_routes_dns_to_the_pod(instance: dict[str, Any]) -> None:
    """kube-proxy (iptables) maps the Service's port 53 to named's 5353 in the pod."""
    ip = instance["cluster_ip"]
    deadline = time.monotonic() + 30
    while dig(ip, workloads.DNS_PORT, ZONE, "SOA") == [] and time.monotonic() < deadline:
        time.sleep(1)
    assert dig(ip, workloads.DNS_PORT, f"www.{ZONE}", "A") == ["192.0.2.80"]


def test_the_agent_image_runs_and_its_pod_reaches_the_api_server_and_the_dns_service(
        node: Node, api: Any, instance: dict[str, Any]) -> None:
    """The agent's image (images/build, as the Dockerfile describes it) runs as its user, and a pod
    reaches the API server through the `kubernetes` Service and the bind9 Service (pod -> Service ->
    pod on the same bridge), as the installed agent will."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    namespace, name = instance["namespace"], "agent-smoke"
    check = ("import os, socket\n"
             "assert os.getuid() == 10001, os.getuid()\n"
             "socket.create_connection(('10.96.0.1', 443), 5).close()\n"
             f"socket.create_connection(({instance['cluster_ip']!r}, 53), 5).close()\n"
             "print('reached')\n")
    core.create_namespaced_pod(namespace, {
        "metadata": {"name": name},
        "spec": {"restartPolicy": "Never", "automountServiceAccountToken": False, "containers": [{
            "name": "agent", "image": node.image("agent"), "imagePullPolicy": "Never",
            "command": ["sh", "-c", 'bindy-agent --help >/dev/null && exec /opt/bindy-agent/bin/python -c "$0"', check],
            "securityContext": {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                                "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}}}]}})
    deadline = time.monotonic() + 120
    phase = None
    while time.monotonic() < deadline:
        phase = core.read_namespaced_pod(name, namespace).status.phase
        if phase in ("Succeeded", "Failed"):
            break
        time.sleep(0.5)
    log = core.read_namespaced_pod_log(name, namespace) if phase in ("Succeeded", "Failed") else ""
    assert (phase, log) == ("Succeeded", "reached\n")
