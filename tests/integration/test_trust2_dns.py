"""Trust, round 2 (issue 23), the DNS peers: a server cannot hold the agent with a zone transfer
that never ends (item 8), and a zone that leaves Git keeps the data the agent did not write (item 11).

Item 8 runs `bindy-agent import` and `bindy-agent sync` as processes against a hostile DNS server
on loopback (tests/support/stallpeer.AxfrPeer: an SOA, then records without end - a flood, huge
messages, or a trickle of one message every two seconds). Item 11 syncs a Git remote onto real
named and zone APIs and reads the end state back by AXFR of the primary and the secondary.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from agent.outcome import report
from tests.conftest import ROOT
from tests.support import bind as bind_support
from tests.support import dnsworld, stallpeer
from tests.support.gitremote import GitRemote

ZONE = "endless.test"


def _agent(*args: str, timeout: float = 200) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, check=False)


@pytest.fixture
def peer(request: pytest.FixtureRequest) -> Iterator[stallpeer.AxfrPeer]:
    server = stallpeer.AxfrPeer(request.param).start()
    try:
        yield server
    finally:
        server.stop()


# -- 8. a transfer that never ends is cut, and says where and why -------------------------------------
IMPORT_CASES = [
    ("flood", ["--timeout", "250", "--max-transfer-records", "3000"],
     r"cut: more than 3,000 records \([\d,]+ octets so far\); the limit is max_transfer_records: raise it with "
     r"--max-transfer-records \(setting BINDY_AGENT_MAX_TRANSFER_RECORDS\)"),
    ("huge", ["--timeout", "250", "--max-transfer-bytes", "300000"],
     r"cut: more than 300,000 octets \([\d,]+ records so far\); the limit is max_transfer_bytes: raise it with "
     r"--max-transfer-bytes \(setting BINDY_AGENT_MAX_TRANSFER_BYTES\)"),
    ("trickle", ["--timeout", "5"],
     r"cut: not finished within 5 s \([\d,]+ records, [\d,]+ octets so far\); give it more time with --timeout"),
]


@pytest.mark.parametrize(("peer", "flags", "message"), IMPORT_CASES, indirect=["peer"],
                         ids=[c[0] for c in IMPORT_CASES])
def test_an_import_from_a_transfer_that_never_ends_is_cut_with_the_limit_it_hit(
        tmp_path: pathlib.Path, peer: stallpeer.AxfrPeer, flags: list[str], message: str) -> None:
    out = tmp_path / "out"
    run = _agent("import", "--zone", ZONE, "--server", f"127.0.0.1:{peer.port}", "--output-dir", str(out), *flags)
    assert run.returncode == 3, run.stderr
    expected = rf"^bindy-agent import: error: 127\.0\.0\.1:{peer.port}: AXFR of {re.escape(ZONE)}\. {message}"
    assert re.search(expected, run.stderr, re.MULTILINE), run.stderr
    assert "Traceback" not in run.stderr
    assert not out.exists()  # nothing written
    assert peer.sent > 0  # the peer did send: the cut was the agent's


def _endpoints(dest: pathlib.Path, bind: bind_support.BindPair, apis: dict[str, Any], primary_dns: str) -> pathlib.Path:
    """The agent's endpoint map with the primary's DNS at the hostile peer (it signs nothing: no TSIG key)."""
    path = dnsworld.endpoint_map(dest, bind, apis)
    doc = yaml.safe_load(path.read_text())
    primary = doc["instances"]["dns-system/dns-primary-0"]
    primary["dns"] = primary_dns
    del primary["tsigKeyFile"]
    path.write_text(yaml.safe_dump(doc))
    return path


SYNC_CASES = [
    ("flood", ["--max-transfer-records", "2000"], r"cut: more than 2,000 records .*--max-transfer-records"),
    ("trickle", ["--deadline", "8"],
     r"cut: not finished within [5-8] s \([\d,]+ records, [\d,]+ octets so far\); give the run more time with "
     r"--deadline"),
]


@pytest.mark.parametrize(("peer", "flags", "message"), SYNC_CASES, indirect=["peer"], ids=[c[0] for c in SYNC_CASES])
def test_a_sync_whose_primary_never_ends_its_transfer_is_partial_within_its_deadline(
        tmp_path: pathlib.Path, bind: bind_support.BindPair, zone_api: dict[str, Any], peer: stallpeer.AxfrPeer,
        flags: list[str], message: str) -> None:
    zone = dnsworld.zone_names(1)[0]
    repo = dnsworld.write_repo(tmp_path / "repo", dnsworld.revision([zone], 3))
    endpoints = _endpoints(tmp_path / "endpoints", bind, zone_api, f"127.0.0.1:{peer.port}")
    started = time.monotonic()
    run = _agent("sync", str(repo), "--endpoints", str(endpoints), "--state", str(tmp_path / "state"), *flags)
    took = time.monotonic() - started
    assert run.returncode == 1, run.stderr
    failed = [line for line in run.stderr.splitlines() if line.startswith(f"failed: {zone}.: ")]
    assert failed, run.stderr
    assert re.search(rf"dns-system/dns-primary-0: AXFR of {re.escape(zone)}\. {message}", failed[0]), failed[0]
    assert re.search(r"^run \w+: partial: \d+ failed", run.stderr, re.MULTILINE), run.stderr
    assert "Traceback" not in run.stderr
    print(f"\nsync against a {peer.mode} peer ended in {took:.1f} s")
    # nothing was written for the zone: it was not created on the secondary either
    world = dnsworld.Dns(bind, zone_api, endpoints)
    assert world.axfr(bind.secondary, zone) is None


# -- 11. a zone that leaves Git keeps what the agent did not write ------------------------------------
def _others(served: dnsworld.Served | None, zone: str) -> dict[tuple[str, str], tuple[int, tuple[str, ...]]]:
    """What a server serves in `zone` besides its SOA and apex NS."""
    assert served is not None, f"{zone} is not served"
    return {k: v for k, v in served.items() if k[1] != "SOA" and not (k[0] == f"{zone}." and k[1] == "NS")}


def test_a_zone_removed_from_git_keeps_foreign_data_and_only_force_deletes_it(
        tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: dict[str, Any]) -> None:
    doomed, kept = dnsworld.zone_names(2)
    world = dnsworld.Dns(bind, zone_api, dnsworld.endpoint_map(tmp_path / "endpoints", bind, zone_api))
    rev = {**dnsworld.revision([doomed], 5), **dnsworld.revision([kept], 3)}
    cli = ["sync", "--repo", git_remote.url, "--cache", str(tmp_path / "cache"), "--endpoints",
           str(world.endpoints), "--state", str(tmp_path / "state")]
    dnsworld.push_revision(git_remote, rev, "Two zones")
    first = _agent(*cli)
    assert first.returncode == 0, first.stderr
    acme = f'"cert-manager token for {doomed}"'
    world.update(doomed, lambda u: u.add("_acme-challenge", 60, "TXT", acme))  # cert-manager's, not the agent's

    rest = {kept: rev[kept]}
    sha = dnsworld.push_revision(git_remote, rest, "Drop the doomed zone")
    second = _agent(*cli)
    assert second.returncode == 1, second.stderr  # partial: the zone Git dropped is still there
    why = (f"{doomed}.: zone kept on 2 server(s) although it left Git: it holds 1 RRset(s) the agent did not write "
           f"(_acme-challenge.{doomed}. TXT); the agent's own RRsets in it are deleted; `--force` deletes the zone "
           "with them")
    assert f"conflict: {why}" in second.stderr.splitlines(), second.stderr
    note = git_remote.note_seen_by_a_fresh_clone(tmp_path / f"fresh-{sha[:8]}", sha)
    assert note.startswith(f"bindy-agent: partial {sha[:12]}"), note
    assert f"conflict: {why}" in note.splitlines(), note
    assert why in report.parse(note)["conflicts"]
    only_acme = {(f"_acme-challenge.{doomed}.", "TXT"): (60, (acme,))}
    for server in world.servers:  # the agent's 5 RRsets gone, the foreign TXT served, the zone still there
        deadline = time.monotonic() + 15
        while _others(world.axfr(server, doomed), doomed) != only_acme and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _others(world.axfr(server, doomed), doomed) == only_acme, server.name
    found = dnsworld.converged(world, rest)
    assert all(d.clean for d in found), dnsworld.summary(found)

    again = _agent(*cli)  # nothing changed: still kept, still said
    assert again.returncode == 1, again.stderr
    assert f"conflict: {why}" in again.stderr.splitlines(), again.stderr
    assert _others(world.axfr(bind.primary, doomed), doomed) == only_acme

    forced = _agent(*cli, "--force")
    assert forced.returncode == 0, forced.stderr
    found = dnsworld.converged(world, rest, gone=[doomed])
    assert all(d.clean for d in found), dnsworld.summary(found)
    assert world.axfr(bind.primary, doomed) is None and world.axfr(bind.secondary, doomed) is None
