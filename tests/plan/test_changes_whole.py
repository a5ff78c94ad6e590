"""The plan is whole and frozen (issue 24): it carries what apply sends - the zone API bodies with
the servers' addresses the observe step read - and nothing may change it once made."""

from __future__ import annotations

import dataclasses
import json

import pytest

from agent.desired import hierarchy
from agent.model.observed import DnsObserved, Observed, Reach
from agent.plan import build, render
from agent.plan.changes import Plan
from tests.conftest import SAMPLE, load_dir

PRIMARY, SECONDARY = "dns-system/dns-primary-0", "dns-system/dns-secondary-0"
SERVERS = {PRIMARY: Reach(("10.1.0.4:5353",), ("10.1.0.4",), ("10.1.0.9",), "primary-key"),
           SECONDARY: Reach(("10.1.0.7:5353", "[fd00::7]:5353"), ("10.1.0.7", "fd00::7"), ("10.1.0.9",), None)}


def _plan() -> Plan:
    desired = hierarchy.build(load_dir(SAMPLE))
    return build.build(desired, Observed(None, DnsObserved({}, {}, set(SERVERS), servers=SERVERS)))


def test_plan_json_shows_the_zone_api_bodies_apply_will_send() -> None:
    doc = json.loads(render.render_json(_plan()))
    creates = {(c["target"]["zone"], c["target"]["instance"]): c["after"] for c in doc["changes"]
               if c["layer"] == "zones" and c["action"] == "create"}
    primary, secondary = creates[("example.com.", PRIMARY)], creates[("example.com.", SECONDARY)]
    assert primary["zoneName"] == "example.com" and primary["zoneType"] == "primary"
    assert primary["updateKeyName"] == "primary-key"
    config = primary["zoneConfig"]
    assert config["soa"]["primaryNs"] == "ns1.example.com."
    assert config["alsoNotify"] == ["10.1.0.7:5353", "[fd00::7]:5353"]  # the secondary's pods, with the DNS port
    assert config["allowTransfer"] == ["10.1.0.7", "10.1.0.9", "fd00::7"]  # its pods and the agent
    assert secondary == {"zoneName": "example.com", "zoneType": "secondary",
                         "zoneConfig": {"primaries": ["10.1.0.4:5353"]}}


def test_a_secondary_whose_primaries_have_no_address_says_so_in_the_plan() -> None:
    servers = {**SERVERS, PRIMARY: Reach((), (), ("10.1.0.9",), "primary-key")}
    desired = hierarchy.build(load_dir(SAMPLE))
    plan = build.build(desired, Observed(None, DnsObserved({}, {}, set(servers), servers=servers)))
    zp = next(z for z in plan.zones or [] if z.name == "example.com.")
    assert SECONDARY not in zp.bodies
    assert zp.unbuildable[SECONDARY] == f"no ready pod of its primaries {PRIMARY} to transfer from"


def test_every_zone_plan_is_frozen() -> None:
    plan = _plan()
    zp = (plan.zones or [])[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        zp.managed_after = set()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        zp.records = {}  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        next(iter(zp.records.values())).managed_after = set()  # type: ignore[misc]


def test_an_offline_plan_shows_what_is_known_without_the_addresses() -> None:
    plan = build.offline(hierarchy.build(load_dir(SAMPLE)))
    secondary = next(c for c in plan.changes if c.target.layer == "zones" and c.target.role == "secondary")
    assert secondary.after == {"zoneType": "secondary", "primaries": [PRIMARY]}
