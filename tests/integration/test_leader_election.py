"""Two `bindy-agent run` replicas against one cluster: exactly one holds the Lease and syncs;
killing it lets the other take over within the lease duration."""

from __future__ import annotations

import pathlib
import shutil
import signal
import subprocess
import sys
import time
from typing import Any

import httpx
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from agent.clients.kubeapi import KubeApi
from agent.run.lease import LeaderElector
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


def _race(contenders: dict[str, Any], seconds: float) -> str:
    """Every contender tries once per 0.2 s (as the agent does three times per lease duration, faster)
    until one holds the Lease; its name."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for name, elector in contenders.items():
            if elector.tick():
                return name
        time.sleep(0.2)
    return ""


def test_an_expired_lease_goes_to_the_warm_standby_and_to_a_cold_replica_only_when_none_is_alive(
        kube_client: Any, namespace: str) -> None:
    """The leader dies (stops renewing): a replica that has followed (patience 0) and one that just
    started (patience one lease duration) look at the expired Lease together - the warm one takes it,
    every time; with no warm one alive, the cold one takes it one duration later than a warm one would."""
    api = KubeApi(kube_client, namespaces=[namespace])
    duration = 2
    for attempt in range(3):
        leader = LeaderElector(api, namespace, name=f"warm-{attempt}", identity="old-leader", duration=duration)
        assert leader.tick() is True
        warm = LeaderElector(api, namespace, name=f"warm-{attempt}", identity="warm", duration=duration)
        cold = LeaderElector(api, namespace, name=f"warm-{attempt}", identity="cold", duration=duration,
                             patience=lambda: float(duration))
        # the cold replica is asked first in every round: it still leaves the Lease to the warm one
        assert _race({"cold": cold, "warm": warm}, 3 * duration) == "warm"
        assert cold.tick() is False
    leader = LeaderElector(api, namespace, name="cold-alone", identity="old-leader", duration=duration)
    assert leader.tick() is True
    killed = time.monotonic()
    cold = LeaderElector(api, namespace, name="cold-alone", identity="cold", duration=duration,
                         patience=lambda: float(duration))
    assert _race({"cold": cold}, 4 * duration) == "cold"
    took = time.monotonic() - killed
    assert 2 * duration - 0.5 <= took < 3 * duration, took  # expiry, then its patience: bounded


def test_a_released_lease_goes_to_the_warm_standby_first(kube_client: Any, namespace: str) -> None:
    api = KubeApi(kube_client, namespaces=[namespace])
    leader = LeaderElector(api, namespace, name="released", identity="old-leader", duration=2)
    assert leader.tick() is True
    leader.release()  # a clean stop: the Lease is left expired, not held
    cold = LeaderElector(api, namespace, name="released", identity="cold", duration=2, patience=lambda: 2.0)
    warm = LeaderElector(api, namespace, name="released", identity="warm", duration=2)
    assert cold.tick() is False
    assert warm.tick() is True
