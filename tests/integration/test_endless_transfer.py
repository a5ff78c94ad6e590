"""A DNS server cannot hold the agent with a zone transfer that never ends: `bindy-agent import` and
`bindy-agent sync` run as processes against a hostile DNS server on loopback
(tests/support/stallpeer.AxfrPeer: an SOA, then records without end - a flood, huge messages, or a trickle
of one message every two seconds) are cut with the limit they hit, within their deadline."""

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

from tests.conftest import ROOT
from tests.support import bind as bind_support
from tests.support import dnsworld, stallpeer

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
