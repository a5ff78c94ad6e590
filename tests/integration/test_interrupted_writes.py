"""Writes that stop part-way, with real named + zone API: a refusal in the second DNS round (the zones that
changed while the run wrote) does not leave the zone half applied and unreported, and an agent killed
between the pods of an instance does not make a foreign RRset on the other pod the agent's. The pure
halves are tests/plan/test_zonediff_recover.py and tests/reconcile/test_dnsapply_half_written.py."""

from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import Any

import dns.query
import dns.rcode
import dns.update
import pytest

from tests.conftest import ROOT
from tests.support import agentrun, dnsrace, dnsworld, podservers
from tests.support.dnsrace import _race, _served, _write
from tests.support.podservers import _sync

started, pods = dnsrace.started, podservers.pods  # the fixtures, shared

pytestmark = pytest.mark.integration


def test_a_second_round_refusal_does_not_leave_the_zone_half_applied_and_unreported(
        started: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    """The revision creates `a0` and updates `h0`, and drops 4 RRsets someone already deleted. Between
    observe and apply the other writer changes h0 and puts the 4 back. With UPDATE batches of one
    change (`--batch 1`, or any revision larger than a batch), the first round writes a0, then h0's
    prerequisite fails; the second round's plan deletes 4 of 12 and the gate refuses it. The zone is
    left with part of the revision (a0) although the gate refused it, and the run's account of the zone
    only lists the second round's (refused) changes: what was written is in no report."""
    world, zone, repo, a = started["world"], started["zone"], started["repo"], started["a"]
    dropped = [k for k in sorted(a[zone]) if k[0] in ("h1", "h2", "h3", "h4")]
    b = {zone: {**{k: v for k, v in a[zone].items() if k not in dropped}, ("h0", "A"): ("192.0.2.200",),
                ("a0", "A"): ("192.0.2.100",)}}
    _write(repo, b, zone)
    world.update(zone, lambda u: [u.delete(name, rtype) for name, rtype in dropped])

    def race(u: Any) -> None:
        u.replace("h0", 300, "A", "203.0.113.7")
        for name, rtype in dropped:
            for value in a[zone][(name, rtype)]:
                u.add(name, 300, rtype, value)

    _race(monkeypatch, world, zone, race)
    raced = agentrun.sync_dir(repo, state=started["state"], endpoints=started["endpoints"], batch=1)

    assert raced.outcome == "partial", (raced.failures, raced.message)
    assert raced.replan is not None and raced.replan.refusals  # the gate refused the zone in round 2
    written = _served(world, zone, "a0", "A")
    # whole or nothing for the refused zone: either a0 was not written, or the run says it was
    reported = [c for c in raced.replan.changes if getattr(c.target, "name", "") == f"a0.{zone}."]
    result = next(z for z in raced.dns.zones if z.name == f"{zone}.") if raced.dns else None
    listed = [c for c in (result.changes if result else []) if c.key == (f"a0.{zone}.", "A")]
    assert written is None or reported or listed, (
        f"a0 is served ({written}) after the gate refused zone {zone}, and neither the second plan nor the "
        f"zone's result lists it: {raced.failures}")


# -- pods that differ, and a kill between them ---------------------------------------------------------

KILL_AT_POD = """
import os, sys
from agent.clients import rfc2136
real = rfc2136.send
def send(endpoint, update, **kw):
    if endpoint.dns_host == sys.argv[1]:
        os._exit(137)  # SIGKILL-like: no finally, no settle, right before the first UPDATE to that pod
    return real(endpoint, update, **kw)
rfc2136.send = send
from agent import cli
sys.exit(cli.main(sys.argv[2:]))
"""


def test_a_kill_between_pods_does_not_make_a_foreign_rrset_on_the_other_pod_the_agents(
        tmp_path: pathlib.Path, pods: Any) -> None:
    """Pod 1 holds a foreign `x A` that pod 0 does not. Git adds `x A`: on pod 0 a create, on pod 1 a
    conflict (left alone, not managed: zonediff._records intersects the servers' ownership). The
    agent is killed after it wrote pod 0 and before pod 1. The stored intent says `x A` was to be
    written; the next run's zonediff.recover finds it with the wanted digest on pod 0 and makes the
    key managed for the whole zone, so pod 1's foreign RRset is now planned as an `update`: it is
    overwritten, and nobody is told of the conflict any more."""
    (zone,) = dnsworld.zone_names(1)
    repo, state = tmp_path / "repo", tmp_path / "state"
    a = dnsworld.revision([zone], 12)
    dnsworld.write_repo(repo, a)
    assert _sync(pods, repo, state).returncode == 0
    foreign = "203.0.113.99"
    update = dns.update.UpdateMessage(zone, keyring=pods.world.keyring(), keyalgorithm="hmac-sha256")
    update.add("x", 300, "A", foreign)
    pod1 = pods.pods[1]
    assert dns.query.tcp(update, pod1.address, port=pod1.port, timeout=5).rcode() == dns.rcode.NOERROR

    b = {zone: {**a[zone], ("x", "A"): ("192.0.2.77",), ("y", "A"): ("192.0.2.78",)}}  # y: an UPDATE for pod 1
    dnsworld.write_repo(repo, b)
    killed = subprocess.run([sys.executable, "-c", KILL_AT_POD, pod1.address, "sync", str(repo), "--endpoints",
                             str(pods.endpoints), "--state", str(state)], capture_output=True, text=True, cwd=ROOT,
                            timeout=120, check=False)
    assert killed.returncode == 137, killed.stderr
    assert _x(pods, pods.pods[0], zone) == ("192.0.2.77",)  # pod 0 was written before the kill

    after = _sync(pods, repo, state)
    assert _x(pods, pod1, zone) == (foreign,), "the foreign RRset on pod 1 was overwritten after the kill"
    assert after.returncode == 1 and "conflict" in (after.stdout + after.stderr), after.stderr


def _x(world: Any, server: Any, zone: str) -> tuple[str, ...] | None:
    served = world.world.axfr(server, zone) or {}
    found = served.get((f"x.{zone}.", "A"))
    return found[1] if found else None
