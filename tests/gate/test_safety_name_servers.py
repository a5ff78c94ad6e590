"""The delete threshold counts the managed records a revision deletes even when the same commit names their
hosts as name servers: A/AAAA RRsets of a host the apex names are not exempt because of it."""

from __future__ import annotations

import pathlib

import pytest

from agent.gate import safety
from agent.plan import zonediff
from tests.conftest import Repo
from tests.support.nsworld import HEAD, _world, _zone


def test_renaming_managed_records_into_name_servers_does_not_bypass_the_delete_threshold(repo: Repo) -> None:
    """12 managed A records; the next revision deletes all of them and, in the same commit, lists their
    names as name servers with only an IPv6 address (valid: no warning). Their A RRsets are deleted, yet
    the gate counts none of the 12 deletes, because every A/AAAA of any host the apex names is "own"
    (gate/safety.py zone_refusal and _name_servers): a mass delete the threshold exists to stop."""
    names = [f"h{i}" for i in range(12)]
    records = "---\n".join(HEAD + f"kind: ARecord\nmetadata: {{name: {n}, namespace: dns-system}}\n"
                           f"spec: {{name: {n}, ipv4Addresses: [192.0.2.{10 + i}]}}\n" for i, n in enumerate(names))
    ns1 = "  nameServers:\n    - {hostname: ns1.example.com., ipv4Address: 192.0.2.1}\n"
    before = _zone(Repo(repo.root.parent / "before"), ns1, records)
    managed = set(before.rrsets)
    after = _zone(repo, ns1 + "".join(f"    - {{hostname: {n}.example.com., ipv6Address: '2001:db8::{i + 1:x}'}}\n"
                                      for i, n in enumerate(names)))
    plan = zonediff.plan_zone(after.name, after, _world(after, dict(before.rrsets), managed=managed))
    (rrplan,) = plan.records.values()
    deletes = [c.key for c in rrplan.changes if c.action == "delete"]
    assert len(deletes) == 12  # every managed A record goes
    assert safety.zone_refusal(plan, safety.Policy()) is not None, "12 of 12 managed A records deleted, not refused"


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> Repo:
    return Repo(tmp_path / "repo")
