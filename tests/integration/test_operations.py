"""Operations users expect: suspend and resume the agent, detect drift without writing, and one
status object that shows the agent's last revision and outcome."""

from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import Any

from kubernetes import client

from agent.reconcile import endpoints as config
from agent.reconcile import rfc2136 as records
from agent.reconcile.kubeapi import KubeApi
from agent.reconcile.statestore import ConfigMapStore
from agent.sources.git import GitSource
from tests.conftest import ROOT
from tests.support import agentrun, dnsrepo
from tests.support import bind as bind_support
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster

WEB = "records/example-com/web.yaml"


def test_suspend_detect_and_the_status_object(tmp_path: pathlib.Path, git_remote: GitRemote, kube: KubeCluster,
                                              namespace: str, bind: bind_support.BindPair, zone_api: Any) -> None:
    sample, tag = dnsrepo.unique_sample(tmp_path / "sample", namespace)
    files = {str(p.relative_to(sample)): p.read_text() for p in sample.rglob("*.yaml")}
    endpoints = config.load_endpoints(dnsrepo.endpoint_map(tmp_path, bind, zone_api, namespace))
    primary = endpoints[f"{namespace}/dns-primary-0"]

    def run(**kwargs: Any) -> Any:
        api = KubeApi.from_kubeconfig(str(kube.kubeconfig))
        return api, agentrun.sync_git(GitSource(git_remote.url, tmp_path / "cache"),
                                      store=ConfigMapStore(api, namespace), kube_api=api, endpoints=endpoints,
                                      agent_namespace=namespace, **kwargs)

    sha = git_remote.commit("Initial DNS", files)
    git_remote.push()
    assert run()[1].outcome == "applied"
    core = client.CoreV1Api(kube.api_client())
    shown = core.read_namespaced_config_map("bindy-agent-state", namespace).data
    assert (shown["revision"], shown["outcome"], shown["message"]) == (sha, "applied", f"applied {sha[:12]}")

    def cli(verb: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "agent", verb, "--kubeconfig", str(kube.kubeconfig),
                               "--agent-namespace", namespace], capture_output=True, text=True, cwd=ROOT)

    assert cli("suspend").returncode == 0
    git_remote.commit("New front end", {WEB: files[WEB].replace("192.0.2.12", "192.0.2.52")})
    git_remote.push()
    api, suspended = run()
    assert (suspended.outcome, api.write_count) == ("suspended", 0)
    assert records.query(primary, f"www.example-{tag}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.12")
    assert cli("resume").returncode == 0

    # detect mode: the new commit is drift; nothing is written but the agent's own status
    api, detected = run(mode="detect")
    assert detected.outcome == "drift" and detected.message.startswith("drift: 0 to create, 2 to update")
    assert set(api.writes) <= {"PATCH"} and api.write_count == 1
    assert records.query(primary, f"www.example-{tag}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.12")
    assert core.read_namespaced_config_map("bindy-agent-state", namespace).data["outcome"] == "drift"

    assert run()[1].outcome == "applied"
    assert run(mode="detect")[1].outcome == "in-sync"
    assert records.query(primary, f"www.example-{tag}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.52")
