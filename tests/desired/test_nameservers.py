"""Issue 26, name servers: a DNSZone's apex NS and glue (A and AAAA) are part of its desired RRsets and
kept by DNS UPDATE on every run, so an edit of `nameServers` / `nameServerIps` after the zone was
created takes effect; the zone API's create body keeps carrying the apex NS and the IPv4 glue.
Glue is only for names the apex NS names (an address for another name warns and has no effect), the
apex NS is taken whoever wrote it but glue only where the create wrote it or the agent manages it
(foreign data at a glue name stays a conflict), and glue deletes count against the delete threshold.

The served side (real named and zone API, primary and secondary) is tests/integration/test_nameservers.py.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import shutil
from typing import Any

import pytest

from agent.desired import hierarchy, nameservers, zonebody
from agent.desired.placement import Zone
from agent.desired.rrsets import RRset
from agent.gate import safety
from agent.model.ownership import Key
from agent.model.rrchange import RRChange
from agent.plan import zonediff, zoneplan
from agent.plan.zoneplan import RRsetPlan
from tests.conftest import SAMPLE, Repo, load_dir
from tests.support import clirun
from tests.support.nsworld import CLUSTER, HEAD, _as_created, _world, _zone_doc

NAME_SERVERS = """  nameServers:
    - {hostname: ns1.example.com., ipv4Address: 192.0.2.1, ipv6Address: "2001:DB8::1"}
    - {hostname: ns2.example.net.}
    - {hostname: ns3.example.com., ipv6Address: "2001:db8::3"}
    - {hostname: ns4.example.com.}
    - {hostname: ns5.example.com.}
    - {hostname: ns6.example.net.}
  nameServerIps: {ns4.example.com.: 192.0.2.4, ns5.example.com.: "2001:db8::5", ns6.example.net.: 192.0.2.6}
