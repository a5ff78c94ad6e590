"""Statuses a long-running agent leaves read as a cold agent's would, after every run: a status an
earlier run left failed, not served yet or marked rejected goes back to Ready on the first run after
its cause is gone, whatever that run changes (Memory.unsettled), and a zone's new placement shows on
every record of it. Each case ends comparing the cluster's conditions with those a cold run writes.
(Each of these failed before: they waited for the next resync.)"""

from __future__ import annotations

import time
from typing import Any

import pytest

from agent.clients.statestore import ConfigMapStore
from agent.gate import safety
from agent.run import follow, memorize, revisions
from agent.run.memory import Memory
from agent.run.planner import Targets
from agent.sources.git import GitSource
from tests.support import agentrun, dnsworld
from tests.support import bind as bind_support
from tests.support import warmcold as wc
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster

pytestmark = pytest.mark.integration
NO_DELETES = safety.Policy(delete_threshold=0.0, min_managed=1)
PRUNE = safety.Policy(force=True, allow_prune=True)


def _failed(world: dict[str, Any]) -> list[str]:
    return sorted(k for k, v in wc.statuses(world).items() if any(c[2] == "RecordFailed" for c in v))


def test_records_a_partial_run_marked_failed_read_ready_after_the_next_push_elsewhere(
        tmp_path: Any, git_remote: GitRemote, own_dns: dnsworld.Dns, kube: KubeCluster, namespace: str) -> None:
    world = wc.world_of(tmp_path, git_remote, own_dns.pair, own_dns.apis, kube, namespace)
    assert wc.run(world).outcome == "applied"
    own_dns.pair.primary.kill()  # the primary is down while a push to example.com is applied
    try:
        wc.commit(world, {wc.WEB: world["files"][wc.WEB].replace("192.0.2.12", "192.0.2.42")})
        assert wc.run(world, verify_wait=1).outcome == "partial"
    finally:
        own_dns.pair.primary.restart()
    assert len(_failed(world)) > 1  # the zone failed: every record of it says so
    wc.commit(world, {wc.SITE: world["files"][wc.SITE].replace("198.51.100.80", "198.51.100.81")})
    push = wc.run(world)  # a push to example.org; example.com is planned again and served
    assert push.outcome == "applied", (push.failures, push.message)
    assert _failed(world) == []
    assert wc.cold_plan(world) == []
    assert wc.status_vs_cold(world) == {}


@pytest.mark.parametrize("then", ["retry", "push elsewhere"])
def test_a_record_a_lagging_secondary_did_not_serve_reads_ready_once_it_does(
        tmp_path: Any, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any,
        kube: KubeCluster, namespace: str, then: str) -> None:
    world = wc.world_of(tmp_path, git_remote, bind, zone_api, kube, namespace)
    assert wc.run(world).outcome == "applied"
    bind.secondary.pause()
    try:
        wc.commit(world, {wc.WEB: world["files"][wc.WEB].replace("192.0.2.12", "192.0.2.48")})
        assert wc.run(world, verify_wait=1).outcome == "partial"
    finally:
        bind.secondary.resume()
    assert _failed(world)  # "not served yet by" the secondary
    if then == "push elsewhere":
        wc.commit(world, {wc.SITE: world["files"][wc.SITE].replace("198.51.100.80", "198.51.100.82")})
    caught_up = wc.run(world)
    assert caught_up.outcome == "applied", (caught_up.failures, caught_up.message)
    for served in wc.serves(world, f"www.example-{world['tag']}.com.").values():
        assert served == ("192.0.2.10", "192.0.2.11", "192.0.2.48")
    assert _failed(world) == []
    assert wc.status_vs_cold(world) == {}


