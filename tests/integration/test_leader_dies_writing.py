"""Issue 28, a warm standby: a leader that dies after its Kubernetes writes but before its run's end is
saved. The standby listed the cluster after the leader's last saved run, so by `reconciled_at` alone
its list looked current - and a push that reverts what the dead leader wrote was planned against that
list as "nothing to change": the object kept the dead leader's write until the next resync.

The leader now saves a writing mark (RunState.writing_at) before its first write; while it is set
(a run writes, or died writing) no list of the cluster is trusted. Real kube-apiserver, named pair and
Git; the leader and the standby run in this process (the crash is an exception at the state save)."""

from __future__ import annotations

import dataclasses
import pathlib
import time
import uuid
from typing import Any

import pytest

from agent.clients.statestore import ConfigMapStore
from agent.model.ownership import RunState
from agent.run import follow, memorize, planner, revisions
from agent.run.memory import CLOCK_SKEW, Memory
from agent.sources.git import GitSource
from tests.support import agentrun, sampleworld
from tests.support import bind as bind_support
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster

pytestmark = pytest.mark.integration
CLUSTER = "infrastructure/cluster.yaml"
EDGE = "  primary:\n    replicas: 1\n    labels:\n      tier: edge\n"
CORE = EDGE.replace("tier: edge", "tier: core")


class Crash(BaseException):
    """The leader's process ends here (SIGKILL, OOM, node loss): nothing after it runs."""


class DiesBeforeSaving(ConfigMapStore):
    """The leader's store: the save of the run's end for `revision` never happens."""

    def __init__(self, api: Any, namespace: str, revision: str) -> None:
        super().__init__(api, namespace)
        self.revision = revision

    def save_run(self, state: RunState) -> None:
        if state.seen == self.revision:
            raise Crash(f"killed before saving the end of its run of {self.revision[:12]}")
        super().save_run(state)


def test_a_leader_dying_between_its_writes_and_its_state_save_leaves_no_stale_list_trusted(
        tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any,
        kube: KubeCluster, namespace: str) -> None:
    world = sampleworld.sample_world(tmp_path, git_remote, bind, zone_api, kube, namespace)
    api = world["api"]

    def tier() -> str:
        instance = api.get("Bind9Instance", namespace, "dns-primary-0")
        return str(((instance or {}).get("metadata") or {}).get("labels", {}).get("tier"))

    assert sampleworld.run(world, Memory()).outcome == "applied"
    assert tier() == "edge"

    # the standby follows a while after the leader's run was saved (beyond the clock margin): its list of
    # the cluster is newer than the leader's last saved run
    time.sleep(CLOCK_SKEW + 0.5)
    standby = Memory()
    targets = planner.Targets(ConfigMapStore(api, namespace), api, world["endpoints"])
    source = revisions.GitRevisions(GitSource(git_remote.url, tmp_path / "standby-cache"))
    options = agentrun.options(agent_namespace=namespace)
    assert not follow.follow(source, targets, options, standby).problem

    # the leader applies a change, and dies after writing it, before saving its run's end
    cluster = world["files"][CLUSTER]
    assert EDGE in cluster
    changed = git_remote.commit("primary tier: core", {CLUSTER: cluster.replace(EDGE, CORE)})
    git_remote.push()
    with pytest.raises(Crash):
        agentrun.sync_git(GitSource(git_remote.url, world["cache"]), store=DiesBeforeSaving(api, namespace, changed),
                          kube_api=api, endpoints=world["endpoints"], agent_namespace=namespace, memory=Memory())
    assert tier() == "core"  # written: the crash came after the Kubernetes writes
    state = ConfigMapStore(api, namespace).load_run()
    assert state.seen != changed and state.writing_at > 0  # its end was never saved; its writing mark was

    # a push reverting it, then the standby takes over (as the scheduler does) and runs it
    git_remote.commit("primary tier: edge again", {CLUSTER: cluster})
    git_remote.push()
    memorize.take_over(standby, applied_at=state.wrote_at)
    result = agentrun.sync_git(GitSource(git_remote.url, tmp_path / "standby-cache"),
                               store=ConfigMapStore(api, namespace), kube_api=api, endpoints=world["endpoints"],
                               agent_namespace=namespace, memory=standby)
    assert result.outcome == "applied", result.message
    assert tier() == "edge"  # the revert reached the cluster: the standby did not trust its list
    after = ConfigMapStore(api, namespace).load_run()
    assert after.writing_at == 0 and after.reconciled_at > state.reconciled_at  # the mark is cleared, the time kept


def test_a_first_sync_that_creates_the_agents_namespace_is_not_stopped_by_its_writing_mark(
        tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any,
        kube: KubeCluster, namespace: str) -> None:
    """The mark goes into the state ConfigMap, in the agent's namespace; on a new cluster that namespace
    is created by the run itself (--create-namespaces), after the mark would be saved."""
    world = sampleworld.sample_world(tmp_path, git_remote, bind, zone_api, kube, namespace, push=False)
    api, agent_ns = world["api"], f"agent-{uuid.uuid4().hex[:8]}"
    repo = tmp_path / "sample"
    assert api.get("Namespace", None, agent_ns) is None
    saved: list[RunState] = []

    class Recording(ConfigMapStore):
        def save_run(self, state: RunState) -> None:
            super().save_run(state)
            saved.append(dataclasses.replace(state))

    result = agentrun.sync_dir(repo, store=Recording(api, agent_ns), kube_api=api, endpoints=world["endpoints"],
                               agent_namespace=agent_ns, create_namespaces=True)
    assert result.outcome == "applied", (result.message, result.errors)
    state = ConfigMapStore(api, agent_ns).load_run()
    assert state.outcome == "applied" and state.writing_at == 0 and state.reconciled_at > 0
    # the mark could not be saved before the namespace existed; it was at the run's next write (statuses)
    assert [s.writing_at > 0 for s in saved] == [True, False], saved
