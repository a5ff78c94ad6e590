"""deploy/ installed with `kubectl apply -k deploy/` on the real API server: the agent's
ServiceAccount may do exactly what a sync needs (a full sync of sample-repo runs with its own
token) and is denied everything the shipped RBAC used to allow (issue 15, point 6)."""

from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import Any

import pytest
from kubernetes import client

from agent.clients import statestore
from agent.clients.kubeapi import KubeApi
from agent.errors import KubeError
from agent.run import crds, orchestrator
from agent.run.lease import LeaderElector
from tests.conftest import ROOT, SAMPLE
from tests.support import agentrun
from tests.support.kube import (
    KUBECTL,
    KubeCluster,
    service_account_token,
    token_client,
    token_kubeconfig,
)

SA = ("bindy-agent", "bindy-agent")
BINDY = "bindy.firestoned.io"
CRDS = "customresourcedefinitions.apiextensions.k8s.io"

# (verb, resource[/name], namespace or None for cluster-scoped, subresource) -> may the agent?
ALLOWED = [
    ("get", "secrets", "dns-system", ""), ("list", "secrets", "dns-system", ""),
    ("create", "secrets", "dns-system", ""), ("delete", "secrets", "dns-system", ""),
    ("patch", "deployments.apps", "dns-system", ""), ("create", "deployments.apps", "dns-system", ""),
    ("patch", "services", "dns-system", ""), ("patch", "configmaps", "dns-system", ""),
    ("patch", "serviceaccounts", "dns-system", ""), ("create", "events", "dns-system", ""),
    ("list", f"dnszones.{BINDY}", "dns-system", ""), ("patch", f"arecords.{BINDY}", "dns-system", ""),
    ("create", f"bind9instances.{BINDY}", "dns-system", ""), ("patch", f"dnszones.{BINDY}", "dns-system", "status"),
    ("list", f"clusterbind9providers.{BINDY}", None, ""), ("patch", f"clusterbind9providers.{BINDY}", None, ""),
    ("patch", f"clusterbind9providers.{BINDY}", None, "status"),
    ("get", CRDS, None, ""), ("list", CRDS, None, ""),
    ("create", f"{CRDS}/dnszones.{BINDY}", None, ""), ("patch", f"{CRDS}/arecords.{BINDY}", None, ""),
    ("get", "leases.coordination.k8s.io/bindy-agent", "bindy-agent", ""),
    ("update", "leases.coordination.k8s.io/bindy-agent", "bindy-agent", ""),
    ("create", "leases.coordination.k8s.io", "bindy-agent", ""),
    ("get", "configmaps/bindy-agent-state", "bindy-agent", ""), ("list", "configmaps", "bindy-agent", ""),
    ("create", "configmaps/bindy-agent-inventory", "bindy-agent", ""),
    ("delete", "configmaps/bindy-agent-state-zone-0123456789abcdef", "bindy-agent", ""),
    ("create", "events", "bindy-agent", ""),
    ("get", "endpoints", "dns-system", ""),  # pod addresses for transfers (primaries, also-notify)
    ("list", "pods", "dns-system", ""),  # why an instance's pods do not start (read, never changed)
    ("create", "persistentvolumeclaims", "dns-system", ""), ("patch", "persistentvolumeclaims", "dns-system", ""),
    ("list", "persistentvolumeclaims", "dns-system", ""),  # storage.persistentVolumeClaim, created when absent
]
DENIED = [
    # Secrets: only in the target namespaces - not kube-system, not another team's, not its own
    ("get", "secrets", "kube-system", ""), ("list", "secrets", "kube-system", ""),
    ("get", "secrets", "team-a", ""), ("list", "secrets", "default", ""), ("list", "secrets", "*", ""),
    ("get", "secrets/bindy-agent-git", "bindy-agent", ""), ("watch", "secrets", "dns-system", ""),
    ("deletecollection", "secrets", "dns-system", ""),
    # nothing in kube-system, and workloads only where the repository may put them
    ("patch", "deployments.apps", "kube-system", ""), ("patch", "configmaps", "kube-system", ""),
    ("patch", "services", "kube-system", ""), ("create", "deployments.apps", "default", ""),
    ("create", "deployments.apps", "team-a", ""), ("create", "deployments.apps", "bindy-agent", ""),
    ("create", "pods", "dns-system", ""), ("create", "pods", "dns-system", "exec"),
    ("list", "endpoints", "dns-system", ""), ("patch", "endpoints", "dns-system", ""),
    ("get", "endpoints", "kube-system", ""), ("get", "pods", "dns-system", ""),
    ("list", "pods", "kube-system", ""), ("watch", "pods", "dns-system", ""), ("delete", "pods", "dns-system", ""),
    ("get", "pods", "dns-system", "log"), ("delete", "persistentvolumeclaims", "dns-system", ""),
    ("create", "persistentvolumeclaims", "kube-system", ""),
    ("create", "serviceaccounts", "dns-system", "token"), ("patch", f"bind9clusters.{BINDY}", "team-a", ""),
    ("patch", "services", "bindy-agent", ""), ("list", "serviceaccounts", "bindy-agent", ""),
    # CRDs: write only the 12 bindy ones, by name; never delete
    ("patch", f"{CRDS}/widgets.example.com", None, ""), ("create", CRDS, None, ""),
    ("delete", f"{CRDS}/dnszones.{BINDY}", None, ""),
    # namespaces: no writes at all
    ("create", "namespaces", None, ""), ("patch", "namespaces/kube-system", None, ""),
    ("delete", "namespaces/dns-system", None, ""), ("list", "namespaces", None, ""),
    # Leases: its own only
    ("update", "leases.coordination.k8s.io/other", "bindy-agent", ""),
    ("update", "leases.coordination.k8s.io/kube-controller-manager", "kube-system", ""),
    ("create", "leases.coordination.k8s.io", "kube-system", ""),
    # no escalation
    ("create", "clusterroles.rbac.authorization.k8s.io", None, ""),
    ("create", "rolebindings.rbac.authorization.k8s.io", "dns-system", ""),
    ("escalate", "roles.rbac.authorization.k8s.io", "dns-system", ""),
    ("bind", "clusterroles.rbac.authorization.k8s.io", None, ""),
    ("impersonate", "serviceaccounts", "kube-system", ""), ("list", "nodes", None, ""),
]