"""


APEX = ["ns1.example.com.", "ns2.example.net.", "ns3.example.com.", "ns4.example.com.", "ns5.example.com.",
        "ns6.example.net."]


def _zone(repo: Repo, extra: str = NAME_SERVERS, records: str = "") -> Zone:
    repo.add("cluster.yaml", CLUSTER)
    repo.add("zone.yaml", _zone_doc(extra) + (f"---\n{records}" if records else ""))
    state = hierarchy.build(load_dir(repo.root))
    assert [p for p in state.problems if p.severity.name == "ERROR"] == []
    (zone,) = state.zones
    return zone


def _served(zone: Zone) -> dict[Key, tuple[int, tuple[str, ...]]]:
    return {k: (r.ttl, r.rdatas) for k, r in zone.rrsets.items()}


# -- the desired RRsets ------------------------------------------------------------------------------

def test_the_apex_ns_and_the_a_and_aaaa_glue_of_in_zone_name_servers_are_desired_rrsets(repo: Repo) -> None:
    zone = _zone(repo)
    assert _served(zone) == {
        ("example.com.", "NS"): (600, tuple(APEX)),
        ("ns1.example.com.", "A"): (600, ("192.0.2.1",)),
        ("ns1.example.com.", "AAAA"): (600, ("2001:db8::1",)),  # as an AXFR shows it
        ("ns3.example.com.", "AAAA"): (600, ("2001:db8::3",)),
        ("ns4.example.com.", "A"): (600, ("192.0.2.4",)),
        ("ns5.example.com.", "AAAA"): (600, ("2001:db8::5",)),
    }  # ns2 and ns6 are outside the zone: no glue


def test_without_name_servers_the_apex_ns_is_the_soas_primary_name_server(repo: Repo) -> None:
    zone = _zone(repo, extra="")
    assert _served(zone) == {("example.com.", "NS"): (600, ("ns1.example.com.",))}


def test_records_at_the_same_name_and_type_join_the_dnszones_own_rrsets(repo: Repo) -> None:
    records = (HEAD + "kind: NSRecord\nmetadata: {name: apex, namespace: dns-system}\n"
               "spec: {name: \"@\", nameserver: ns9.example.net., ttl: 300}\n---\n"
               + HEAD + "kind: ARecord\nmetadata: {name: ns1, namespace: dns-system}\n"
               "spec: {name: ns1, ipv4Addresses: [192.0.2.11]}\n")
    repo.add("cluster.yaml", CLUSTER)
    repo.add("zone.yaml", _zone_doc(NAME_SERVERS + "  recordsFrom: [{selector: {matchLabels: {}}}]\n")
             + "---\n" + records)
    (zone,) = hierarchy.build(load_dir(repo.root)).zones
    assert zone.rrsets[("example.com.", "NS")].rdatas == (*APEX, "ns9.example.net.")
    assert zone.rrsets[("example.com.", "NS")].ttl == 300  # the lowest, as for records that disagree
    assert zone.rrsets[("ns1.example.com.", "A")].rdatas == ("192.0.2.1", "192.0.2.11")


def test_an_in_zone_name_server_without_an_address_is_an_error_at_validate(repo: Repo) -> None:
    # BIND refuses to load such a zone: an error (it was a warning that validate passed), with the fix
    repo.add("cluster.yaml", CLUSTER)
    repo.add("zone.yaml", _zone_doc("  nameServers:\n    - {hostname: ns7.example.com.}\n"))
    result = clirun.main("validate", str(repo.root))
    assert result.returncode == 1, result.stderr
    assert (f"{repo.root}/zone.yaml:10: DNSZone/dns-system/example-com: spec.nameServers[0].hostname: name server "
            "ns7.example.com. is inside zone example.com. but has no address: BIND refuses to load the zone and to "
            "update its NS (check-integrity); give it an ipv4Address or ipv6Address, or add an ARecord for it"
            ) in result.stderr
    repo.add("zone.yaml", _zone_doc("  nameServers:\n    - {hostname: ns7.example.com., ipv4Address: 192.0.2.7}\n"))
    assert clirun.main("validate", str(repo.root)).returncode == 0


# -- the zone API's create body ----------------------------------------------------------------------

def test_the_create_body_carries_the_apex_ns_and_only_ipv4_glue(repo: Repo) -> None:
    body = zonebody.primary(_zone(repo), also_notify=[], update_key=None)
    config: Any = body["zoneConfig"]
    assert config["nameServers"] == APEX
    # bindcar writes every entry as `<host> IN A <ip>`: an IPv6 address there breaks the zone's load
    assert config["nameServerIps"] == {"ns1.example.com.": "192.0.2.1", "ns4.example.com.": "192.0.2.4"}


# -- the plan ----------------------------------------------------------------------------------------


def _changes(plan: zoneplan.ZonePlan) -> dict[Key, tuple[str, tuple[str, ...] | None]]:
    (records,) = plan.records.values()
    assert records.conflicts == []
    return {c.key: (c.action, c.after.rdatas if c.after else None) for c in records.changes}


def test_a_new_zone_gets_its_ipv6_glue_by_update_right_after_the_create(repo: Repo) -> None:
    zone = _zone(repo)
    plan = zonediff.plan_zone(zone.name, zone, _world(zone, None))
    assert [role for _, role in plan.creates] == ["secondary", "primary"]
    # the apex NS and the IPv4 glue come with the create; the rest is written by UPDATE
    assert _changes(plan) == {("ns1.example.com.", "AAAA"): ("create", ("2001:db8::1",)),
                              ("ns3.example.com.", "AAAA"): ("create", ("2001:db8::3",)),
                              ("ns5.example.com.", "AAAA"): ("create", ("2001:db8::5",))}
    assert set(nameservers.keys(zone)) <= plan.managed_after


def test_editing_name_servers_after_the_zone_was_created_updates_the_apex_ns_and_glue(repo: Repo) -> None:
    before = _zone(repo, extra="  nameServers:\n    - {hostname: ns1.example.com., ipv4Address: 192.0.2.1}\n")
    served = _as_created(before)  # what the zone API wrote when the agent created the zone
    created = zonediff.plan_zone(before.name, before, _world(before, None))
    assert set(nameservers.created(before)) <= created.managed_after  # the agent's from then on
    after = _zone(repo, extra=("  nameServers:\n"
                               "    - {hostname: ns1.example.com., ipv4Address: 192.0.2.9, ipv6Address: '2001:db8::9'}\n"
                               "    - {hostname: ns2.example.com., ipv4Address: 192.0.2.2}\n"))
    plan = zonediff.plan_zone(after.name, after, _world(after, served, managed=created.managed_after))
    assert _changes(plan) == {
        ("example.com.", "NS"): ("update", ("ns1.example.com.", "ns2.example.com.")),
        ("ns1.example.com.", "A"): ("update", ("192.0.2.9",)),
        ("ns1.example.com.", "AAAA"): ("create", ("2001:db8::9",)),
        ("ns2.example.com.", "A"): ("create", ("192.0.2.2",)),
    }
    assert safety.zone_refusal(plan, safety.Policy()) is None  # a declared change: the apex keeps name servers
    # removing a name server's address again deletes the glue the agent wrote
    wrote = {**served, **{k: after.rrsets[k] for k in nameservers.keys(after)}}
    again = _zone(repo, extra=("  nameServers:\n    - {hostname: ns1.example.com., ipv4Address: 192.0.2.9}\n"
                               "    - {hostname: ns2.example.com., ipv4Address: 192.0.2.2}\n"))
    plan = zonediff.plan_zone(again.name, again, _world(again, wrote, managed=plan.managed_after))
    assert _changes(plan) == {("ns1.example.com.", "AAAA"): ("delete", None)}


def test_glue_the_agent_neither_created_nor_manages_is_a_conflict_but_the_apex_ns_is_taken(repo: Repo) -> None:
    """A zone whose glue the agent did not write (made by hand, or by an older agent's create and never
    managed) and that differs from the DNSZone: the apex NS is the DNSZone's, the glue stays foreign."""
    zone = _zone(repo, extra="  nameServers:\n    - {hostname: ns1.example.com., ipv4Address: 192.0.2.9}\n"
                             "    - {hostname: ns2.example.com., ipv4Address: 192.0.2.2}\n")
    served = {(zone.name, "NS"): _rr(zone.name, "NS", "ns1.example.com."),
              ("ns1.example.com.", "A"): _rr("ns1.example.com.", "A", "198.51.100.7")}
    plan = zonediff.plan_zone(zone.name, zone, _world(zone, served))
    (records,) = plan.records.values()
    assert {c.key: c.action for c in records.changes} == {(zone.name, "NS"): "update",
                                                          ("ns2.example.com.", "A"): "create"}
    assert records.conflicts == ["ns1.example.com. A: exists with data the agent did not write (198.51.100.7); "
                                 "not overwritten"]
    assert ("ns1.example.com.", "A") not in plan.managed_after


