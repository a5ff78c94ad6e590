"""A push's webhook reaches the replica that syncs: the Lease holder's pod carries the label the
webhook Service (deploy/service.yaml) selects, the label follows leadership, and a standby reached
directly says it does not sync instead of accepting a delivery it would drop."""

from __future__ import annotations

import hashlib
import hmac
import pathlib
import shutil
import signal
import subprocess
import sys
from typing import Any

import httpx
import yaml
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import ROOT, SAMPLE
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster
from tests.support.procs import free_port, wait_for

SECRET = "s" * 40
BODY = b'{"ref": "refs/heads/main"}'


def _runs(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=2).text
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == "bindy_agent_runs_total")


def _post(url: str) -> httpx.Response:
    signature = "sha256=" + hmac.new(SECRET.encode(), BODY, hashlib.sha256).hexdigest()
    return httpx.post(f"{url}/hooks/git", content=BODY, timeout=5, headers={"X-Hub-Signature-256": signature})


def _webhook_selector() -> str:
    """The selector of the webhook Service a user installs."""
    service = next(d for d in yaml.safe_load_all((ROOT / "deploy" / "service.yaml").read_text())
                   if d["metadata"]["name"] == "bindy-agent")
    return ",".join(f"{k}={v}" for k, v in service["spec"]["selector"].items())


def _selected(core: Any, namespace: str) -> list[str]:
    return sorted(p.metadata.name for p in core.list_namespaced_pod(namespace, label_selector=_webhook_selector()).items)


def _holder(kube_client: Any, namespace: str) -> str:
    try:
        return client.CoordinationV1Api(kube_client).read_namespaced_lease("bindy-agent", namespace).spec.holder_identity or ""
    except client.ApiException:
        return ""


def test_the_webhook_service_selects_the_leader_only_and_follows_a_takeover(
        kube: KubeCluster, kube_client: Any, namespace: str, tmp_path: pathlib.Path, git_remote: GitRemote) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(SAMPLE, repo)
    git_remote.commit("DNS", {str(p.relative_to(repo)): p.read_text().replace("dns-system", namespace)
                              for p in repo.rglob("*.yaml")})
    git_remote.push()
    secret = tmp_path / "webhook-secret"
    secret.write_text(SECRET)
    core = client.CoreV1Api(kube_client)
    agents: dict[str, dict[str, Any]] = {}
    logs = []
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "default"}})  # no token controller here
    for name in ("a", "b"):  # the pods the Deployment would have made (no kubelet here: they stay Pending)
        core.create_namespaced_pod(namespace, {"metadata": {"name": f"agent-{name}", "labels": {
            "app.kubernetes.io/name": "bindy-agent"}}, "spec": {"automountServiceAccountToken": False,
                                           "containers": [{"name": "agent", "image": "x"}]}})
        port = free_port()
        log = open(tmp_path / f"{name}.log", "w")  # noqa: SIM115 - closed below
        logs.append(log)
        proc = subprocess.Popen(
            [sys.executable, "-m", "agent", "run", "--repo", git_remote.url, "--kubeconfig", str(kube.kubeconfig),
             "--agent-namespace", namespace, "--cache", str(tmp_path / f"cache-{name}"), "--interval", "3600",
             "--lease-duration", "3", "--listen", f"127.0.0.1:{port}", "--webhook-secret-file", str(secret),
             "--no-push-notes", "--allowed-namespaces", namespace], cwd=ROOT, stderr=log,
            env={"POD_NAME": f"agent-{name}", "PATH": "/usr/bin:/bin"})
        agents[name] = {"proc": proc, "url": f"http://127.0.0.1:{port}"}
    try:
        wait_for(lambda: _holder(kube_client, namespace).startswith("agent-"), 30)
        leader = "a" if _holder(kube_client, namespace).startswith("agent-a") else "b"
        standby = "b" if leader == "a" else "a"
        wait_for(lambda: _selected(core, namespace) == [f"agent-{leader}"], 20)
        wait_for(lambda: _runs(agents[leader]["url"]) >= 1, 60)  # its start-up run

        reply = _post(agents[standby]["url"])  # reached directly, past the Service
        assert reply.status_code == 503 and "standby" in reply.text, (reply.status_code, reply.text)
        before = _runs(agents[leader]["url"])
        assert _post(agents[leader]["url"]).status_code == 202
        wait_for(lambda: _runs(agents[leader]["url"]) > before, 30)  # the webhook ran a sync, not the hour's schedule
        assert _runs(agents[standby]["url"]) == 0

        agents[leader]["proc"].send_signal(signal.SIGTERM)  # a rolling update stops the leader
        agents[leader]["proc"].wait(60)
        took = wait_for(lambda: _selected(core, namespace) == [f"agent-{standby}"], 20)
        print(f"\nthe webhook Service selects the new leader {took:.1f} s after the old one stopped")
        assert _post(agents[standby]["url"]).status_code == 202
    finally:
        for agent in agents.values():
            if agent["proc"].poll() is None:
                agent["proc"].send_signal(signal.SIGTERM)
                agent["proc"].wait(30)
        for log in logs:
            log.close()
