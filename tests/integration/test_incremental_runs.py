"""A long-running agent's runs cost what changed: a one-record commit asks only the zones it touches,
transfers none whose serial did not move, writes a handful of Kubernetes objects, and is served;
drift is still found - in DNS when the resync asks every zone's serial, in the cluster at the next
full observe."""

from __future__ import annotations

import pathlib
from typing import Any

import dns.query
import dns.rcode
import dns.tsigkeyring
import dns.update
import pytest
from kubernetes import client

from agent.clients import rfc2136 as records
from agent.run import orchestrator
from agent.run.memory import Memory
from tests.support import bind as bind_support
from tests.support import sampleworld
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster

WEB = "records/example-com/web.yaml"


@pytest.fixture
def world(tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any,
          kube: KubeCluster, namespace: str) -> dict[str, Any]:
    return {**sampleworld.sample_world(tmp_path, git_remote, bind, zone_api, kube, namespace, push=False), "memory": Memory()}


def _run(world: dict[str, Any], **kwargs: Any) -> orchestrator.RunOutcome:
    return sampleworld.run(world, world["memory"], **kwargs)


def _commit(world: dict[str, Any], text: str) -> str:
    sha = world["remote"].commit("change", {WEB: text})
    world["remote"].push()
    return sha


def _out_of_band(bind: bind_support.BindPair, zone: str, name: str, value: str) -> None:
    keyring = dns.tsigkeyring.from_text({bind_support.TSIG_NAME: ("hmac-sha256", bind.keys.tsig)})
    update = dns.update.UpdateMessage(zone, keyring=keyring, keyalgorithm="hmac-sha256")
    update.replace(name, 300, "A", value)
    assert dns.query.tcp(update, bind.primary.address, port=bind.primary.port, timeout=5).rcode() == dns.rcode.NOERROR


def _transferred(run: orchestrator.RunOutcome) -> list[str]:
    assert run.plan is not None and run.plan.zones is not None
    return sorted(zp.name for zp in run.plan.zones for seen in zp.observed.values() if not seen.remembered)


def test_a_one_record_commit_costs_one_zone_and_a_handful_of_writes(world: dict[str, Any]) -> None:
    tag, api, primary = world["tag"], world["api"], world["endpoints"][f"{world['namespace']}/dns-primary-0"]
    world["remote"].commit("Initial DNS", world["files"])
    world["remote"].push()
    first = _run(world)
    assert first.outcome == "applied", (first.failures, first.message)
    assert len(_transferred(first)) == 3  # nothing is remembered yet: every zone is read

    writes = api.write_count
    _commit(world, world["files"][WEB].replace("192.0.2.12", "192.0.2.42"))
    second = _run(world)
    assert second.outcome == "applied", (second.failures, second.message)
    # no serial moved since the agent last wrote: the zone is planned on what it knows the server holds
    # (its UPDATE carries prerequisites in case that is wrong)
    assert _transferred(second) == []
    assert api.write_count - writes <= 10, dict(api.writes)
    for server in world["endpoints"].values():
        assert records.query(server, f"www.example-{tag}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.42")

    # someone changes a managed record of another zone by hand: a push costs the zones it touches, so
    # the next push does not even ask that zone's serial; the next resync does, reads it and repairs it
    _out_of_band(world["bind"], f"example-{tag}.org", "www", "203.0.113.9")
    _commit(world, world["files"][WEB].replace("192.0.2.12", "192.0.2.43"))
    third = _run(world)
    assert third.outcome == "applied", (third.failures, third.message)
    assert _transferred(third) == []
    assert third.plan is not None and third.plan.zones is not None
    assert [c for zp in third.plan.zones for c in zp.rrset_changes if zp.name != f"example-{tag}.com."] == []
    assert records.query(primary, f"www.example-{tag}.org.", "A") == ("203.0.113.9",)
    _commit(world, world["files"][WEB].replace("192.0.2.12", "192.0.2.47"))
    resync = _run(world, resync_after=0)
    assert resync.outcome == "applied", (resync.failures, resync.message)
    assert _transferred(resync) == [f"example-{tag}.org."]
    assert records.query(primary, f"www.example-{tag}.org.", "A") == ("198.51.100.80",)  # Git's, repaired
    assert records.query(primary, f"www.example-{tag}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.47")