def test_on_a_server_the_zone_is_created_on_the_glue_the_create_writes_is_completed(repo: Repo) -> None:
    """The create body carries one IPv4 address per name server; a second one is added by UPDATE
    right after (what the create wrote is the agent's, not a conflict)."""
    zone = _zone(repo, extra="  nameServers:\n    - {hostname: ns1.example.com., ipv4Address: 192.0.2.1}\n"
                             "  nameServerIps: {ns1.example.com.: 192.0.2.11}\n")
    plan = zonediff.plan_zone(zone.name, zone, _world(zone, None))
    assert _changes(plan) == {("ns1.example.com.", "A"): ("update", ("192.0.2.1", "192.0.2.11"))}


def test_an_address_for_a_name_that_is_no_name_server_warns_and_has_no_effect(repo: Repo) -> None:
    """`nameServerIps` is glue for the zone's name servers only: an entry for another name (in the zone or
    not) is no RRset of the zone and not in the create body, and validate says where and how to fix it.
    A name that NSRecords at the apex name is a name server too."""
    records = (HEAD + "kind: NSRecord\nmetadata: {name: apex, namespace: dns-system}\n"
               "spec: {name: \"@\", nameserver: ns9.example.com.}\n")
    extra = ("  nameServers:\n    - {hostname: ns1.example.com., ipv4Address: 192.0.2.1}\n"
             "  nameServerIps:\n    legacy.example.com.: 203.0.113.66\n    ns9.example.com.: 192.0.2.9\n"
             "    other.example.net.: 192.0.2.8\n  recordsFrom: [{selector: {matchLabels: {}}}]\n")
    zone = _zone(repo, extra=extra, records=records)
    assert set(zone.rrsets) == {("example.com.", "NS"), ("ns1.example.com.", "A"), ("ns9.example.com.", "A")}
    assert nameservers.body_glue(zone) == {"ns1.example.com.": "192.0.2.1", "ns9.example.com.": "192.0.2.9"}
    result = clirun.main("validate", str(repo.root))
    assert result.returncode == 0, result.stderr
    out = result.stdout + result.stderr
    for line, host in ((12, "legacy.example.com."), (14, "other.example.net.")):
        assert (f"zone.yaml:{line}: DNSZone/dns-system/example-com: spec.nameServerIps.{host}: {host} is not a name "
                "server of the zone example.com. (not in its apex NS): add it to nameServers or remove the entry; "
                "it has no effect") in out, out
    assert "ns9.example.com. is not a name server" not in out


def test_hand_edited_glue_and_apex_ns_are_repaired(repo: Repo) -> None:
    zone = _zone(repo)
    served = dict(zone.rrsets)
    for key, value in ((("ns1.example.com.", "A"), "203.0.113.66"), (("example.com.", "NS"), "rogue.example.org.")):
        served[key] = dataclasses.replace(served[key], rdatas=(value,), objects=())
    plan = zonediff.plan_zone(zone.name, zone, _world(zone, served, managed=set(zone.rrsets)))
    assert _changes(plan) == {("example.com.", "NS"): ("update", zone.rrsets[("example.com.", "NS")].rdatas),
                              ("ns1.example.com.", "A"): ("update", ("192.0.2.1",))}
    assert safety.zone_refusal(plan, safety.Policy()) is None


