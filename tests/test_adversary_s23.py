"""Adversary, session 23: attacks on this session's changes that succeed (each test FAILS until fixed).

A DNSZone's own RRsets (desired/nameservers.py: apex NS + glue) are kept "whoever wrote them", so the
names a repository writer may call glue reach past the name servers: any in-zone name given an address
in `nameServerIps` (or named in `nameServers`) becomes the DNSZone's own, overwriting foreign data, and
the delete threshold stops counting it.
"""

from __future__ import annotations

import base64
import pathlib
import shutil
from typing import Any

import pytest

from agent.clients import endpoints as endpoint_map
from agent.desired import hierarchy
from agent.desired.placement import Zone
from agent.desired.rrsets import RRset
from agent.gate import safety
from agent.model.observed import DnsObserved, Observed
from agent.model.ownership import Key
from agent.observe import dnsobserve, instancereach
from agent.plan import build, render, zonediff
from tests.conftest import SAMPLE, Repo, load_dir
from tests.support.nsworld import CLUSTER, HEAD, _as_created, _world, _zone_doc

ZONE = "example.com."
LEGACY = ("legacy.example.com.", "A")


def _zone(repo: Repo, extra: str, records: str = "") -> Zone:
    repo.add("cluster.yaml", CLUSTER)
    selector = "  recordsFrom: [{selector: {matchLabels: {}}}]\n" if records else ""
    repo.add("zone.yaml", _zone_doc(extra + selector) + (f"---\n{records}" if records else ""))
    state = hierarchy.build(load_dir(repo.root))
    assert [p for p in state.problems if p.severity.name == "ERROR"] == []
    (zone,) = state.zones
    return zone


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


# -- secrets: a key name read from a Secret field the repository chooses --------------------------------

class _SecretApi:
    """The cluster as the observe step reads it: every RNDC Secret holds a key name and a secret."""

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        if kind != "Secret":
            return None
        return {"data": {"key-name": _b64(name), "secret": _b64(f"{VICTIM_SECRET}-{name}"), "algorithm":
                         _b64("hmac-sha256")}}


VICTIM_SECRET = "c2VjcmV0LW9mLXRoZS1zZWNvbmRhcnk"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_a_repository_cannot_publish_another_instances_rndc_secret_as_its_key_name(tmp_path: pathlib.Path) -> None:
    """`rndcSecretRef: {name: dns-secondary-0-rndc-key, keyNameKey: secret}` on the cluster's primary:
    the Secret is one the agent generates, so tenancy allows the reference, and validate says "valid
    (0 warnings)". The observe step takes the TSIG key *name* from the field the repository chose
    (observe/instancereach._tsig), i.e. the secondary's secret; it becomes Reach.update_key and the
    zone-API body's `updateKeyName` (plan/zonecalls.create_body), which the plan now shows (plan JSON of
    `sync --dry-run`, the changes of the report in the git note the repository writer can read)."""
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    path = root / "infrastructure" / "cluster.yaml"
    path.write_text(path.read_text().replace(
        "  primary:\n    replicas: 1\n",
        "  primary:\n    replicas: 1\n    rndcSecretRef: {name: dns-secondary-0-rndc-key, keyNameKey: secret}\n"))
    desired = hierarchy.build(load_dir(root))
    eps = instancereach.from_cluster(_SecretApi(), desired, token_file=tmp_path / "none",  # type: ignore[arg-type]
                                     agent_addresses=[])
    dns = DnsObserved({}, {z.name: {} for z in desired.zones}, set(eps), servers=dnsobserve.reach(eps),
                      pods=endpoint_map.servers_of(eps))
    shown = render.render_json(build.build(desired, Observed(None, dns), revision="r", agent="bindy-agent"))
    assert VICTIM_SECRET not in shown, "another instance's RNDC secret is printed in the plan as a key name"


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> Repo:
    return Repo(tmp_path / "repo")
