"""deploy/ applied to the real API server: with the agent's own ServiceAccount token, a full sync of
sample-repo succeeds under exactly those RBAC rules, and writes outside them are forbidden."""

from __future__ import annotations

import base64
import pathlib
import subprocess
import time
from typing import Any

import pytest
from kubernetes import client

from agent.errors import KubeError
from agent.reconcile.kubeapi import KubeApi
from agent.run import orchestrator
from agent.run.lease import LeaderElector
from tests.conftest import ROOT, SAMPLE
from tests.support import agentrun
from tests.support.kube import KubeCluster


def _token(kube_client: Any) -> str:
    core = client.CoreV1Api(kube_client)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for secret in core.list_namespaced_secret("bindy-agent").items:
            annotations = secret.metadata.annotations or {}
            owner = annotations.get("kubernetes.io/service-account.name")
            if secret.type == "kubernetes.io/service-account-token" and owner == "bindy-agent":
                return base64.b64decode(secret.data["token"]).decode()
        time.sleep(0.2)
    raise AssertionError("the token controller never issued a token for bindy-agent")


def test_a_full_sync_works_under_the_shipped_rbac_and_nothing_more(kube: KubeCluster, kube_client: Any,
                                                                   tmp_path: pathlib.Path) -> None:
    for name in ("namespace.yaml", "serviceaccount.yaml", "rbac.yaml", "service.yaml", "deployment.yaml"):
        subprocess.run(["kubectl", "--kubeconfig", str(kube.kubeconfig), "apply", "-f", str(ROOT / "deploy" / name)],
                       check=True, capture_output=True)
    config = client.Configuration()
    config.host, config.ssl_ca_cert = kube.url, str(kube.ca)
    config.api_key = {"authorization": f"Bearer {_token(kube_client)}"}
    api = KubeApi(client.ApiClient(config))

    def sync() -> orchestrator.RunOutcome:
        return agentrun.sync_dir(SAMPLE, state=tmp_path / "state", kube_api=api, agent_namespace="bindy-agent",
                                 revision="rbac-test", create_namespaces=True)

    run = sync()
    outcome = run.kube
    assert outcome is not None and outcome.failed == {}, (run.outcome, run.message, run.errors)
    assert len(outcome.applied) == 38 and len(outcome.statuses_written) == 29
    events = client.CoreV1Api(kube_client).list_namespaced_event("dns-system").items
    applied = {(e.involved_object.kind, e.involved_object.name) for e in events if e.reason == "Applied"}
    assert ("Bind9Cluster", "dns") in applied and ("Bind9Instance", "dns-primary-0") in applied
    again = sync()
    assert again.plan is not None and again.plan.changes == []
    assert LeaderElector(api, "bindy-agent", name="rbac-test").tick() is True

    # writes outside the shipped rules are forbidden for that token
    with pytest.raises(KubeError) as denied:
        api.delete("Namespace", None, "kube-system")
    assert denied.value.reason == "forbidden" and "may not delete namespaces" in str(denied.value)
    with pytest.raises(KubeError) as denied:
        api.get("Lease", "default", "anything")  # leases only in the agent's namespace
    assert denied.value.reason == "forbidden"
    as_agent = client.ApiClient(config)
    with pytest.raises(client.ApiException) as escalate:
        client.RbacAuthorizationV1Api(as_agent).create_cluster_role(client.V1ClusterRole(
            metadata=client.V1ObjectMeta(name="escalate"),
            rules=[client.V1PolicyRule(api_groups=["*"], resources=["*"], verbs=["*"])]))
    assert escalate.value.status == 403
    with pytest.raises(client.ApiException) as nodes:
        client.CoreV1Api(as_agent).list_node()
    assert nodes.value.status == 403
