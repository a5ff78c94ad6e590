"""Transfers between the servers the agent configures, and instance readiness from pods, on the real
kube-apiserver (with its deployment and replicaset controllers) and real named (issues 25, 26).

There is no kubelet here: the test plays its part by marking the ReplicaSet's pods Running and Ready
with the named servers' addresses (pod status subresource), and the endpoints controller's by
writing each instance Service's Endpoints. Endpoints take no loopback address, so the two named
servers of this test listen on addresses of the benchmarking range (198.18.0.0/15) added to lo,
and allow transfers only from 127.0.0.0/8 in named.conf: without the per-zone ACL the agent gives
the primary's zone, the secondary would never get it. The agent reads the pod addresses from those Endpoints,
as it does in a cluster, and the Deployment controllers turn the pods into the availability the
Bind9Instance status shows."""

from __future__ import annotations

import dataclasses
import datetime
import pathlib
import re
import socket
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import dns.exception
import dns.message
import dns.query
import dns.zone
import pytest
from kubernetes import client

from agent.clients import endpoints as config
from agent.clients.kubeapi import KubeApi
from agent.desired.hierarchy import Desired
from agent.observe import instancereach as instance_endpoints
from tests.support import agentrun, dnsrepo
from tests.support import bind as bind_support
from tests.support import zone_api as zone_api_support
from tests.support.procs import until

INSTANCES = {"primary": "dns-primary-0", "secondary": "dns-secondary-0"}
ADDRESSES = {"primary": "198.18.53.10", "secondary": "198.18.53.11"}
STRANGER = "198.18.53.12"


@pytest.fixture
def pods(tmp_path: pathlib.Path) -> Iterator[tuple[bind_support.BindPair, dict[str, zone_api_support.ZoneApi]]]:
    """A named pair and their zone APIs at the addresses the pods will have."""
    keys = bind_support.Keys()
    pair = bind_support.BindPair(*(bind_support.BindServer(tmp_path / role, ADDRESSES[role], keys, role)
                                   for role in ("primary", "secondary")), keys)
    apis: dict[str, zone_api_support.ZoneApi] = {}
    try:
        bind_support.ensure_loopback(STRANGER)
        token = uuid.uuid4().hex
        for role, server in (("primary", pair.primary), ("secondary", pair.secondary)):
            server.start()
            apis[role] = zone_api_support.ZoneApi(server, token).start()
        yield pair, apis
    finally:
        for api in apis.values():
            api.stop()
        pair.stop()


@dataclasses.dataclass(frozen=True)
class _Reach:
    """The DNS servers as each run's observe step reads them (the shape of agent/run/options.InCluster)."""

    found: Callable[[Desired], dict[str, config.Endpoint]]

    def read(self, desired: Desired, api: Any, options: Any) -> dict[str, config.Endpoint]:
        return self.found(desired)


