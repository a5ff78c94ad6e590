"""Observe is a step of its own, the plan is whole and frozen, every refusal comes from the gate
(issue 24): a zone changed behind the agent's back between observe and apply is observed, planned,
gated and applied once more, by the orchestrator; apply never changes the plan it executes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agent.clients.deadline import Deadline
from agent.clients.statestore import FileStore
from agent.model.scope import ALL
from agent.reconcile import dnsapply
from agent.run import planner, revisions
from tests.support import agentrun, dnsrace, dnsworld
from tests.support.dnsrace import _race, _served, _write

pytestmark = pytest.mark.integration
started = dnsrace.started  # the fixture, shared


def test_a_zone_changed_between_observe_and_apply_is_observed_planned_gated_and_applied_again(
        started: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    world, zone, repo, a = started["world"], started["zone"], started["repo"], started["a"]
    b = {zone: {**a[zone], ("h0", "A"): ("192.0.2.200",)}}
    _write(repo, b, zone)
    read = _race(monkeypatch, world, zone, lambda u: u.replace("h0", 300, "A", "203.0.113.7"))

    raced = agentrun.sync_dir(repo, state=started["state"], endpoints=started["endpoints"])

    assert raced.outcome == "applied", (raced.failures, raced.message)
    assert read == [f"{zone}.", f"{zone}."]  # observed once by the plan, once more by the second round
    assert raced.replan is not None and [zp.name for zp in raced.replan.zones or []] == [f"{zone}."]
    assert raced.replan.refusals == []
    result = next(z for z in raced.dns.zones if z.name == f"{zone}.") if raced.dns else None
    assert result is not None and result.ok and [c.key for c in result.changes] == [(f"h0.{zone}.", "A")]
    assert result.changes[0].before is not None and result.changes[0].before.rdatas == ("203.0.113.7",)
    assert _served(world, zone, "h0", "A") == ("192.0.2.200",)
    assert all(c.ok for c in result.checks)  # the secondary serves it too
    # the run says how long each step took, the second round's included
    assert {"fetch", "load", "desired", "validate", "observe", "plan", "gate", "apply_dns", "verify", "report",
            "push"} <= set(raced.steps), raced.steps
    assert all(seconds >= 0 for seconds in raced.steps.values())


def test_a_change_the_gate_refuses_in_the_second_round_is_refused_by_the_gate_and_not_written(
        started: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    world, zone, repo, a = started["world"], started["zone"], started["repo"], started["a"]
    # Git drops 4 of the zone's 12 managed RRsets (33%, over the gate's 30%), which someone already
    # deleted: the first plan has nothing to delete (issue 26: an edit of the apex NS is no longer refused)
    dropped = [k for k in sorted(a[zone]) if k[0] in ("h1", "h2", "h3", "h4")]
    b = {zone: {**{k: v for k, v in a[zone].items() if k not in dropped}, ("h0", "A"): ("192.0.2.200",)}}
    _write(repo, b, zone)
    world.update(zone, lambda u: [u.delete(name, rtype) for name, rtype in dropped])

    def race(u: Any) -> None:  # h0 changed (the agent's UPDATE fails), and the 4 RRsets put back
        u.replace("h0", 300, "A", "203.0.113.7")
        for name, rtype in dropped:
            for value in a[zone][(name, rtype)]:
                u.add(name, dnsworld.TTL, rtype, value)

    _race(monkeypatch, world, zone, race)
    raced = agentrun.sync_dir(repo, state=started["state"], endpoints=started["endpoints"])

    assert raced.outcome == "partial", (raced.failures, raced.message)
    assert raced.replan is not None
    refusal = f"zone {zone}.: refusing to delete 4 of 12 managed RRsets"
    assert [r[:len(refusal)] for r in raced.replan.refusals] == [refusal]  # decided by the gate, on the plan
    result = next(z for z in raced.dns.zones if z.name == f"{zone}.") if raced.dns else None
    assert result is not None and result.refused.startswith(refusal) and not result.stale
    assert any(refusal in f for f in raced.failures)
    # nothing of the refused change was written: the other writer's data stays
    assert _served(world, zone, "h0", "A") == ("203.0.113.7",)
    assert all(_served(world, zone, name, rtype) == a[zone][(name, rtype)] for name, rtype in dropped)


def test_apply_never_changes_the_plan_it_executes(started: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    world, zone, repo, a = started["world"], started["zone"], started["repo"], started["a"]
    b = {zone: {**{k: v for k, v in a[zone].items() if k != ("h1", "TXT")}, ("h0", "A"): ("192.0.2.201",),
                ("new", "A"): ("192.0.2.202",)}}
    _write(repo, b, zone)
    store = FileStore(started["state"])
    targets = planner.Targets(store, None, started["endpoints"])
    options = agentrun.options()
    snap = revisions.DirectoryRevisions(repo).snapshot()
    planned = planner.plan(snap, ALL, planner.WHOLE, planner.Planning(targets, options))
    assert planned.plan is not None and planned.plan.zones is not None and not planned.plan.refusals
    before = copy.deepcopy(planned.plan.zones)
    world.update(zone, lambda u: u.replace("h0", 300, "A", "203.0.113.9"))  # and someone changes h0 meanwhile

    result = dnsapply.apply(planned.plan.zones, started["endpoints"], store,
                            options=dnsapply.DnsApplyOptions(revision=snap.revision), deadline=Deadline(60))

    assert planned.plan.zones == before  # every zone plan exactly as it was planned, after it was applied
    assert list(result.stale) == [f"{zone}."] and "changed since it was observed" in result.stale[f"{zone}."]
    # the zone's intent stays stored: the next observe folds in what may have been written
    pending = store.load_zones()[f"{zone}."].pending
    assert pending is not None and (f"new.{zone}.", "A") in pending.writes
