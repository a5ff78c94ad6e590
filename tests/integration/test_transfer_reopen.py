"""A primary that refuses the agent's zone transfer because the zone's allow-transfer lists another
address - written while another replica of the agent led, from another pod - gets the agent's address
in that allow-transfer, and the zone is read, planned and written in the same run.

Without it a new leader (or a restarted agent pod with a new address) could read no zone that has
secondaries, in the default configuration (named.conf's allow-transfer is the key only, so every zone
carries a per-zone ACL of its secondaries' and the agent's addresses): every push to those zones
would stop there. Real named and the zone API. On loopback a connection to 127.0.0.10 comes from
127.0.0.10: that is the agent's address as each server sees it."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

import httpx
import pytest

from agent.clients import axfr
from agent.clients import endpoints as config
from agent.clients import rfc2136 as records
from agent.errors import TransferRefused
from tests.support import agentrun, dnsrepo
from tests.support import bind as bind_support


def test_a_refused_transfer_reopens_the_zone_and_the_push_is_served(
        tmp_path: pathlib.Path, bind: bind_support.BindPair, zone_api: Any) -> None:
    sample, tag = dnsrepo.unique_sample(tmp_path / "sample")
    path = dnsrepo.endpoint_map(tmp_path, bind, zone_api)
    endpoints = {k: dataclasses.replace(e, transfer_acl=(e.dns_host,)) for k, e in config.load_endpoints(path).items()}
    primary, secondary = endpoints["dns-system/dns-primary-0"], endpoints["dns-system/dns-secondary-0"]
    zone, www = f"example-{tag}.com.", f"www.example-{tag}.com."
    first = agentrun.sync_dir(sample, state=tmp_path / "state", endpoints=endpoints)
    assert first.outcome == "applied", (first.message, first.failures)

    # the zone's allow-transfer as another leader at another address left it: the secondary only
    api = zone_api["primary"]
    reply = httpx.patch(f"{api.url}/api/v1/zones/{zone.rstrip('.')}", json={"allowTransfer": [secondary.dns_host]},
                        headers={"Authorization": f"Bearer {api.token}"}, timeout=10)
    assert reply.status_code < 300, reply.text
    with pytest.raises(TransferRefused):
        axfr.read_zone(primary, zone)

    web = sample / "records" / "example-com" / "web.yaml"
    web.write_text(web.read_text().replace("    - 192.0.2.12\n", "    - 192.0.2.42\n"))
    run = agentrun.sync_dir(sample, state=tmp_path / "state", endpoints=endpoints)
    assert run.outcome == "applied", (run.outcome, run.message, run.failures)
    assert records.query(primary, www, "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.42")
    assert axfr.read_zone(primary, zone)  # the agent reads it again
    assert run.plan is not None and any("refused the agent's zone transfer" in (c.reason or "")
                                        for c in run.plan.changes)  # the plan said so
