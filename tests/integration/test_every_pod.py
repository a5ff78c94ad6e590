"""Zones and records are written to every pod of an instance, as Bindy does (issues 25, 26).

An instance with `replicas: 2` is two `named` processes, each with its own zone list, serials and
emptyDir: written through its Service, one pod would get a zone and the other never would, and a
replaced pod would start empty and stay so. Here two real `named` + zone API processes are the two
pods of one primary instance (the endpoint map's `pods:`, as the agent reads the ready pods of an
instance from its Endpoints in a cluster), a third one its secondary. Every assertion reads the
servers back by AXFR, independently of the agent's code.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time

import dns.message
import dns.query
import dns.rcode
import pytest

from tests.conftest import ROOT
from tests.support import bind as bind_support
from tests.support import dnsworld, podservers
from tests.support.podservers import Pods, _sync

pytestmark = pytest.mark.integration
pods = podservers.pods  # the fixture, shared


def _divergences(pods: Pods, rev: dnsworld.Revision, timeout: float = 15) -> list[dnsworld.Divergence]:
    """Every server's divergence from `rev` (both primary pods and the secondary), polled until all are
    clean or `timeout` passes."""
    end = time.monotonic() + timeout
    while True:
        found = [dnsworld.divergence(pods.world, s, rev) for s in pods.servers]
        if all(d.clean for d in found) or time.monotonic() > end:
            return found
        time.sleep(0.2)


def _assert_everywhere(pods: Pods, rev: dnsworld.Revision, label: str) -> None:
    found = _divergences(pods, rev)
    print(f"\n{label}: {dnsworld.summary(found)}")
    assert all(d.clean for d in found), {d.server: {k: v for k, v in vars(d).items() if v and k != "server"}
                                         for d in found if not d.clean}


def _serial(server: bind_support.BindServer, zone: str) -> int:
    answer = dns.query.udp(dns.message.make_query(f"{zone}.", "SOA"), server.address, port=server.port,
                           timeout=2)
    assert answer.rcode() == dns.rcode.NOERROR and answer.answer, f"{server.name} does not serve {zone}"
    return int(answer.answer[0][0].serial)


def test_every_pod_of_the_primary_serves_every_rrset_and_a_one_record_push_reaches_both(
        tmp_path: pathlib.Path, pods: Pods) -> None:
    zones = dnsworld.zone_names(3)
    repo, state = tmp_path / "repo", tmp_path / "state"
    rev = dnsworld.revision(zones, 12)
    dnsworld.write_repo(repo, rev)
    first = _sync(pods, repo, state)
    assert first.returncode == 0, first.stderr
    _assert_everywhere(pods, rev, "after the first sync")

    pushed = {**rev, zones[0]: {**rev[zones[0]], ("pushed", "A"): ("192.0.2.55",)}}
    dnsworld.write_repo(repo, pushed)
    push = _sync(pods, repo, state)
    assert push.returncode == 0, push.stderr
    _assert_everywhere(pods, pushed, "after a one-record push")


def test_a_wiped_pod_is_caught_up_by_the_next_run_without_a_new_commit(tmp_path: pathlib.Path, pods: Pods) -> None:
    zones = dnsworld.zone_names(3)
    repo, state = tmp_path / "repo", tmp_path / "state"
    rev = dnsworld.revision(zones, 12)
    dnsworld.write_repo(repo, rev)
    assert _sync(pods, repo, state).returncode == 0
    _assert_everywhere(pods, rev, "before the pod is replaced")

    pods.wipe(1)
    gone = dnsworld.divergence(pods.world, pods.pods[1], rev)
    assert len(gone.missing) == dnsworld.records(rev), "the replaced pod should start without any zone"

    again = _sync(pods, repo, state)  # the same revision: a resync
    assert again.returncode == 0, again.stderr
    _assert_everywhere(pods, rev, "after the resync that follows the replacement")


def test_an_agent_killed_while_writing_the_second_pod_converges(tmp_path: pathlib.Path, pods: Pods) -> None:
    zones = dnsworld.zone_names(2)
    repo, state = tmp_path / "repo", tmp_path / "state"
    dnsworld.write_repo(repo, dnsworld.revision(zones, 60))
    assert _sync(pods, repo, state).returncode == 0
    b = dnsworld.revision(zones, 60, generation=1)  # every RRset changes: 12 UPDATEs a pod with --batch 10
    dnsworld.write_repo(repo, b)
    base = {z: _serial(pods.pods[1], z) for z in zones}
    first_pod = {z: _serial(pods.pods[0], z) for z in zones}
    proc = subprocess.Popen([sys.executable, "-m", "agent", "sync", str(repo), "--endpoints", str(pods.endpoints),
                             "--state", str(state), "--batch", "10"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    start = time.monotonic()
    while not any(_serial(pods.pods[1], z) > base[z] for z in zones):  # the second pod's first UPDATE landed
        assert proc.poll() is None, f"the run ended before it wrote the second pod:\n{proc.communicate()[1]}"
        assert time.monotonic() - start < 60, "the second pod was never written"
        time.sleep(0.002)
    proc.kill()
    proc.communicate()
    assert proc.returncode == -9
    assert any(_serial(pods.pods[0], z) > first_pod[z] for z in zones), "the first pod was written first"
    mid = _divergences(pods, b, timeout=0)
    print(f"\nkilled mid-write to the second pod: {dnsworld.summary(mid)}")

    after = _sync(pods, repo, state)
    assert after.returncode == 0 and "conflict" not in after.stderr, after.stderr
    _assert_everywhere(pods, b, "after the run that follows the kill")
