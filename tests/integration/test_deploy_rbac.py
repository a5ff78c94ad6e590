"""deploy/ applied to the real API server: with the agent's own ServiceAccount token, a full sync of
sample-repo succeeds under exactly those RBAC rules, and writes outside them are forbidden."""

from __future__ import annotations

import base64
import subprocess
import time
from typing import Any

import pytest
from kubernetes import client

from agent.desired import hierarchy as desired
from agent.errors import KubeError
from agent.reconcile.kubeapi import KubeApi
from agent.run import orchestrator as runner
from agent.run.lease import LeaderElector
from tests.conftest import ROOT, SAMPLE, load_dir
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


def test_a_full_sync_works_under_the_shipped_rbac_and_nothing_more(kube: KubeCluster, kube_client: Any) -> None:
    for name in ("namespace.yaml", "serviceaccount.yaml", "rbac.yaml", "service.yaml", "deployment.yaml"):
        subprocess.run(["kubectl", "--kubeconfig", str(kube.kubeconfig), "apply", "-f", str(ROOT / "deploy" / name)],
                       check=True, capture_output=True)
    config = client.Configuration()
    config.host, config.ssl_ca_cert = kube.url, str(kube.ca)
    config.api_key = {"authorization": f"Bearer {_token(kube_client)}"}
    api = KubeApi(client.ApiClient(config))

    state = desired.build(load_dir(SAMPLE))
    outcome = runner.apply_revision(state, revision="rbac-test", kube_api=api, agent_namespace="bindy-agent").kube
    assert outcome is not None
    assert outcome.result is not None and outcome.result.failed == {}, outcome.result.failed if outcome.result else None
    assert len(outcome.result.applied) == 38 and len(outcome.result.statuses_written) == 29
    events = client.CoreV1Api(kube_client).list_namespaced_event("dns-system").items
    applied = {(e.involved_object.kind, e.involved_object.name) for e in events if e.reason == "Applied"}
    assert ("Bind9Cluster", "dns") in applied and ("Bind9Instance", "dns-primary-0") in applied
    again = runner.apply_revision(state, revision="rbac-test", kube_api=api, agent_namespace="bindy-agent").kube
    assert again is not None and again.plan_changes == []
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
