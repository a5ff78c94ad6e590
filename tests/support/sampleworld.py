"""The world of an integration test that syncs the bundled sample through Git: a copy of sample-repo
with zones of its own (tests share named), the Git remote it is pushed to, the real named pair's
endpoints, and the API client of the test's kube-apiserver."""

from __future__ import annotations

import pathlib
from typing import Any

from agent.clients import endpoints as config
from agent.clients.kubeapi import KubeApi
from agent.clients.statestore import ConfigMapStore
from agent.run import orchestrator
from agent.run.memory import ONE_SHOT, Memory
from agent.sources.git import GitSource
from tests.support import agentrun, dnsrepo
from tests.support import bind as bind_support
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster


def sample_world(tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any,
                 kube: KubeCluster, namespace: str, *, push: bool = True) -> dict[str, Any]:
    """remote, files (path -> text), tag (the zones' id), endpoints, api, bind, namespace, cache (the
    agent's clone); `push`: the sample is committed and pushed as the remote's first commit."""
    sample, tag = dnsrepo.unique_sample(tmp_path / "sample", namespace)
    files = {str(p.relative_to(sample)): p.read_text() for p in sample.rglob("*.yaml")}
    endpoints = config.load_endpoints(dnsrepo.endpoint_map(tmp_path, bind, zone_api, namespace))
    if push:
        git_remote.commit("Initial DNS", files)
        git_remote.push()
    return {"remote": git_remote, "files": files, "tag": tag, "endpoints": endpoints,
            "api": KubeApi.from_kubeconfig(str(kube.kubeconfig)), "bind": bind, "namespace": namespace,
            "cache": tmp_path / "cache"}


def run(world: dict[str, Any], memory: Memory = ONE_SHOT, **kwargs: Any) -> orchestrator.RunOutcome:
    """One run of the world's revision through Git, its state in a ConfigMap (as `bindy-agent run`
    keeps it), with `memory` (a long-running agent's) and the run's options as `kwargs`."""
    api: KubeApi = world["api"]
    return agentrun.sync_git(GitSource(world["remote"].url, world["cache"]), store=ConfigMapStore(
        api, world["namespace"]), kube_api=api, endpoints=world["endpoints"], agent_namespace=world["namespace"],
        memory=memory, **kwargs)
