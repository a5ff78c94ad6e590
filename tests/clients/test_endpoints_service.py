"""What the e2e node found in the agent (issue 25), each at the level where it happens:

- an instance none of whose pods is ready yet is reached by its Service's name, and an UPDATE to it
  crashed the run with a bare ValueError (dnspython takes addresses only) after it had stored its
  intent; now the name is looked up, and one that does not resolve is an UPDATE not delivered;
- that interrupted intent named servers (`namespace/name@pod`) where placements name instances:
  folded back into the next plan it left a placement no instance matches, and every later run
  ended partial with "no endpoint for instance ...@<pod>: the zone stays there for now"."""

from __future__ import annotations

import dns.update
import pytest

from agent.clients import rfc2136
from agent.clients.endpoints import Endpoint
from agent.errors import DnsUpdateError
from agent.model.ownership import Intent, ZoneOwnership
from agent.plan import zonediff


def test_an_update_to_a_name_that_does_not_resolve_is_not_delivered_not_a_crash() -> None:
    endpoint = Endpoint("dns-system/dns-primary-0", "dns-primary-0.dns-system.svc.cluster.invalid", 53,
                        "http://dns-primary-0.dns-system.svc.cluster.invalid:8080")
    with pytest.raises(DnsUpdateError, match="not delivered"):
        rfc2136.send(endpoint, dns.update.UpdateMessage("example.com."), timeout=2)


def test_a_query_to_a_name_that_does_not_resolve_is_no_answer() -> None:
    endpoint = Endpoint("dns-system/dns-primary-0", "dns-primary-0.dns-system.svc.cluster.invalid", 53, "http://x")
    assert rfc2136.query(endpoint, "example.com.", "SOA", timeout=1) is None


def test_a_name_is_looked_up() -> None:
    assert rfc2136._address("localhost") in ("127.0.0.1", "::1")
    assert rfc2136._address("10.244.0.7") == "10.244.0.7"


def test_an_interrupted_intent_on_pods_recovers_as_placements_of_instances() -> None:
    owned = ZoneOwnership("example.com.", {"dns-system/dns-primary-0": "primary"},
                          pending=Intent(place={"dns-system/dns-secondary-0@10.244.0.47": "secondary",
                                                "dns-system/dns-primary-0@10.244.0.46": "primary"},
                                         unplace={"dns-system/old-0@10.244.0.9"}))
    _, placed, unsure = zonediff.recover(owned, [])
    assert placed == {"dns-system/dns-primary-0": "primary", "dns-system/dns-secondary-0": "secondary"}
    assert unsure == {"dns-system/dns-primary-0", "dns-system/dns-secondary-0", "dns-system/old-0"}
