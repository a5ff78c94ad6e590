"""`sync` and `run` built by one composition root (agent/run/compose.py), against a real kube-apiserver:
given a cluster and a state directory, both keep their state in the directory, and neither writes the
cluster's state ConfigMap; given only the cluster, both keep it in that ConfigMap."""

from __future__ import annotations

import pathlib
import shutil
from typing import Any

import pytest
from kubernetes import client

from agent.model import names
from agent.run import agent as run_agent
from agent.run import settings as config
from tests.support import clirun
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster
from tests.support.procs import free_port

pytestmark = pytest.mark.integration
SAMPLE = pathlib.Path(__file__).resolve().parents[2] / "sample-repo"


def _repo(tmp_path: pathlib.Path, namespace: str) -> pathlib.Path:
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    for path in root.rglob("*.yaml"):
        path.write_text(path.read_text().replace("dns-system", namespace))
    return root


def _state_config_map(kube_client: Any, namespace: str) -> Any:
    found = client.CoreV1Api(kube_client).list_namespaced_config_map(
        namespace, field_selector=f"metadata.name={names.STATE_NAME}").items
    return found[0] if found else None


def _run_once(kube: KubeCluster, git_remote: GitRemote, tmp_path: pathlib.Path, namespace: str,
              **more: Any) -> Any:
    settings = config.load_settings({
        "repo": git_remote.url, "cache": str(tmp_path / "cache"), "kubeconfig": str(kube.kubeconfig),
        "agent_namespace": namespace, "allowed_namespaces": namespace, "leader_election": False,
        "listen": f"127.0.0.1:{free_port()}", **more}, environ={})
    agent = run_agent.Agent(settings)
    try:
        return agent.run_once()
    finally:
        agent.http_stop.set()
        agent.httpd.serve(agent.http_stop)  # never started: closes its socket
        assert agent.api is not None
        agent.api.close()


def test_sync_and_run_with_a_cluster_and_a_state_directory_both_keep_state_in_the_directory(
        kube: KubeCluster, kube_client: Any, namespace: str, tmp_path: pathlib.Path, git_remote: GitRemote) -> None:
    root = _repo(tmp_path, namespace)
    target = ("--kubeconfig", str(kube.kubeconfig), "--agent-namespace", namespace, "--allowed-namespaces", namespace)
    synced = clirun.main("sync", str(root), *target, "--state", str(tmp_path / "sync-state"))
    assert synced.returncode == 0, synced.stderr
    assert (tmp_path / "sync-state").is_dir() and _state_config_map(kube_client, namespace) is None

    git_remote.commit("DNS", {str(p.relative_to(root)): p.read_text() for p in root.rglob("*.yaml")})
    git_remote.push()
    run = _run_once(kube, git_remote, tmp_path, namespace, state=str(tmp_path / "run-state"))
    assert run.outcome == "applied", (run.message, run.failures)
    assert (tmp_path / "run-state").is_dir()
    assert _state_config_map(kube_client, namespace) is None  # before: run wrote the ConfigMap, ignoring --state


def test_sync_and_run_with_only_a_cluster_share_its_state_config_map(
        kube: KubeCluster, kube_client: Any, namespace: str, tmp_path: pathlib.Path, git_remote: GitRemote) -> None:
    root = _repo(tmp_path, namespace)
    git_remote.commit("DNS", {str(p.relative_to(root)): p.read_text() for p in root.rglob("*.yaml")})
    git_remote.push()
    run = _run_once(kube, git_remote, tmp_path, namespace)
    assert run.outcome == "applied", (run.message, run.failures)
    assert _state_config_map(kube_client, namespace) is not None
    # sync of the same commit reads the state `run` wrote: the revision was handled, nothing to do
    synced = clirun.main("sync", "--repo", git_remote.url, "--cache", str(tmp_path / "cache"),
                         "--kubeconfig", str(kube.kubeconfig), "--agent-namespace", namespace,
                         "--allowed-namespaces", namespace)
    assert synced.returncode == 0, synced.stderr
    assert "was already applied; nothing to do" in synced.stderr