def test_a_hand_edit_in_the_cluster_is_found_at_the_next_full_observe(world: dict[str, Any]) -> None:
    namespace = world["namespace"]
    world["remote"].commit("Initial DNS", world["files"])
    world["remote"].push()
    assert _run(world).outcome == "applied"
    core = client.CoreV1Api(world["api"].client)
    core.patch_namespaced_config_map("dns-primary-0-config", namespace, {"data": {"named.conf": "# hacked\n"}})

    _commit(world, world["files"][WEB].replace("192.0.2.12", "192.0.2.44"))
    remembered = _run(world)  # between full observes the cluster is remembered, not listed
    assert remembered.plan is not None and remembered.plan.kube is not None
    assert [str(c.key) for c in remembered.plan.kube] == [f"ARecord/{namespace}/www"]
    _commit(world, world["files"][WEB].replace("192.0.2.12", "192.0.2.45"))
    full = _run(world, resync_after=0)  # a full observe compares every field and restores the edit
    assert full.plan is not None and full.plan.kube is not None
    restored = [c for c in full.plan.kube if c.key.kind == "ConfigMap"]
    assert [(str(c.key), c.drift) for c in restored] == [(f"ConfigMap/{namespace}/dns-primary-0-config", True)]
    assert "allow-new-zones yes;" in core.read_namespaced_config_map("dns-primary-0-config", namespace).data["named.conf"]


def test_a_restarted_agent_reconciles_at_once_and_its_first_push_costs_the_change(world: dict[str, Any]) -> None:
    tag, primary = world["tag"], world["endpoints"][f"{world['namespace']}/dns-primary-0"]
    world["remote"].commit("Initial DNS", world["files"])
    world["remote"].push()
    assert _run(world).outcome == "applied"
    assert _run(world).outcome == "unchanged"  # the same process: nothing new, nothing done

    _out_of_band(world["bind"], f"example-{tag}.org", "www", "203.0.113.9")  # while the agent is down
    world["memory"] = Memory()  # a new process remembers nothing
    start = _run(world)
    assert start.outcome == "applied", (start.failures, start.message)  # not "unchanged": it looked
    assert len(_transferred(start)) == 3
    assert records.query(primary, f"www.example-{tag}.org.", "A") == ("198.51.100.80",)  # Git's, repaired

    _commit(world, world["files"][WEB].replace("192.0.2.12", "192.0.2.46"))
    push = _run(world)
    assert push.outcome == "applied", (push.failures, push.message)
    assert _transferred(push) == []  # served from what the start-up run left in memory
    assert records.query(primary, f"www.example-{tag}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.46")


def test_a_zone_whose_secondary_was_behind_is_checked_again_by_the_next_run(world: dict[str, Any]) -> None:
    tag = world["tag"]
    world["remote"].commit("Initial DNS", world["files"])
    world["remote"].push()
    assert _run(world).outcome == "applied"
    secondary = world["endpoints"][f"{world['namespace']}/dns-secondary-0"]
    world["bind"].secondary.pause()  # the push is written to the primary; the secondary cannot take it
    try:
        _commit(world, world["files"][WEB].replace("192.0.2.12", "192.0.2.48"))
        behind = _run(world, verify_wait=1)
        assert behind.outcome == "partial", behind.message
        # the same revision again, nothing left to write: the zone is not taken as confirmed, so the
        # secondary is looked at again and is still behind
        again = _run(world, verify_wait=1)
        assert again.outcome == "partial", (again.failures, again.message)
        assert any(f"example-{tag}.com." in f and "does not answer" in f for f in again.failures)
    finally:
        world["bind"].secondary.resume()
    caught_up = _run(world)
    assert caught_up.outcome == "applied", (caught_up.failures, caught_up.message)
    assert records.query(secondary, f"www.example-{tag}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.48")
