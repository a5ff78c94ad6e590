"""A primary that refuses the agent's zone transfer even after the agent gave the zone's allow-transfer
its addresses (the transfers come from an address the agent does not know it has: a NAT, a proxy):
the run says what is wrong and how to fix it, once, instead of "it changed again", and does not count
it as something a retry fixes. Real named and the zone API."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

from agent.clients import endpoints as config
from tests.support import agentrun, dnsrepo
from tests.support import bind as bind_support


def test_a_transfer_still_refused_after_the_reopen_is_named_as_such(
        tmp_path: pathlib.Path, bind: bind_support.BindPair, zone_api: Any) -> None:
    sample, tag = dnsrepo.unique_sample(tmp_path / "sample")
    path = dnsrepo.endpoint_map(tmp_path, bind, zone_api)
    # the agent believes its address is 192.0.2.250; named sees its transfers come from loopback
    endpoints = {k: dataclasses.replace(e, transfer_acl=("192.0.2.250",))
                 for k, e in config.load_endpoints(path).items()}
    first = agentrun.sync_dir(sample, state=tmp_path / "state", endpoints=endpoints)
    assert first.outcome == "applied", (first.message, first.failures)

    web = sample / "records" / "example-com" / "web.yaml"
    web.write_text(web.read_text().replace("    - 192.0.2.12\n", "    - 192.0.2.42\n"))
    run = agentrun.sync_dir(sample, state=tmp_path / "state", endpoints=endpoints)
    assert run.outcome == "partial", (run.outcome, run.message)
    zone = f"example-{tag}.com."
    said = [f for f in run.failures if f.startswith(zone)]
    assert said and "still refuses the agent's zone transfer" in said[0] and "192.0.2.250" in said[0], run.failures
    assert not any("changed again" in f for f in run.failures), run.failures
    assert not run.retryable  # a retry meets the same refusal: the schedule, not the back-off
