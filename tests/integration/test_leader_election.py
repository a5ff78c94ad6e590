"""Two `bindy-agent run` replicas against one cluster: exactly one holds the Lease and syncs;
killing it lets the other take over within the lease duration."""

from __future__ import annotations

import pathlib
import shutil
import signal
import subprocess
import sys
from typing import Any

import httpx
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import ROOT, SAMPLE
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster
from tests.support.procs import free_port, wait_for


def _runs(url: str) -> float:
    try:
        text = httpx.get(f"{url}/metrics", timeout=2).text
    except httpx.TransportError:
        return -1
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == "bindy_agent_runs_total")


def _holder(kube_client: Any, namespace: str) -> str:
    try:
        return client.CoordinationV1Api(kube_client).read_namespaced_lease("bindy-agent", namespace).spec.holder_identity or ""
    except client.ApiException:
        return ""


def test_one_leader_syncs_and_a_standby_takes_over(kube: KubeCluster, kube_client: Any, namespace: str,
                                                    tmp_path: pathlib.Path, git_remote: GitRemote) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(SAMPLE, repo)
    files = {str(p.relative_to(repo)): p.read_text().replace("dns-system", namespace) for p in repo.rglob("*.yaml")}
    git_remote.commit("DNS", files)
    git_remote.push()
    agents = {}
    logs = []
    for name in ("a", "b"):
        port = free_port()
        log = open(tmp_path / f"{name}.log", "w")  # noqa: SIM115 - closed below
        logs.append(log)
        proc = subprocess.Popen(
            [sys.executable, "-m", "agent", "run", "--repo", git_remote.url, "--kubeconfig", str(kube.kubeconfig),
             "--agent-namespace", namespace, "--cache", str(tmp_path / f"cache-{name}"), "--interval", "1",
             "--jitter", "0", "--resync-after", "0.5", "--lease-duration", "3", "--listen", f"127.0.0.1:{port}",
             "--no-push-notes", "--allowed-namespaces", namespace], cwd=ROOT, stderr=log, env={"POD_NAME": f"agent-{name}", "PATH": "/usr/bin:/bin"})
        agents[name] = {"proc": proc, "url": f"http://127.0.0.1:{port}"}
    try:
        wait_for(lambda: _holder(kube_client, namespace).startswith("agent-"), 30)
        leader = "a" if _holder(kube_client, namespace).startswith("agent-a") else "b"
        standby = "b" if leader == "a" else "a"
        wait_for(lambda: _runs(agents[leader]["url"]) >= 3, 60)
        assert _runs(agents[standby]["url"]) == 0
        wait_for(lambda: httpx.get(agents[standby]["url"] + "/readyz", timeout=2).status_code == 200, 30)

        agents[leader]["proc"].send_signal(signal.SIGKILL)
        agents[leader]["proc"].wait(10)
        took = wait_for(lambda: _holder(kube_client, namespace).startswith(f"agent-{standby}"), 20)
        print(f"standby took over {took:.1f} s after the leader was killed (lease 3 s)")
        wait_for(lambda: _runs(agents[standby]["url"]) >= 1, 30)
    finally:
        for agent in agents.values():
            if agent["proc"].poll() is None:
                agent["proc"].send_signal(signal.SIGTERM)
                agent["proc"].wait(30)
        for log in logs:
            log.close()
