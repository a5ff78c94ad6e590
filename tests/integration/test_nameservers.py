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


def _zone_with(repo: pathlib.Path, zone: str, rev: dnsworld.Revision, *, primary_ns: str, name_servers: str = "",
               name_server_ips: str = "") -> None:
    """The revision with the DNSZone's SOA primary name server, `nameServers` and `nameServerIps` given."""
    dnsworld.write_repo(repo, rev)
    path = repo / f"zone-{zone}.yaml"
    soa = dnsworld.SOA.replace("primaryNs: ns1.example.com.", f"primaryNs: {primary_ns}")
    extra = (f"  nameServers:\n{name_servers}" if name_servers else "") + (
        f"  nameServerIps:\n{name_server_ips}" if name_server_ips else "")
    path.write_text(path.read_text().replace(dnsworld.SOA, soa + extra, 1))


# (what the DNSZone says first, what it says next, the apex NS and glue served after): each a name-server
# change BIND checks after every UPDATE (a name server inside the zone needs an address; the apex NS is
# never emptied, and deleting it as a whole is ignored)
_NS_CHANGES = {
    "swap": (dict(primary_ns="ns1.{z}.", name_servers="    - {{hostname: ns1.{z}., ipv4Address: 192.0.2.1}}\n"),
             dict(primary_ns="ns2.{z}.", name_servers="    - {{hostname: ns2.{z}., ipv4Address: 192.0.2.2}}\n"),
             {("{z}.", "NS"): ("ns2.{z}.",), ("ns2.{z}.", "A"): ("192.0.2.2",)}),
    "add": (dict(primary_ns="ns1.{z}.", name_servers="    - {{hostname: ns1.{z}., ipv4Address: 192.0.2.1}}\n"),
            dict(primary_ns="ns1.{z}.", name_servers="    - {{hostname: ns1.{z}., ipv4Address: 192.0.2.1}}\n"
                                                     "    - {{hostname: ns2.{z}., ipv4Address: 192.0.2.2}}\n"),
            {("{z}.", "NS"): ("ns1.{z}.", "ns2.{z}."), ("ns1.{z}.", "A"): ("192.0.2.1",),
             ("ns2.{z}.", "A"): ("192.0.2.2",)}),
    "removal": (dict(primary_ns="ns1.{z}.", name_servers="    - {{hostname: ns1.{z}., ipv4Address: 192.0.2.1}}\n"
                                                         "    - {{hostname: ns2.{z}., ipv4Address: 192.0.2.2}}\n"),
                dict(primary_ns="ns1.{z}.", name_servers="    - {{hostname: ns1.{z}., ipv4Address: 192.0.2.1}}\n"),
                {("{z}.", "NS"): ("ns1.{z}.",), ("ns1.{z}.", "A"): ("192.0.2.1",)}),
    "only-one-moves-out": (dict(primary_ns="ns1.{z}.", name_server_ips="    ns1.{z}.: 192.0.2.1\n"),
                           dict(primary_ns="ns.example.net."),
                           {("{z}.", "NS"): ("ns.example.net.",)}),
}


@pytest.mark.parametrize("change", sorted(_NS_CHANGES))
def test_a_name_server_change_is_applied_whole_on_real_named(
        change: str, tmp_path: pathlib.Path, bind: bind_support.BindPair, zone_api: Any) -> None:
    """Swapping, adding or removing a zone's name servers (and moving its only one out of the zone) is
    applied by one sync: every UPDATE is one named accepts, the primary and the secondary serve the new
    apex NS and glue and nothing of the old, and the next sync has nothing to do."""
    world = dnsworld.Dns(bind, zone_api, dnsworld.endpoint_map(tmp_path / "endpoints", bind, zone_api))
    endpoints = config.load_endpoints(world.endpoints)
    (zone,) = dnsworld.zone_names(1)
    repo, state = tmp_path / "repo", tmp_path / "state"
    rev = dnsworld.revision([zone], 3)
    first, then, served = _NS_CHANGES[change]

    def sync() -> Any:
        run = agentrun.sync_dir(repo, state=state, endpoints=endpoints)
        assert run.outcome == "applied", (run.outcome, run.message, run.refusals, run.failures,
                                          [str(p) for p in run.problems])
        return run

    _zone_with(repo, zone, rev, **{k: v.format(z=zone) for k, v in first.items()})
    sync()
    _zone_with(repo, zone, rev, **{k: v.format(z=zone) for k, v in then.items()})
    sync()
    want = {(n.format(z=zone), t): tuple(v.format(z=zone) for v in values) for (n, t), values in served.items()}
    _both_serve(world, zone, want)
    for server in world.servers:  # the old name servers' glue is gone too, the SOA names the new primary
        held = world.axfr(server, zone) or {}
        assert {k for k in held if k[0].startswith("ns") and k[1] in ("A", "AAAA")} == {
            k for k in want if k[1] != "NS"}
        assert held[(f"{zone}.", "SOA")][1][0].split()[0] == then["primary_ns"].format(z=zone)
    again = sync()
    assert again.dns is None or not [c for z in again.dns.zones for c in z.changes]


def test_a_soa_record_edited_after_creation_reaches_the_servers_and_the_serial_moves_on(
        tmp_path: pathlib.Path, bind: bind_support.BindPair, zone_api: Any) -> None:
    """The zone API writes the SOA when it creates the zone; a later edit of `soaRecord` (mailbox,
    timers, primary name server) is one UPDATE of the SOA with the served serial plus one."""
    world = dnsworld.Dns(bind, zone_api, dnsworld.endpoint_map(tmp_path / "endpoints", bind, zone_api))
    endpoints = config.load_endpoints(world.endpoints)
    (zone,) = dnsworld.zone_names(1)
    repo, state = tmp_path / "repo", tmp_path / "state"
    rev = dnsworld.revision([zone], 3)
    dnsworld.write_repo(repo, rev)
    assert agentrun.sync_dir(repo, state=state, endpoints=endpoints).outcome == "applied"
    first = world.serial(bind.primary, zone)
    path = repo / f"zone-{zone}.yaml"
    path.write_text(path.read_text().replace("adminEmail: hostmaster.example.com.", "adminEmail: dns.example.org.")
                    .replace("refresh: 3600", "refresh: 7200"))
    run = agentrun.sync_dir(repo, state=state, endpoints=endpoints)
    assert run.outcome == "applied" and [c.key for z in run.dns.zones for c in z.changes] == [(f"{zone}.", "SOA")]
    for server in world.servers:
        deadline = time.monotonic() + 20
        while (soa := (world.axfr(server, zone) or {})[(f"{zone}.", "SOA")][1][0].split())[1] != "dns.example.org." \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (soa[0], soa[1], soa[3]) == ("ns1.example.com.", "dns.example.org.", "7200")
        assert int(soa[2]) > (first or 0)
    again = agentrun.sync_dir(repo, state=state, endpoints=endpoints)
    assert again.outcome == "unchanged" or not [c for z in again.dns.zones for c in z.changes]