def _kubectl(kubeconfig: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KUBECTL), "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                          timeout=120)


def _can_i(kubeconfig: pathlib.Path, verb: str, resource: str, namespace: str | None, sub: str) -> bool:
    args = ["auth", "can-i", verb, resource]
    args += ["--all-namespaces"] if namespace == "*" else ["-n", namespace] if namespace else []
    args += [f"--subresource={sub}"] if sub else []
    done = _kubectl(kubeconfig, *args)
    assert done.stdout.strip() in ("yes", "no"), done.stderr
    return done.stdout.strip() == "yes"


@pytest.fixture(scope="module")
def installed(kube: KubeCluster) -> subprocess.CompletedProcess[str]:
    """`kubectl apply -k deploy/`, as docs/install.md says, with an admin's kubeconfig."""
    done = _kubectl(kube.kubeconfig, "apply", "-k", str(ROOT / "deploy"))
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def agent_token(kube: KubeCluster, installed: Any) -> str:
    admin = kube.api_client()
    try:
        return service_account_token(admin, *reversed(SA))
    finally:
        admin.close()


def test_the_install_creates_namespaces_crds_rbac_and_the_agent(kube: KubeCluster, installed: Any) -> None:
    out = installed.stdout
    for line in ("namespace/bindy-agent", "namespace/dns-system", f"customresourcedefinition.apiextensions.k8s.io/"
                 f"dnszones.{BINDY}", "clusterrole.rbac.authorization.k8s.io/bindy-agent-crds",
                 "role.rbac.authorization.k8s.io/bindy-agent", "deployment.apps/bindy-agent", "service/bindy-agent"):
        assert line in out, out
    again = _kubectl(kube.kubeconfig, "apply", "-k", str(ROOT / "deploy"))
    assert again.returncode == 0 and set(again.stdout.split()) <= {"unchanged", "configured"} | set(out.split())
    shown = _kubectl(kube.kubeconfig, "get", "deployment", "bindy-agent", "-n", "bindy-agent", "-o",
                     "jsonpath={.spec.template.spec.volumes[?(@.name=='zone-api-token')].projected.sources[0]}")
    assert '"audience":"bindcar"' in shown.stdout and '"expirationSeconds":600' in shown.stdout, shown.stdout


def test_the_service_account_may_do_what_a_sync_needs_and_nothing_else(
        kube: KubeCluster, agent_token: str, tmp_path: pathlib.Path) -> None:
    kubeconfig = token_kubeconfig(kube, agent_token, tmp_path / "agent.kubeconfig")
    wrong = [f"{'denied' if ok else 'allowed'}: {verb} {res}{f' -n {ns}' if ns else ''}"
             f"{f' --subresource={sub}' if sub else ''}"
             for rows, ok in ((ALLOWED, True), (DENIED, False)) for verb, res, ns, sub in rows
             if _can_i(kubeconfig, verb, res, ns, sub) != ok]
    assert wrong == [], "kubectl auth can-i as system:serviceaccount:bindy-agent:bindy-agent:\n" + "\n".join(wrong)


