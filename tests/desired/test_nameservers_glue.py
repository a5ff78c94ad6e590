"""What a DNSZone's name servers may claim as its own RRsets: only the in-zone hosts the apex NS names are
glue, so an entry of `nameServerIps` or `nameServers` that names some other in-zone name does not make
the agent overwrite (and later delete) an RRset someone else wrote there."""

from __future__ import annotations

import pathlib

import pytest

from agent.desired.rrsets import RRset
from agent.model.ownership import Key
from agent.plan import zonediff
from tests.conftest import Repo
from tests.support.nsworld import _as_created, _world, _zone

ZONE = "example.com."


LEGACY = ("legacy.example.com.", "A")


def _foreign() -> dict[Key, RRset]:
    return {LEGACY: RRset(ZONE, LEGACY[0], "A", 60, ("198.51.100.7",))}


def test_name_server_ips_for_a_name_that_is_no_name_server_does_not_overwrite_foreign_data(repo: Repo) -> None:
    """`legacy.example.com. A` was written by someone else (an adopted zone, an operator's hand edit). A
    repository writer lists that name in `nameServerIps` - it is no name server of the zone (not in the
    apex NS) - and the agent plans an `update` of the foreign RRset instead of a conflict; once written
    it is "managed", so dropping the entry again deletes it: foreign data overwritten, then lost."""
    zone = _zone(repo, "  nameServerIps: {legacy.example.com.: 203.0.113.66}\n")
    served = {**_as_created(zone), **_foreign()}
    plan = zonediff.plan_zone(zone.name, zone, _world(zone, served))
    (records,) = plan.records.values()
    touched = {c.key: c.action for c in records.changes}
    assert LEGACY not in touched, f"foreign RRset {LEGACY} planned as {touched.get(LEGACY)!r}, not a conflict"
    # (fixer: the entry is no glue and has no effect - a validate warning - so nothing is planned at that
    # name at all, not even a conflict: the foreign RRset is simply left alone)
    assert LEGACY not in zone.rrsets and not any(c.startswith("legacy.example.com. A") for c in records.conflicts)
    assert LEGACY not in plan.managed_after


def test_a_name_server_entry_cannot_claim_a_foreign_in_zone_rrset_either(repo: Repo) -> None:
    """The same through `nameServers`: an entry whose hostname is an existing foreign name with an address
    of its own makes the agent overwrite that name's foreign A RRset (the zone API never wrote it)."""
    zone = _zone(repo, "  nameServers:\n    - {hostname: ns1.example.com., ipv4Address: 192.0.2.1}\n"
                       "    - {hostname: legacy.example.com., ipv4Address: 203.0.113.66}\n")
    before = _zone(Repo(repo.root.parent / "before"),
                   "  nameServers:\n    - {hostname: ns1.example.com., ipv4Address: 192.0.2.1}\n")
    served = {**_as_created(before), **_foreign()}  # created before legacy was named a name server
    plan = zonediff.plan_zone(zone.name, zone, _world(zone, served))
    (records,) = plan.records.values()
    assert LEGACY not in {c.key for c in records.changes}, "a foreign A RRset is overwritten, not a conflict"


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> Repo:
    return Repo(tmp_path / "repo")