def test_an_adopted_zone_with_other_name_servers_takes_the_dnszones(repo: Repo) -> None:
    """A zone that existed before the agent (its create answered "exists"): the DNSZone declares the apex,
    so its NS and glue are made what the DNSZone says; other data in the zone stays foreign."""
    zone = _zone(repo)
    foreign = {(zone.name, "NS"): RRset(zone.name, zone.name, "NS", 3600, ("a.iana-servers.net.",)),
               ("legacy.example.com.", "A"): RRset(zone.name, "legacy.example.com.", "A", 60, ("198.51.100.7",))}
    plan = zonediff.plan_zone(zone.name, zone, _world(zone, foreign))
    changes = _changes(plan)
    assert changes[(zone.name, "NS")] == ("update", zone.rrsets[(zone.name, "NS")].rdatas)
    assert ("legacy.example.com.", "A") not in changes


# -- the gate ----------------------------------------------------------------------------------------

def _rr(name: str, rtype: str, *values: str) -> RRset:
    return RRset("example.com.", name, rtype, 300, tuple(values))


def test_deleting_the_apex_ns_set_stays_refused() -> None:
    apex = _rr("example.com.", "NS", "ns1.example.com.")
    plan = RRsetPlan("example.com.", [RRChange("delete", apex, None)], [], set())
    refusal = safety.records_refusal("example.com.", plan, {apex.key}, {}, safety.Policy())
    assert refusal is not None and refusal.startswith(
        "zone example.com.: refusing to delete the apex NS set: the zone would have no name server; the operator "
        "can allow it for one run with `bindy-agent sync --force`")
    assert safety.records_refusal("example.com.", plan, {apex.key}, {}, safety.Policy(force=True)) is None
    update = RRsetPlan("example.com.", [RRChange("update", apex, _rr("example.com.", "NS", "ns2.example.com."))],
                       [], set())
    assert safety.records_refusal("example.com.", update, {apex.key}, {}, safety.Policy()) is None


def test_glue_deletes_count_against_the_delete_threshold_and_the_apex_ns_does_not() -> None:
    records = {(f"h{i}.example.com.", "A") for i in range(10)}
    glue = {("ns1.example.com.", "A"), ("ns1.example.com.", "AAAA"), ("ns2.example.com.", "A")}
    managed = records | glue | {("example.com.", "NS")}  # 13 counted: the apex NS is not
    apex = RRChange("update", _rr("example.com.", "NS", "ns1.example.com.", "ns2.example.com."),
                    _rr("example.com.", "NS", "ns1.example.com."))
    deletes = [RRChange("delete", _rr(n, t, "192.0.2.1"), None) for n, t in sorted(glue)]
    policy = safety.Policy(delete_threshold=0.25)
    # the three glue deletes are 23% of 13: allowed; one record more makes 31%: refused
    assert safety.records_refusal("example.com.", RRsetPlan("example.com.", [apex, *deletes], [], set()),
                                  managed, {}, policy) is None
    one = RRChange("delete", _rr("h0.example.com.", "A", "192.0.2.1"), None)
    plan = RRsetPlan("example.com.", [apex, *deletes, one], [], set())
    assert safety.records_refusal("example.com.", plan, managed, {}, policy) == (
        "zone example.com.: refusing to delete 4 of 13 managed RRsets (31%); the limit is 25% for zones with at "
        f"least 10 managed RRsets; {safety.THRESHOLD_HOW}")


# -- the delta of a pull request -------------------------------------------------------------------

def test_the_plan_of_a_name_server_edit_shows_ns_and_glue_and_is_not_refused(tmp_path: pathlib.Path) -> None:
    base, head = tmp_path / "base", tmp_path / "head"
    shutil.copytree(SAMPLE, base)
    shutil.copytree(SAMPLE, head)
    path = head / "zones" / "example-com.yaml"
    text = path.read_text().replace(
        "      ipv4Address: 198.51.100.53\n",
        "      ipv4Address: 198.51.100.54\n      ipv6Address: \"2001:db8::53\"\n"
        "    - hostname: ns3.example.com.\n      ipv4Address: 203.0.113.53\n")
    assert text != path.read_text()
    path.write_text(text)
    result = clirun.main("plan", str(head), "--base-dir", str(base), "-o", "json", "--detailed-exitcode")
    assert result.returncode == 2, result.stderr  # changes
    doc = json.loads(result.stdout)
    assert doc.get("refusals", []) == []
    dns = {(c["target"]["name"], c["target"]["type"]): (c["action"], c["after"]["values"])
           for c in doc["changes"] if "zone" in c["target"]}
    assert dns == {("example.com.", "NS"): ("update", ["ns1.example.com.", "ns2.example.com.", "ns3.example.com."]),
                   ("ns2.example.com.", "A"): ("update", ["198.51.100.54"]),
                   ("ns2.example.com.", "AAAA"): ("create", ["2001:db8::53"]),
                   ("ns3.example.com.", "A"): ("create", ["203.0.113.53"])}


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> Repo:
    return Repo(tmp_path / "repo")
