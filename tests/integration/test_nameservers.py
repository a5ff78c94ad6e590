"""Issue 26, name servers, on real named (primary + secondary) through the zone API: a zone's apex NS
and its A and AAAA glue follow the DNSZone's `nameServers` after the zone was created, and a hand
edit of the glue is repaired. Read back by AXFR of both servers."""

from __future__ import annotations

import pathlib
import time
from typing import Any

import pytest

from agent.clients import endpoints as config
from tests.support import agentrun, dnsworld
from tests.support import bind as bind_support

pytestmark = pytest.mark.integration


def _write(repo: pathlib.Path, zone: str, rev: dnsworld.Revision, name_servers: str) -> None:
    """The revision, with `nameServers` (YAML list items) on the zone's DNSZone."""
    dnsworld.write_repo(repo, rev)
    path = repo / f"zone-{zone}.yaml"
    text = path.read_text()
    path.write_text(text.replace(dnsworld.SOA, dnsworld.SOA + "  nameServers:\n" + name_servers, 1))


def _apex(world: dnsworld.Dns, server: bind_support.BindServer, zone: str) -> dict[tuple[str, str], tuple[str, ...]]:
    """The apex NS and every A/AAAA at a name server's name, as `server` serves them."""
    served = world.axfr(server, zone) or {}
    hosts = set(served.get((f"{zone}.", "NS"), (0, ()))[1])
    return {(name, rtype): values for (name, rtype), (_, values) in served.items()
            if (name, rtype) == (f"{zone}.", "NS") or (rtype in ("A", "AAAA") and name in hosts)}


def _both_serve(world: dnsworld.Dns, zone: str, want: dict[tuple[str, str], tuple[str, ...]]) -> None:
    deadline = time.monotonic() + 20
    while True:
        seen = [_apex(world, s, zone) for s in world.servers]
        if all(s == want for s in seen) or time.monotonic() > deadline:
            break
        time.sleep(0.2)  # the secondary transfers after the primary's NOTIFY
    assert seen == [want, want]


def test_name_server_edits_after_creation_and_hand_edited_glue_reach_primary_and_secondary(
        tmp_path: pathlib.Path, bind: bind_support.BindPair, zone_api: Any) -> None:
    world = dnsworld.Dns(bind, zone_api, dnsworld.endpoint_map(tmp_path / "endpoints", bind, zone_api))
    endpoints = config.load_endpoints(world.endpoints)
    (zone,) = dnsworld.zone_names(1)
    repo, state = tmp_path / "repo", tmp_path / "state"
    rev = dnsworld.revision([zone], 3)

    def sync() -> None:
        run = agentrun.sync_dir(repo, state=state, endpoints=endpoints)
        assert run.outcome == "applied", (run.outcome, run.message, run.refusals, run.failures,
                                          [str(p) for p in run.problems])

    # created with one name server inside the zone (A glue) and one outside
    _write(repo, zone, rev, f"    - {{hostname: ns1.{zone}., ipv4Address: 192.0.2.1}}\n"
                            "    - {hostname: ns2.example.net.}\n")
    sync()
    _both_serve(world, zone, {(f"{zone}.", "NS"): (f"ns1.{zone}.", "ns2.example.net."),
                              (f"ns1.{zone}.", "A"): ("192.0.2.1",)})

    # a new commit: one name server added, an ipv4Address changed, an ipv6Address added
    _write(repo, zone, rev, f"    - {{hostname: ns1.{zone}., ipv4Address: 192.0.2.11, ipv6Address: '2001:db8::1'}}\n"
                            "    - {hostname: ns2.example.net.}\n"
                            f"    - {{hostname: ns3.{zone}., ipv4Address: 192.0.2.3}}\n")
    sync()
    want = {(f"{zone}.", "NS"): (f"ns1.{zone}.", "ns2.example.net.", f"ns3.{zone}."),
            (f"ns1.{zone}.", "A"): ("192.0.2.11",), (f"ns1.{zone}.", "AAAA"): ("2001:db8::1",),
            (f"ns3.{zone}.", "A"): ("192.0.2.3",)}
    _both_serve(world, zone, want)

    # someone edits the glue and the apex NS by hand: the next run puts back what the DNSZone says
    def hand_edit(u: Any) -> None:
        u.replace(f"ns1.{zone}.", 300, "A", "203.0.113.9")
        u.delete(f"ns3.{zone}.", "A")
        u.add(f"ns3.{zone}.", 300, "A", "203.0.113.3")
        u.delete(f"{zone}.", "NS", "ns2.example.net.")
    world.update(zone, hand_edit)
    assert _apex(world, world.pair.primary, zone)[(f"ns1.{zone}.", "A")] == ("203.0.113.9",)
    sync()
    _both_serve(world, zone, want)
