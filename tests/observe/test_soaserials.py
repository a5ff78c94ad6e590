"""Which secondaries lost a zone (agent/observe/soaserials.py): only a secondary that answers for another zone
and refuses this one has lost it; one that refuses everything (its allow-query) or has not loaded the zone
yet has not."""

from __future__ import annotations

import types
from typing import Any

import dns.message
import dns.rcode
import dns.rrset

from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint
from agent.model.key import ObjectKey
from agent.observe import soaserials
from tests.support.soaserver import _server


def _zone(name: str) -> Any:
    return types.SimpleNamespace(name=name, secondaries=[ObjectKey("Bind9Instance", "ns", "sec")])


def _lost(rcode: int, held: tuple[str, ...]) -> list[tuple[str, str]]:
    sock = _server(rcode, held)
    try:
        endpoint = Endpoint("ns/sec", "127.0.0.1", sock.getsockname()[1], "http://127.0.0.1:1")
        zones = ["a.example.", "b.example."]
        desired: Any = types.SimpleNamespace(zones=[_zone(z) for z in zones])
        owned = types.SimpleNamespace(placements={"ns/sec": "secondary"})
        questions = soaserials.Questions()
        soaserials.secondaries(questions, desired, {z: owned for z in zones},  # type: ignore[arg-type]
                               {"ns/sec": endpoint}, {}, None, None)
        return soaserials.without(questions, soaserials.ask(questions, {"ns/sec": endpoint}, Deadline(30)))
    finally:
        sock.close()


def test_a_secondary_is_taken_as_without_a_zone_only_when_it_answers_for_another() -> None:
    assert _lost(dns.rcode.REFUSED, ("a.example.",)) == [("b.example.", "ns/sec")]  # lost: put back
    assert _lost(dns.rcode.REFUSED, ()) == []  # refuses everything: its allow-query, not lost zones
    assert _lost(dns.rcode.SERVFAIL, ("a.example.",)) == []  # held, not loaded yet (or expired)
