"""Each DNSZone's status carries the hash of the RRsets Git wants and the InSync condition, against
a real kube-apiserver and named pair: after a sync every zone is served by both servers; a foreign
RRset put on the primary by hand where Git then wants one is drift the sync cannot repair (it never
overwrites data it did not write), and the zone says so, naming the primary; once the foreign RRset
is gone, the next sync serves Git's and the zone is in sync again. A managed RRset changed by hand
is written back by the sync, and the zone reads in sync with the same hash."""

from __future__ import annotations

from typing import Any

import dns.query
import dns.rcode
import dns.tsigkeyring
import dns.update
import pytest
from kubernetes import client

from agent.model import kinds
from tests.support import bind as bind_support
from tests.support import warmcold as wc
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster

pytestmark = pytest.mark.integration
MAIL = "records/example-com/mail.yaml"
HAND_TXT = '"put here by hand"'


def _zones(world: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every DNSZone's status as the cluster holds it, by name."""
    api = client.CustomObjectsApi(world["api"].client)
    found = api.list_namespaced_custom_object(kinds.GROUP, "v1beta1", world["namespace"], "dnszones")
    return {z["metadata"]["name"]: z.get("status") or {} for z in found["items"]}


def _in_sync(status: dict[str, Any]) -> dict[str, str]:
    return next(c for c in status.get("conditions") or [] if c["type"] == "InSync")


def _by_hand(bind: bind_support.BindPair, zone: str, change: Any) -> None:
    """An UPDATE on the primary signed with the servers' TSIG key, as a person with nsupdate would."""
    keyring = dns.tsigkeyring.from_text({bind_support.TSIG_NAME: ("hmac-sha256", bind.keys.tsig)})
    update = dns.update.UpdateMessage(zone, keyring=keyring, keyalgorithm="hmac-sha256")
    change(update)
    answer = dns.query.tcp(update, bind.primary.address, port=bind.primary.port, timeout=5)
    assert answer.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(answer.rcode())


def test_zones_say_whether_their_servers_serve_what_git_wants(
        tmp_path: Any, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any,
        kube: KubeCluster, namespace: str) -> None:
    world = wc.world_of(tmp_path, git_remote, bind, zone_api, kube, namespace)
    assert wc.run(world).outcome == "applied"
    zones = _zones(world)
    assert zones
    primary = f"{namespace}/dns-primary-0"
    for name, status in zones.items():
        cond = _in_sync(status)
        assert status["zoneHash"].startswith("sha256:"), name
        assert (cond["status"], cond["reason"]) == ("True", "Served"), (name, cond)
        assert cond["message"].endswith(f"servers serve {status['zoneHash']}")
    assert len({s["zoneHash"] for s in zones.values()}) == len(zones)
    com, before = f"example-{world['tag']}.com", zones["example-com"]["zoneHash"]

    # a managed RRset changed by hand: the sync writes Git's back, the hash is Git's, unchanged
    www = f"www.{com}."
    _by_hand(bind, com, lambda u: u.replace(www, 300, "A", "203.0.113.66"))
    repaired = wc.run(world, resync_after=0)  # the resync that reads every zone
    assert repaired.outcome == "applied", (repaired.failures, repaired.message)
    assert "203.0.113.66" not in wc.serves(world, www)[primary]
    assert _zones(world)["example-com"]["zoneHash"] == before
    assert _in_sync(_zones(world)["example-com"])["status"] == "True"

    # a foreign RRset where Git then wants one: a conflict, never overwritten - drift, named
    hand = f"hand.{com}."
    _by_hand(bind, com, lambda u: u.add(hand, 300, "TXT", HAND_TXT))
    wc.commit(world, {MAIL: world["files"][MAIL] + (
        f"---\napiVersion: bindy.firestoned.io/v1beta1\nkind: TXTRecord\nmetadata:\n"
        f"  name: hand\n  namespace: {namespace}\n  labels: {{zone: example-com}}\n"
        f"spec:\n  name: hand\n  text: [\"wanted by Git\"]\n")})
    conflicted = wc.run(world)
    assert conflicted.conflicts, (conflicted.outcome, conflicted.message)
    zones = _zones(world)
    drifted = _in_sync(zones["example-com"])
    assert zones["example-com"]["zoneHash"] != before  # Git wants one RRset more
    assert (drifted["status"], drifted["reason"]) == ("False", "Drifted"), drifted
    assert f"drifted: {primary} (1 RRset differs)" in drifted["message"], drifted
    assert zones["example-com"]["zoneHash"] in drifted["message"]
    assert all(_in_sync(s)["status"] == "True" for n, s in zones.items() if n != "example-com")

    # the foreign RRset removed by hand: the next sync writes Git's, the zone is in sync again
    _by_hand(bind, com, lambda u: u.delete(hand, "TXT"))
    again = wc.run(world, resync_after=0)
    assert not again.conflicts, (again.outcome, again.message)
    assert wc.serves(world, hand, "TXT")[primary] == ('"wanted by Git"',)
    back = _in_sync(_zones(world)["example-com"])
    assert (back["status"], back["reason"]) == ("True", "Served"), back
    assert wc.status_vs_cold(world) == {}


def test_a_secondary_behind_its_primary_is_named_until_it_catches_up(
        tmp_path: Any, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any,
        kube: KubeCluster, namespace: str) -> None:
    world = wc.world_of(tmp_path, git_remote, bind, zone_api, kube, namespace)
    assert wc.run(world).outcome == "applied"
    secondary = f"{namespace}/dns-secondary-0"
    bind.secondary.pause()  # stopped: it does not transfer the push
    try:
        wc.commit(world, {wc.WEB: world["files"][wc.WEB].replace("192.0.2.12", "192.0.2.49")})
        assert wc.run(world, verify_wait=1).outcome == "partial"
    finally:
        bind.secondary.resume()
    zones = _zones(world)
    behind = _in_sync(zones["example-com"])
    assert (behind["status"], behind["reason"]) == ("False", "Drifted"), behind
    assert behind["message"].startswith(f"1/2 servers serve {zones['example-com']['zoneHash']}")
    assert f"drifted: {secondary} (" in behind["message"], behind
    caught_up = wc.run(world)  # the retry: the secondary is asked again and serves the push
    assert caught_up.outcome == "applied", (caught_up.failures, caught_up.message)
    back = _in_sync(_zones(world)["example-com"])
    assert (back["status"], back["reason"]) == ("True", "Served"), back