def _source_towards(address: str, port: int) -> str:
    """The address this process's packets to `address` come from (the agent's, as the primary sees it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((address, port))
        return str(probe.getsockname()[0])




def _ready(api: client.CustomObjectsApi, namespace: str, name: str) -> dict[str, str]:
    cr = api.get_namespaced_custom_object("bindy.firestoned.io", "v1beta1", namespace, "bind9instances", name)
    return next(c for c in cr["status"]["conditions"] if c["type"] == "Ready")


def _play_kubelet(core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str, name: str, address: str) -> None:
    """The instance's pod runs at `address` and is Ready; its Service's Endpoints list it."""
    selector = apps.read_namespaced_deployment(name, namespace).spec.selector.match_labels
    labels = ",".join(f"{k}={v}" for k, v in selector.items())
    pods = until(f"the pod of {name}", lambda: core.list_namespaced_pod(namespace, label_selector=labels).items)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    core.patch_namespaced_pod_status(pods[0].metadata.name, namespace, {"status": {
        "phase": "Running", "podIP": address, "podIPs": [{"ip": address}], "startTime": now,
        "conditions": [{"type": t, "status": "True", "lastTransitionTime": now}
                       for t in ("Initialized", "ContainersReady", "Ready", "PodScheduled")]}})
    ports = [client.CoreV1EndpointPort(name=n, port=5353, protocol=p) for n, p in (("dns-udp", "UDP"), ("dns-tcp", "TCP"))]
    core.create_namespaced_endpoints(namespace, client.V1Endpoints(
        metadata=client.V1ObjectMeta(name=name),
        subsets=[client.V1EndpointSubset(addresses=[client.V1EndpointAddress(ip=address)], ports=ports)]))


def _a(server: bind_support.BindServer, name: str) -> list[str]:
    answer = dns.query.udp(dns.message.make_query(name, "A"), server.address, port=server.port, timeout=2)
    return sorted(str(r) for rrset in answer.answer for r in rrset)


def _show(server: bind_support.BindServer, zone: str) -> str:
    return server.rndc("showzone", zone)


def test_secondaries_transfer_from_pod_addresses_and_instances_are_ready_from_pods(
        tmp_path: pathlib.Path, kube_client: Any, namespace: str,
        pods: tuple[bind_support.BindPair, dict[str, zone_api_support.ZoneApi]]) -> None:
    bind, zone_api = pods
    root, tag = dnsrepo.unique_sample(tmp_path / "repo", namespace=namespace)
    cluster = root / "infrastructure" / "cluster.yaml"  # no allowTransfer of its own: the agent's ACLs apply
    cluster.write_text(cluster.read_text().replace('    allowTransfer: ["10.0.0.0/8"]\n', ""))
    api = KubeApi(kube_client)
    core, apps, crs = client.CoreV1Api(kube_client), client.AppsV1Api(kube_client), client.CustomObjectsApi(kube_client)

    # 1. the workloads are applied, but no pod runs: no instance is Ready, and each says why
    first = agentrun.sync_dir(root, state=tmp_path / "state", kube_api=api, agent_namespace=namespace)
    assert first.kube is not None and first.kube.failed == {}, (first.outcome, first.message)
    again = agentrun.sync_dir(root, state=tmp_path / "state", kube_api=api, agent_namespace=namespace)  # reads the controllers' status
    assert again.kube is not None and again.kube.failed == {}, (again.outcome, again.message)
    for name in INSTANCES.values():
        ready = _ready(crs, namespace, name)
        assert (ready["status"], ready["reason"]) == ("False", "NotReady"), ready
        assert ready["message"] == "Waiting for pods to become ready", ready
    events = core.list_namespaced_event(namespace).items  # starting pods are no failure: no Warning
    assert not [e for e in events if e.type == "Warning" and e.involved_object.kind == "Bind9Instance"]

    # 1b. a pod that cannot start (a bad image, say: no kubelet here, so none starts): once the
    # Deployment gives up (its progress deadline, shortened by hand), the instance says why
    apps.patch_namespaced_deployment("dns-secondary-0", namespace, {"spec": {"progressDeadlineSeconds": 1}})
    until("the secondary's Deployment to give up", lambda: any(
        c.reason == "ProgressDeadlineExceeded"
        for c in apps.read_namespaced_deployment_status("dns-secondary-0", namespace).status.conditions or []))
    stuck = agentrun.sync_dir(root, state=tmp_path / "state", kube_api=api, agent_namespace=namespace)
    assert stuck.kube is not None and stuck.kube.failed == {}, (stuck.outcome, stuck.message)
    cr = crs.get_namespaced_custom_object("bindy.firestoned.io", "v1beta1", namespace, "bind9instances",
                                          "dns-secondary-0")
    degraded = next(c for c in cr["status"]["conditions"] if c["type"] == "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "NotReady"), degraded
    assert degraded["message"].startswith("Waiting for pods to become ready: ProgressDeadlineExceeded: "), degraded
    warnings = [e.reason for e in core.list_namespaced_event(namespace).items
                if e.type == "Warning" and e.involved_object.name == "dns-secondary-0"]
    assert warnings == ["NotReady"]

    # 2. the pods run at the named servers' addresses
    servers = {"primary": bind.primary, "secondary": bind.secondary}
    for role, name in INSTANCES.items():
        _play_kubelet(core, apps, namespace, name, servers[role].address)
    until("both Deployments available", lambda: all(
        (apps.read_namespaced_deployment_status(n, namespace).status.ready_replicas or 0) == 1
        for n in INSTANCES.values()))

    # 3. the agent reaches them at the addresses from the Endpoints (the named servers of the tests
    # listen on a free port, not 5353, and have their own key: only those are put in)
    tsig = config.TsigKey(bind_support.TSIG_NAME, "hmac-sha256", bind.keys.tsig)
    agent = _source_towards(bind.primary.address, bind.primary.port)
    seen: list[dict[str, config.Endpoint]] = []

    def endpoints(desired: Desired) -> dict[str, config.Endpoint]:
        found = instance_endpoints.from_cluster(api, desired, token_file=tmp_path / "no-token", agent_addresses=[agent])
        seen.append(found)
        out = {}
        for role, name in INSTANCES.items():
            ep, server = found[f"{namespace}/{name}"], servers[role]
            out[ep.instance] = dataclasses.replace(ep, dns_host=server.address, dns_port=server.port,
                                                   api_url=zone_api[role].url, token=zone_api[role].token,
                                                   tsig=tsig, pod_port=server.port,
                                                   servers=tuple(config.Server(ip, server.address, server.port,
                                                                               zone_api[role].url) for ip in ep.pods or ()))
        return out

    # read by the run's observe step, as options.InCluster is (agent/run/options.py)
    towards_named = _Reach(endpoints)
    run = agentrun.sync_dir(root, state=tmp_path / "state", kube_api=api, endpoints=towards_named,
                            agent_namespace=namespace)
    assert run.dns is not None and run.dns.ok, (run.outcome, run.message, run.errors)
    assert seen[0][f"{namespace}/dns-primary-0"].pods == (bind.primary.address,)
    assert seen[0][f"{namespace}/dns-secondary-0"].pods == (bind.secondary.address,)

    zone = f"example-{tag}.com"
    # the secondary asks the primary's pod address (BIND takes no Service name), and got the zone
    assert f"primaries {{ {bind.primary.address} port {bind.primary.port}; }}" in _show(bind.secondary, zone)
    www = until("the secondary to serve the zone by transfer", lambda: _a(bind.secondary, f"www.{zone}"))
    assert www == ["192.0.2.10", "192.0.2.11", "192.0.2.12"]
    # the primary allows transfer to its secondaries' pods and the agent, nobody else
    shown = _show(bind.primary, zone)
    acl = re.search(r"allow-transfer\s+\{([^}]*)\}", shown)
    assert acl is not None and set(acl[1].replace("/32", "").replace(";", " ").split()) == \
        {agent, bind.secondary.address}, shown
    assert f"also-notify {{ {bind.secondary.address} port {bind.secondary.port}; }}" in shown, shown
    stranger = dns.query.xfr(bind.primary.address, zone, port=bind.primary.port, source=STRANGER, timeout=5)
    with pytest.raises(dns.exception.DNSException):
        dns.zone.from_xfr(stranger)

    # 4. and the instances are Ready, as their pods are
    for name in INSTANCES.values():
        ready = _ready(crs, namespace, name)
        assert (ready["status"], ready["reason"], ready["message"]) == ("True", "AllReady", "All 1 pods are ready")
    shown_cluster = crs.get_namespaced_custom_object("bindy.firestoned.io", "v1beta1", namespace, "bind9clusters", "dns")
    assert shown_cluster["status"]["readyInstances"] == 2
