"""A zone deleted by hand on a secondary reached through one address (the endpoints file's `dns`/`api`,
no `pods`) is put back by the next run that asks the zone's serial (every resync; a push asks the
zones it touches), as it already was for a secondary written pod by pod (before, every run,
cold or warm, planned nothing and ended "partial: does not answer the new SOA")."""

from __future__ import annotations

from typing import Any

import pytest

from agent.clients import rfc2136 as records
from tests.support import dnsworld
from tests.support import warmcold as wc
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster

pytestmark = pytest.mark.integration


def test_a_zone_deleted_on_a_single_address_secondary_is_put_back_by_the_resync(
        tmp_path: Any, git_remote: GitRemote, own_dns: dnsworld.Dns, kube: KubeCluster, namespace: str) -> None:
    world = wc.world_of(tmp_path, git_remote, own_dns.pair, own_dns.apis, kube, namespace)
    tag = world["tag"]
    secondary = world["endpoints"][f"{namespace}/dns-secondary-0"]
    assert not secondary.servers  # one address: not written pod by pod
    assert wc.run(world).outcome == "applied"
    own_dns.pair.secondary.rndc("delzone", f"example-{tag}.org")
    assert records.query(secondary, f"www.example-{tag}.org.", "A") == ()
    resync = wc.run(world, resync_after=0)
    assert resync.outcome == "applied", (resync.outcome, resync.failures, resync.message)
    assert any("example-" in line and "secondary" in line for line in wc.lines(resync)), wc.lines(resync)
    assert records.query(secondary, f"www.example-{tag}.org.", "A") == ("198.51.100.80",)
    assert wc.cold_plan(world) == []
