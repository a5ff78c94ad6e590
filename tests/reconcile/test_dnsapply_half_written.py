"""A zone whose writes stop part-way, decided without a server: the first
UPDATE of a zone carries the prerequisites of all its changes when they fit, so a zone changed since it
was observed is refused before anything of it is written; and when batches did land before a failure,
the zone's result records them (`written`, `changes`) and the message saying it stopped names them."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

import dns.message
import pytest

from agent.clients import rfc2136, updatewire
from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint, Server
from agent.clients.statestore import FileStore
from agent.desired import rrsets
from agent.errors import DnsUpdateError
from agent.model.observed import ZoneObserved
from agent.model.rrchange import RRChange
from agent.outcome import zoneconditions
from agent.plan import zonediff
from agent.reconcile import dnsapply, dnsresult
from tests.support.podworld import POD_A, POD_B, PRIMARY, _desired, _pods_world

ZONE = "example.com."


def _txt(name: str, size: int = 20) -> rrsets.RRset:
    return rrsets.build(ZONE, name, "TXT", 60, ['"' + "x" * size + '"'], [])


def _prerequisites(message: Any) -> int:
    return sum(len(r) or 1 for r in dns.message.from_wire(message.to_wire()).prerequisite)


def test_the_first_update_of_a_zone_carries_the_prerequisites_of_all_its_changes() -> None:
    changes = [RRChange("create", None, _txt(f"h{i}.example.com.")) for i in range(5)]
    sent = updatewire.batches(ZONE, changes, None, batch=2)
    assert [[c.key for c in written] for _, written in sent] == [[c.key for c in changes[i:i + 2]] for i in (0, 2, 4)]
    # the first message checks the whole zone before it writes; each later one still checks its own
    assert [_prerequisites(m) for m, _ in sent] == [5, 2, 1]


def test_prerequisites_that_do_not_fit_the_first_message_stay_with_their_own_batch() -> None:
    changes = [RRChange("update", _txt(f"h{i}.example.com.", 240), _txt(f"h{i}.example.com.", 10)) for i in range(400)]
    sent = updatewire.batches(ZONE, changes, None, batch=100)
    first, *rest = (m for m, _ in sent)
    assert all(len(m.to_wire()) <= 65_535 for m, _ in sent)
    assert 100 < _prerequisites(first) < 400  # as many as fit
    assert [_prerequisites(m) for m in rest] == [100, 100, 100]


# -- what a zone that stopped part-way reports --------------------------------------------------------
def _stopping(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, error: Exception) -> tuple[Any, Any]:
    """The zone's plan writes 3 RRsets on pod A, one UPDATE each; the second UPDATE fails with `error`."""
    desired = _desired(tmp_path)
    zone = desired.zones[0]
    missing = sorted(k for k in zone.rrsets if k[1] == "A")[:3]
    served = {k: v for k, v in zone.rrsets.items() if k not in missing}
    name, world = _pods_world(desired, {POD_A: ZoneObserved(served), POD_B: ZoneObserved(dict(zone.rrsets))})
    plan = zonediff.plan_zone(name, zone, world)
    assert [c.key for c in plan.records[POD_A].changes] == missing and plan.records[POD_B].changes == []
    calls: list[str] = []

    def send(endpoint: Endpoint, update: Any, **kw: Any) -> None:
        calls.append(endpoint.instance)
        if len(calls) == 2:
            raise error

    monkeypatch.setattr(rfc2136, "send", send)
    primary = Endpoint(PRIMARY, "svc", 53, "http://svc", servers=(Server("10.1.0.4", "10.1.0.4", 5353, "http://a"),
                                                                  Server("10.1.0.5", "10.1.0.5", 5353, "http://b")))
    runner = dnsapply.DnsApply({PRIMARY: primary}, FileStore(tmp_path / "state"), dnsapply.DnsApplyOptions(batch=1),
                               Deadline(None))
    return plan, runner.zone(plan)


def test_a_failed_update_names_the_batches_written_before_it(tmp_path: pathlib.Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    plan, result = _stopping(tmp_path, monkeypatch, DnsUpdateError(f"{POD_A}: UPDATE refused with REFUSED"))
    first = plan.records[POD_A].changes[0]
    assert result.written == [first] and result.changes == [first]
    assert result.primary_error.startswith("records not applied") and f"{first.key[0]} A (create)" in \
        result.primary_error
    assert f"{first.key[0]} A" in zoneconditions.zone(result)[0]["message"]  # the DNSZone status says so


def test_a_zone_refused_in_the_second_round_says_what_the_first_round_wrote(tmp_path: pathlib.Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    plan, result = _stopping(tmp_path, monkeypatch, rfc2136.PrerequisiteFailed(f"{POD_A}: UPDATE refused with "
                                                                               "NXRRSET: the zone changed"))
    first = plan.records[POD_A].changes[0]
    assert result.stale and result.written == [first] and result.changes == [first]
    done = dnsresult.DnsResult([result], [], stale={result.name: result.stale})
    dnsresult.merge_round(done, dnsresult.DnsResult([], []), {result.name: "refusing to delete 4 of 12 managed RRsets"})
    (zone,) = done.zones
    assert zone.refused.startswith("refusing to delete 4 of 12") and f"{first.key[0]} A (create)" in zone.refused
    assert zone.written == [first] and not zone.stale
    ready = zoneconditions.zone(zone)[0]
    assert ready["reason"] == "PlanRefused" and f"{first.key[0]} A" in ready["message"]


def test_the_second_round_keeps_what_the_first_wrote_on_the_zones_result(tmp_path: pathlib.Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, result = _stopping(tmp_path, monkeypatch, rfc2136.PrerequisiteFailed("changed"))
    first, rest = plan.records[POD_A].changes[0], plan.records[POD_A].changes[1:]
    again = dataclasses.replace(result, stale="", written=[], changes=list(rest))
    done = dnsresult.DnsResult([result], [], stale={result.name: result.stale})
    dnsresult.merge_round(done, dnsresult.DnsResult([again], []), {})
    (zone,) = done.zones
    assert zone.changes == [first, *rest] and zone.written == [first] and zone.ok
