"""While an instance's pods are not all ready, a tick with an unchanged head looks again (issue 25).

Without a kubelet no pod of the generated Deployments ever becomes ready: the first sync of a commit
leaves its instances NotReady. A later tick of the same head must not end as "unchanged" (that would
leave the statuses saying what the first run saw until the resync, 10 minutes later): it reconciles
again, so a pod that started failing or became ready since is what the status says."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from agent.clients.kubeapi import KubeApi
from agent.clients.statestore import ConfigMapStore
from agent.sources.git import GitSource
from tests.support import agentrun, dnsrepo
from tests.support.gitremote import GitRemote

pytestmark = pytest.mark.integration


def test_a_tick_of_an_unchanged_head_looks_again_while_pods_are_not_ready(
        tmp_path: pathlib.Path, git_remote: GitRemote, kube_client: Any, namespace: str) -> None:
    root, _ = dnsrepo.unique_sample(tmp_path / "repo", namespace=namespace)
    git_remote.commit("DNS", {str(p.relative_to(root)): p.read_text() for p in root.rglob("*.yaml")})
    git_remote.push()
    api = KubeApi(kube_client)
    store = ConfigMapStore(api, namespace)

    def tick() -> Any:
        return agentrun.sync_git(GitSource(git_remote.url, tmp_path / "cache"), store=store, kube_api=api,
                                 agent_namespace=namespace)

    first = tick()
    assert first.outcome == "applied", first.message
    assert first.unready > 0  # no kubelet: the instances' pods never become ready
    assert store.load_run().unready
    again = tick()
    assert again.outcome != "unchanged", again.message  # looked at the world again
    assert again.kube is not None and again.unready > 0
