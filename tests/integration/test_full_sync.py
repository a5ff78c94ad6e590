"""Kubernetes and DNS together: every CR of sample-repo ends Ready with the applied revision, and
DNSZone status shows each instance Configured; a second run writes nothing anywhere."""

from __future__ import annotations

import pathlib
import subprocess
from typing import Any

from agent.clients import endpoints as config
from agent.clients.kubeapi import KubeApi
from agent.clients.statestore import ConfigMapStore
from agent.run import orchestrator
from tests.support import agentrun, dnsrepo
from tests.support import bind as bind_support
from tests.support.kube import KubeCluster

KINDS = "clusterbind9providers,bind9clusters,bind9instances,dnszones,arecords,aaaarecords,cnamerecords," \
        "mxrecords,txtrecords,nsrecords,srvrecords,caarecords"


def _run(kube: KubeCluster, root: pathlib.Path, endpoints: Any, namespace: str,
         ) -> tuple[KubeApi, orchestrator.RunOutcome]:
    api = KubeApi.from_kubeconfig(str(kube.kubeconfig))
    result = agentrun.sync_dir(root, store=ConfigMapStore(api, namespace), kube_api=api, endpoints=endpoints,
                               agent_namespace=namespace, revision="c0ffee")
    return api, result


def test_every_cr_is_ready_after_kubernetes_and_dns(kube: KubeCluster, namespace: str, tmp_path: pathlib.Path,
                                                     bind: bind_support.BindPair, zone_api: Any) -> None:
    root, _ = dnsrepo.unique_sample(tmp_path / "repo", namespace)
    endpoints = config.load_endpoints(dnsrepo.endpoint_map(tmp_path, bind, zone_api, namespace))
    api, first = _run(kube, root, endpoints, namespace)
    assert (first.outcome, first.failures, first.refusals) == ("applied", [], [])

    table = subprocess.run(
        ["kubectl", "--kubeconfig", str(kube.kubeconfig), "get", KINDS, "-n", namespace, "--no-headers", "-o",
         "custom-columns=KIND:.kind,NAME:.metadata.name,READY:.status.conditions[?(@.type=='Ready')].status,"
         "REV:.status.lastAppliedRevision"], capture_output=True, text=True, check=True).stdout.split("\n")
    rows = [line.split() for line in table if line.strip()]
    assert len(rows) == 29  # 1 cluster + 2 instances + 3 zones + 23 records
    # every CR is Ready but the instances, whose pods never run here (no kubelet): they wait for them
    assert sorted((r[0], r[2]) for r in rows if r[2] != "True") == [("Bind9Instance", "False")] * 2
    # the revision shows where one object carries it: the cluster, and each zone it changed
    assert sorted((r[0], r[1]) for r in rows if r[3] == "c0ffee") == [
        ("Bind9Cluster", "dns"), ("DNSZone", "example-com"), ("DNSZone", "example-org"), ("DNSZone", "internal")]
    assert {r[3] for r in rows if r[0] not in ("Bind9Cluster", "DNSZone")} == {"<none>"}

    zone = subprocess.run(["kubectl", "--kubeconfig", str(kube.kubeconfig), "get", "dnszone", "example-com", "-n",
                           namespace, "-o", "jsonpath={.status.bind9Instances[*].status}"],
                          capture_output=True, text=True, check=True).stdout
    assert zone.split() == ["Configured", "Configured"]
    www = subprocess.run(["kubectl", "--kubeconfig", str(kube.kubeconfig), "get", "arecord", "www", "-n", namespace,
                          "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].message}"],
                         capture_output=True, text=True, check=True).stdout
    assert www == "Record configured on 2 endpoint(s)"

    api2, second = _run(kube, root, endpoints, namespace)
    assert api2.write_count == 0
    assert second.dns is not None and second.dns.updates_sent == 0
