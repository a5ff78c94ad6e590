"""While the newest commit is rejected, the revision that serves is still reconciled at every resync:
drift made on a server after the rejection is repaired as it would be with a good head (before, it
stayed through resyncs and restarts until someone pushed a good commit)."""

from __future__ import annotations

from typing import Any

import dns.query
import dns.rcode
import dns.tsigkeyring
import dns.update
import pytest

from agent.clients import rfc2136 as records
from agent.outcome import notify
from agent.run.memory import Memory
from tests.support import bind as bind_support
from tests.support import warmcold as wc
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster

pytestmark = pytest.mark.integration


def _drift(bind: bind_support.BindPair, zone: str, name: str, value: str) -> None:
    """A record changed on the primary behind the agent's back."""
    keyring = dns.tsigkeyring.from_text({bind_support.TSIG_NAME: ("hmac-sha256", bind.keys.tsig)})
    update = dns.update.UpdateMessage(zone, keyring=keyring, keyalgorithm="hmac-sha256")
    update.replace(name, 300, "A", value)
    assert dns.query.tcp(update, bind.primary.address, port=bind.primary.port, timeout=5).rcode() == dns.rcode.NOERROR


@pytest.mark.parametrize("agent", ["the same agent", "a restarted agent"])
def test_drift_is_repaired_at_the_resync_while_the_head_is_rejected(
        tmp_path: Any, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any,
        kube: KubeCluster, namespace: str, agent: str, monkeypatch: pytest.MonkeyPatch) -> None:
    alerts: list[str | None] = []
    monkeypatch.setattr(notify, "after_run", lambda settings, doc, previous, *, previous_revision=None: alerts.append(
        notify.event(doc, previous, previous_revision)))
    world = wc.world_of(tmp_path, git_remote, bind, zone_api, kube, namespace)
    tag, web = world["tag"], world["files"][wc.WEB]
    primary = world["endpoints"][f"{namespace}/dns-primary-0"]
    assert wc.run(world).outcome == "applied"
    served = wc.run(world).revision
    bad = wc.commit(world, {wc.WEB: web.replace("192.0.2.12", "192.0.2.999")})  # invalid: rejected
    assert wc.run(world).outcome == "rejected"
    _drift(bind, f"example-{tag}.org", "www", "203.0.113.9")
    assert wc.run(world).outcome == "unchanged"  # before the resync: the rejected head is not looked at again
    assert records.query(primary, f"www.example-{tag}.org.", "A") == ("203.0.113.9",)
    memory = Memory() if agent == "a restarted agent" else None
    repair = wc.run(world, memory, resync_after=0)
    assert repair.revision == served and repair.outcome == "applied", (repair.outcome, repair.message)
    assert alerts[-1] == "refusal"  # the rejection's alert, and no "recovery" while the head stays rejected
    assert records.query(primary, f"www.example-{tag}.org.", "A") == ("198.51.100.80",)
    state = wc.statuses(world)  # the head's rejection still shows: a good commit is still needed
    assert ("Progressing", "False") in [c[:2] for c in state["DNSZone/example-org"]], state["DNSZone/example-org"]
    assert bad != served
