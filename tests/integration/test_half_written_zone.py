"""A zone changed by someone else between two UPDATE batches of the agent,
with real named + zone API: the batch that landed before the prerequisite failed is what the zone
serves whatever the second round decides, so the run says so - in the zone's result, in the refusal
the DNSZone status shows, and as an applied change in the commit's report - also when the gate
refuses the second round."""

from __future__ import annotations

from typing import Any

import pytest

from agent.clients import rfc2136
from agent.outcome import forge, zoneconditions
from tests.support import agentrun, dnsrace, dnsworld
from tests.support.dnsrace import _served, _write

started = dnsrace.started  # the fixture, shared

pytestmark = pytest.mark.integration


def test_a_batch_written_before_the_zone_changed_is_reported_applied_when_the_second_round_is_refused(
        started: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    world, zone, repo, a = started["world"], started["zone"], started["repo"], started["a"]
    dropped = [k for k in sorted(a[zone]) if k[0] in ("h1", "h2", "h3", "h4")]
    b = {zone: {**{k: v for k, v in a[zone].items() if k not in dropped}, ("h0", "A"): ("192.0.2.200",),
                ("a0", "A"): ("192.0.2.100",)}}
    _write(repo, b, zone)
    world.update(zone, lambda u: [u.delete(name, rtype) for name, rtype in dropped])  # already gone

    real, sent = rfc2136.send, []

    def send(endpoint: Any, update: Any, **kw: Any) -> None:  # right after the first batch (a0) landed,
        real(endpoint, update, **kw)  # someone changes h0 and puts the 4 RRsets back
        sent.append(update)
        if len(sent) == 1:
            def race(u: Any) -> None:
                u.replace("h0", 300, "A", "203.0.113.7")
                for name, rtype in dropped:
                    for value in a[zone][(name, rtype)]:
                        u.add(name, dnsworld.TTL, rtype, value)
            world.update(zone, race)

    monkeypatch.setattr(rfc2136, "send", send)
    notes: list[dict[str, Any]] = []
    monkeypatch.setattr(forge, "finished", lambda settings, doc: notes.append(doc) or False)

    raced = agentrun.sync_dir(repo, state=started["state"], endpoints=started["endpoints"], batch=1)

    assert raced.outcome == "partial", (raced.failures, raced.message)
    assert raced.replan is not None and raced.replan.refusals  # the gate refused the zone in round 2
    assert _served(world, zone, "a0", "A") == ("192.0.2.100",)  # the first batch landed
    assert _served(world, zone, "h0", "A") == ("203.0.113.7",)  # the rest was not written
    result = next(z for z in raced.dns.zones if z.name == f"{zone}.") if raced.dns else None
    assert result is not None
    a0 = (f"a0.{zone}.", "A")
    assert [c.key for c in result.written] == [a0] and [c.key for c in result.changes] == [a0]
    # the refusal the DNSZone status shows, and the run's failures, name what stays written
    assert result.refused.startswith(f"zone {zone}.: refusing to delete") and f"a0.{zone}. A (create)" in result.refused
    assert f"a0.{zone}. A" in zoneconditions.zone(result)[0]["message"]
    assert any(f"a0.{zone}. A (create)" in f for f in raced.failures)
    # the commit's report lists it as applied, the refused changes as failed
    (doc,) = notes
    results = {(c["target"].get("name"), c["action"]): c["result"] for c in doc["changes"] if c["layer"] == "records"}
    assert results[(f"a0.{zone}.", "create")] == "applied", results
    assert results[(f"h0.{zone}.", "update")].startswith("failed: "), results
    assert doc["summary"]["rrsetChanges"] >= 2
