"""Issue 28, a push at 100,000 records: a new leader's first push costs what the push changed. The
standby follows read-only, takes over, reconciles once; then a one-record push: its plan holds that
record's change alone, and it writes the statuses the push changed - the record's, its zone's (whose
lastAppliedRevision moves) and the cluster's - and no other record's (in Bindy's 100,000-record
cluster, each would be a write). The same holds for the leader's next push.

In process, with a real kube-apiserver and named pair (tests/support/sampleworld.py); the two
replicas are two memories and two clones, as two `bindy-agent run` processes would keep them."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from agent.clients import rfc2136 as records
from agent.clients.statestore import ConfigMapStore
from agent.model import kinds
from agent.model.key import ObjectKey
from agent.run import follow, memorize, planner, revisions
from agent.run.memory import Memory
from agent.sources.git import GitSource
from tests.support import agentrun, sampleworld
from tests.support import bind as bind_support
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster

pytestmark = pytest.mark.integration
WEB = "records/example-com/web.yaml"
RECORD_KINDS = {k.name for k in kinds.RECORD_KINDS}


def test_a_new_leaders_first_push_writes_the_statuses_it_changed_and_no_other_records(
        tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any,
        kube: KubeCluster, namespace: str) -> None:
    world = sampleworld.sample_world(tmp_path, git_remote, bind, zone_api, kube, namespace)
    api = world["api"]
    assert sampleworld.run(world, Memory()).outcome == "applied"  # the old leader applied the revision

    standby, memory = {**world, "cache": tmp_path / "cache-b"}, Memory()
    store = ConfigMapStore(api, namespace)
    targets = planner.Targets(store, api, world["endpoints"])
    followed = follow.follow(revisions.GitRevisions(GitSource(world["remote"].url, standby["cache"])), targets,
                             agentrun.options(agent_namespace=namespace), memory)
    assert not followed.problem and followed.zones
    memorize.take_over(memory, applied_at=store.load_run().wrote_at)  # the old leader died: this replica leads
    assert sampleworld.run(standby, memory).outcome == "applied"  # its leadership run
    memorize.run_ended(memory, "leadership", "applied")  # the agent's worker, after the run (agent/run/agent.py)

    www, zone = ObjectKey("ARecord", namespace, "www"), ObjectKey("DNSZone", namespace, "example-com")
    cluster = ObjectKey("Bind9Cluster", namespace, "dns")
    for value in ("192.0.2.42", "192.0.2.43"):  # the new leader's first push, then its next one
        text = world["files"][WEB].replace("    - 192.0.2.12\n", f"    - {value}\n", 1)
        git_remote.commit(f"www -> {value}", {WEB: text})
        git_remote.push()
        pushed = sampleworld.run(standby, memory)
        assert pushed.outcome == "applied", pushed.message
        assert pushed.plan is not None and [(c.action.value, c.target.name) for c in pushed.plan.changes
                                            if c.target.layer == "kubernetes"] == [("update", "www")]
        assert pushed.kube is not None
        written = set(pushed.kube.statuses_written)
        assert {www, zone, cluster} <= written
        assert {k for k in written if k.kind in RECORD_KINDS} == {www}  # no other record's status
        shown = api.get("ARecord", namespace, "www")["status"]
        assert value in shown["addresses"] and shown["observedGeneration"] == api.get(
            "ARecord", namespace, "www")["metadata"]["generation"]
        assert api.get("DNSZone", namespace, "example-com")["status"]["lastAppliedRevision"] == pushed.revision
        primary = next(e for k, e in world["endpoints"].items() if k.endswith("dns-primary-0"))
        assert value in (records.query(primary, f"www.example-{world['tag']}.com.", "A") or ())