@pytest.mark.parametrize("bad", ["invalid", "refused"])
def test_the_marks_of_a_rejected_push_are_cleared_by_the_next_good_push(
        tmp_path: Any, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any,
        kube: KubeCluster, namespace: str, bad: str) -> None:
    world = wc.world_of(tmp_path, git_remote, bind, zone_api, kube, namespace)
    web = world["files"][wc.WEB]
    assert wc.run(world, policy=NO_DELETES).outcome == "applied"
    wc.commit(world, {wc.WEB: web.replace("192.0.2.12", "192.0.2.999") if bad == "invalid"
                      else wc.docs_without(web, "www")})  # a deletion the policy refuses
    assert wc.run(world, policy=NO_DELETES).outcome == "rejected"

    def marked() -> list[str]:
        return sorted(k for k, v in wc.statuses(world).items() if ("Progressing", "False") in [c[:2] for c in v])

    assert len(marked()) > 10
    wc.commit(world, {wc.WEB: web, wc.SITE: world["files"][wc.SITE].replace("198.51.100.80", "198.51.100.83")})
    good = wc.run(world, policy=NO_DELETES)
    assert good.outcome == "applied", (good.outcome, good.failures, good.message)
    assert marked() == []
    assert wc.status_vs_cold(world, policy=NO_DELETES) == {}


def test_a_standby_that_takes_over_rewrites_the_statuses_the_old_leader_left(
        tmp_path: Any, git_remote: GitRemote, own_dns: dnsworld.Dns, kube: KubeCluster, namespace: str) -> None:
    world = wc.world_of(tmp_path, git_remote, own_dns.pair, own_dns.apis, kube, namespace)
    store = ConfigMapStore(world["api"], namespace)
    source = GitSource(world["remote"].url, tmp_path / "standby-cache")
    targets = Targets(store, world["api"], world["endpoints"])
    options, standby = agentrun.options(agent_namespace=namespace), Memory()
    assert wc.run(world).outcome == "applied"
    own_dns.pair.primary.kill()  # the leader's DNS write fails: its records say RecordFailed
    try:
        wc.commit(world, {wc.WEB: world["files"][wc.WEB].replace("192.0.2.12", "192.0.2.42")})
        assert wc.run(world, verify_wait=1).outcome == "partial"
    finally:
        own_dns.pair.primary.restart()
    time.sleep(2.5)  # the standby follows after the leader's last run: its list of the cluster is trusted
    assert not follow.follow(revisions.GitRevisions(source), targets, options, standby).problem
    memorize.take_over(standby, applied_at=store.load_run().wrote_at)  # the leader dies (agent/run/agent.py)
    store.load_zones(refresh=True)
    first = agentrun.sync_git(source, store=store, kube_api=world["api"], endpoints=world["endpoints"],
                              agent_namespace=namespace, memory=standby)
    assert first.outcome == "applied", (first.failures, first.message)
    assert _failed(world) == []
    assert wc.status_vs_cold(world) == {}


@pytest.mark.parametrize("values", ["[primary]", "[nowhere]"])
def test_a_zone_placed_elsewhere_shows_on_every_record_of_it(
        tmp_path: Any, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any,
        kube: KubeCluster, namespace: str, values: str) -> None:
    """Moved off the secondary, every record says one endpoint; on no server, the zone and its records
    are not Ready (a cold run said Ready, "configured on 0 endpoint(s)")."""
    world = wc.world_of(tmp_path, git_remote, bind, zone_api, kube, namespace)
    assert wc.run(world).outcome == "applied"
    zone = world["files"][wc.ORG_ZONE]
    assert "values: [primary, secondary]" in zone
    wc.commit(world, {wc.ORG_ZONE: zone.replace("values: [primary, secondary]", f"values: {values}")})
    assert wc.run(world, policy=PRUNE).outcome == "applied"
    got = wc.statuses(world)
    ready = {k: next(c for c in got[k] if c[0] == "Ready") for k in ("DNSZone/example-org", "ARecord/org-www")}
    if values == "[primary]":
        assert ready["ARecord/org-www"][1:] == ("True", "ReconcileSucceeded", "Record configured on 1 endpoint(s)")
    else:
        assert all(c[1] == "False" for c in ready.values()), ready
    assert wc.cold_plan(world, policy=PRUNE) == []
    assert wc.status_vs_cold(world, policy=PRUNE) == {}