def test_real_requests_outside_the_rules_are_forbidden(kube: KubeCluster, agent_token: str) -> None:
    api = KubeApi(token_client(kube, agent_token), namespaces=["dns-system"])
    # a Role grants `get` of its own namespace; a namespace write (Pod Security labels!) is refused
    assert api.get("Namespace", None, "dns-system") is not None
    for ns in ("dns-system", "kube-system"):
        with pytest.raises(KubeError) as denied:
            api.apply({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": ns, "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}})
        assert denied.value.reason == "forbidden" and "may not patch namespaces" in str(denied.value)
    with pytest.raises(KubeError, match="may not list secrets") as denied:
        api.list("Secret", namespace="kube-system")
    # a CRD that is not bindy's cannot be created or changed, even with server-side apply
    foreign = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "widgets.example.com"},
               "spec": {"group": "example.com", "scope": "Namespaced",
                        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                        "versions": [{"name": "v1", "served": True, "storage": True,
                                      "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
    with pytest.raises(KubeError) as denied:
        api.apply(foreign)
    assert denied.value.reason == "forbidden" and "customresourcedefinitions" in str(denied.value)
    # only its own Lease
    assert LeaderElector(api, "bindy-agent", name="someone-else").tick() is False
    assert LeaderElector(api, "kube-system", name="kube-scheduler").tick() is False


def test_a_full_sync_works_as_the_service_account(kube: KubeCluster, kube_client: Any, agent_token: str,
                                                  tmp_path: pathlib.Path) -> None:
    api = KubeApi(token_client(kube, agent_token), namespaces=["dns-system"])

    def sync() -> orchestrator.RunOutcome:
        return agentrun.sync_dir(SAMPLE, store=statestore.ConfigMapStore(api, "bindy-agent"), kube_api=api,
                                 agent_namespace="bindy-agent", revision="rbac-test")

    run = sync()
    outcome = run.kube
    assert outcome is not None and outcome.failed == {}, (run.outcome, run.message, run.errors)
    assert len(outcome.applied) == 38 and len(outcome.statuses_written) == 29
    events = client.CoreV1Api(kube_client).list_namespaced_event("dns-system").items
    applied = {(e.involved_object.kind, e.involved_object.name) for e in events if e.reason == "Applied"}
    assert ("Bind9Cluster", "dns") in applied
    # no kubelet here: the instances' pods never run, so they are not called Ready (Applied)
    assert ("Bind9Instance", "dns-primary-0") not in applied
    again = sync()
    assert again.plan is not None and again.plan.changes == []
    state = client.CoreV1Api(kube_client).read_namespaced_config_map("bindy-agent-state", "bindy-agent")
    assert "rbac-test" in str(state.data)  # the run's record, kept where the agent may write it
    assert LeaderElector(api, "bindy-agent", name="bindy-agent").tick() is True

    # the CLI, with the ServiceAccount's kubeconfig: it lists only where it may (the allowed namespaces) and
    # sees that nothing changed; told that any namespace is allowed, it would need a ClusterRole
    kubeconfig = token_kubeconfig(kube, agent_token, tmp_path / "agent.kubeconfig")
    plan = [sys.executable, "-m", "agent", "plan", str(SAMPLE), "--kubeconfig", str(kubeconfig)]
    scoped = subprocess.run(plan, capture_output=True, text=True, cwd=ROOT)
    assert (scoped.returncode, scoped.stdout.splitlines()[-1:]) == (0, ["No changes: the world matches the revision."]), \
        scoped.stderr
    anywhere = subprocess.run([*plan, "--allowed-namespaces", "*"], capture_output=True, text=True, cwd=ROOT)
    assert anywhere.returncode == 1 and "may not list" in anywhere.stderr, anywhere.stderr


def test_the_agent_restores_a_bindy_crd_by_name(kube: KubeCluster, kube_client: Any, agent_token: str) -> None:
    """create/patch on the 12 CRDs by resourceNames is enough for server-side apply."""
    crd = f"txtrecords.{BINDY}"
    ext = client.ApiextensionsV1Api(kube_client)
    ext.patch_custom_resource_definition(crd, [{"op": "remove", "path": "/spec/versions/0/additionalPrinterColumns/0"}])
    api = KubeApi(token_client(kube, agent_token), namespaces=["dns-system"])
    assert crds.install_crds(api) == [crd]
    assert crds.install_crds(api) == []


def test_without_its_namespaces_the_agent_says_which_list_is_forbidden(
        kube: KubeCluster, agent_token: str, tmp_path: pathlib.Path) -> None:
    """Cluster-wide lists need a ClusterRole: the agent must be told the namespaces its Roles cover."""
    api = KubeApi(token_client(kube, agent_token))
    run = agentrun.sync_dir(SAMPLE, state=tmp_path / "state", kube_api=api, agent_namespace="bindy-agent",
                            revision="rbac-test")
    assert (run.outcome, run.kube) == ("unreachable", None)  # nothing written
    assert "could not observe the world" in run.message and "may not list bind9clusters" in run.message
