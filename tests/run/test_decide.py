"""Which run the agent makes (agent/run/decide.py), one row per behaviour: what an operator sees as the
run's kind and why, the revision it applies, what it covers and reads, whether it may yield to a
push and which statuses it writes; the precedence between rows; what the agent remembers between
runs (next_phase). And that deciding reads no clock and does no I/O."""

from __future__ import annotations

import builtins
import dataclasses
import socket
import time
from typing import Any

import pytest

from agent.model.key import ObjectKey
from agent.model.ownership import RunState
from agent.model.reading import DnsRead, KubeRead
from agent.model.scope import ScopeRule
from agent.run import decide as d
from agent.run.decision import (
    KIND_OF,
    Decision,
    Head,
    Now,
    Phase,
    Revision,
    RunKind,
    Standing,
    StatusScope,
    Why,
)
from agent.run.planner import Options
from agent.run.triggers import Trigger

A, B, C = "a" * 40, "b" * 40, "c" * 40  # applied, the head, a newer head
NOW = Now(wall=1_000_000.0, mono=50_000.0)
OPTIONS = Options(resync_after=600, sweep_after=3600, agent_namespace="bindy-agent")
INSTANCE = ObjectKey("Bind9Instance", "dns", "primary")
# a warm leader that read the world a minute ago and every serial since
WARM = Phase(Standing.WARM, keeps=True, yields=True, kube_at=NOW.mono - 60, kube_listed=NOW.wall - 60,
             kube_ns="bindy-agent", has_kube=True, dns_at=NOW.mono - 60, has_dns=True, serials_at=NOW.mono - 60,
             served_at=NOW.mono - 60)
COLD = Phase(Standing.COLD, keeps=True, yields=True)
APPLIED = RunState(A, A, "applied", reconciled_at=NOW.wall - 60)
REJECTED = RunState(A, B, "rejected", reconciled_at=NOW.wall - 60)  # the head B rejected, A serves
ONE_SHOT = Phase(Standing.COLD, keeps=False)


def _phase(base: Phase = WARM, **changes: Any) -> Phase:
    return dataclasses.replace(base, **changes)


def _state(base: RunState = APPLIED, **changes: Any) -> RunState:
    return dataclasses.replace(base, **changes)


# (why, state, phase, head, options): the row each behaviour is decided by
ROWS: list[tuple[Why, RunState, Phase, Head, Options]] = [
    (Why.STANDBY, APPLIED, _phase(standing=Standing.STANDBY), Head(B), OPTIONS),
    (Why.SUSPENDED_SETTING, APPLIED, WARM, Head(B), dataclasses.replace(OPTIONS, suspend=True)),
    (Why.SUSPENDED_MARK, _state(suspended=True), WARM, Head(B), OPTIONS),
    (Why.UNCHANGED, APPLIED, WARM, Head(A), OPTIONS),
    (Why.REPAIR_AFTER_CUT, REJECTED, _phase(owed=True), Head(B), OPTIONS),
    (Why.REPAIR_FOR_PODS, REJECTED, _phase(pods_waiting=True), Head(B), OPTIONS),
    (Why.REPAIR_DUE, REJECTED, _phase(served_at=NOW.mono - 600), Head(B), OPTIONS),
    (Why.DRY_RUN, APPLIED, WARM, Head(B), dataclasses.replace(OPTIONS, dry_run=True)),
    (Why.DETECT, APPLIED, WARM, Head(A), dataclasses.replace(OPTIONS, mode="detect")),
    (Why.PUSH_FIRST, APPLIED, _phase(owed=True), Head(B), OPTIONS),
    (Why.PUSH_FIRST_AFTER_RESTART, APPLIED, COLD, Head(B), OPTIONS),
    (Why.RESUME, APPLIED, _phase(owed=True), Head(A), OPTIONS),
    (Why.START_UP, APPLIED, COLD, Head(A), OPTIONS),
    (Why.NEW_LEADER, APPLIED, _phase(standing=Standing.NEW_LEADER, statuses_owed=True), Head(A), OPTIONS),
    (Why.PODS_WAITING, APPLIED, _phase(pods_waiting=True), Head(A), OPTIONS),
    (Why.PODS_MOVED, APPLIED, _phase(pods_moved=frozenset({INSTANCE})), Head(A), OPTIONS),
    (Why.RESYNC, _state(reconciled_at=NOW.wall - 600), WARM, Head(A), OPTIONS),
    (Why.RETRY, _state(outcome="partial"), WARM, Head(A), OPTIONS),
    (Why.REFUSED_AGAIN, _state(REJECTED, outcome="refused"), WARM, Head(B), OPTIONS),
    (Why.NEW_HEAD, APPLIED, WARM, Head(B), OPTIONS),
]


def test_the_table_has_a_row_for_every_behaviour() -> None:
    assert sorted(row[0] for row in ROWS) == sorted(Why) and len(ROWS) == len(Why)


@pytest.mark.parametrize(("why", "state", "phase", "head", "options"), ROWS, ids=[row[0].value for row in ROWS])
def test_each_behaviour_is_decided_by_its_row(why: Why, state: RunState, phase: Phase, head: Head,
                                              options: Options) -> None:
    decision = d.decide(state, phase, head, options, NOW)
    assert (decision.kind, decision.why) == (KIND_OF[why], why)


def _decide(state: RunState, phase: Phase, head: Head, options: Options = OPTIONS) -> Decision:
    return d.decide(state, phase, head, options, NOW)


def test_skips_read_nothing_and_write_nothing_but_pending_reports() -> None:
    suspended = _decide(APPLIED, WARM, Head(B), dataclasses.replace(OPTIONS, suspend=True))
    assert suspended.message == d.SUSPENDED_BY_SETTING and suspended.reading == d.NO_READ
    assert suspended.scope.zones == frozenset() and not suspended.writes and not suspended.publish_pending_notes
    assert _decide(_state(suspended=True), WARM, Head(B)).message == d.SUSPENDED_BY_MARK
    assert d.suspension(_state(suspended=True), OPTIONS) is not None and d.suspension(APPLIED, OPTIONS) is None
    unchanged = _decide(_state(notes_pending=True), WARM, Head(A))
    assert unchanged.message == f"{A[:12]} was already applied; nothing to do" and unchanged.publish_pending_notes
    kept = _decide(_state(notes_pending=True), WARM, Head(A), dataclasses.replace(OPTIONS, push_notes=False))
    assert kept.kind is RunKind.SKIP and not kept.publish_pending_notes
    # a rejected head is not looked at again either, until a resync is due
    assert _decide(REJECTED, WARM, Head(B)).why is Why.UNCHANGED


def test_a_repair_applies_what_serves_keeps_the_rejection_and_tells_no_one() -> None:
    repair = _decide(REJECTED, _phase(owed=True), Head(B))
    assert repair.revision is Revision.SERVING and repair.scope.rule is ScopeRule.ALL and repair.keep_rejection
    assert not repair.names_superseded and not repair.alerts and repair.writes and not repair.may_yield
    assert repair.reading.kube is KubeRead.RECALL and repair.statuses is StatusScope.AFFECTED
    # the resync of what serves reads the world in full: the cluster listed, every zone's serial asked
    due = _decide(REJECTED, _phase(served_at=NOW.mono - 600), Head(B))
    assert due.reading.kube is KubeRead.LIST and due.reading.dns is DnsRead.SERIALS and due.statuses is StatusScope.ALL
    after = d.repair_phase(due, _phase(owed=False, served_at=0.0), NOW)
    assert (after.kube_at, after.serials_at, after.served_at) == (0.0, None, NOW.mono)
    # pods waiting while a resync is due and nothing is owed: the resync's full read
    assert _decide(REJECTED, _phase(served_at=NOW.mono - 600, pods_waiting=True), Head(B)).why is Why.REPAIR_DUE
    assert d.repair_phase(repair, _phase(owed=True), NOW) == WARM
    assert d.repair_phase(_decide(APPLIED, WARM, Head(B)), _phase(owed=True), NOW).owed


def test_a_push_first_plans_the_pushed_zones_alone_by_serial() -> None:
    first = _decide(APPLIED, _phase(owed=True), Head(B))
    assert first.scope.rule is ScopeRule.CHANGED_ZONES and not first.scope.kubernetes and first.reading == d.PUSHED_ZONES
    assert first.statuses is StatusScope.NONE and not first.may_yield and not first.baseline and first.alerts
    restart = _decide(APPLIED, _phase(COLD, standing=Standing.NEW_LEADER), Head(B))
    assert restart.why is Why.PUSH_FIRST_AFTER_RESTART and restart.baseline
    # no push can wait (a one-shot run, a caller with no pushes): the new revision whole
    assert _decide(APPLIED, _phase(COLD, yields=False), Head(B)).why is Why.NEW_HEAD
    assert _decide(APPLIED, ONE_SHOT, Head(B)).why is Why.NEW_HEAD
    assert _decide(_state(outcome="partial", seen=B), COLD, Head(C)).why is Why.NEW_HEAD  # only after a clean apply


def test_widened_a_push_first_is_the_whole_revision() -> None:
    widened = d.widen(APPLIED, _phase(owed=True), B, OPTIONS, NOW)
    assert (widened.kind, widened.why, widened.scope.rule) == (RunKind.RECONCILE, Why.NEW_HEAD, ScopeRule.ALL)
    assert widened.reading.remembered and not widened.may_yield  # what the cut run read, asked by serial


def test_only_a_reconcile_of_the_revision_applied_cleanly_may_yield() -> None:
    start = _decide(APPLIED, COLD, Head(A))
    assert start.may_yield and start.reading.zones_first and start.statuses is StatusScope.ALL
    assert (start.reading.kube, start.reading.dns) == (KubeRead.LIST, DnsRead.TRANSFER)
    assert not _decide(APPLIED, _phase(COLD, yields=False), Head(A)).may_yield
    for why, state, phase, head, options in ROWS:
        decision = d.decide(state, phase, head, options, NOW)
        assert decision.may_yield == (decision.kind is RunKind.RECONCILE and why in (
            Why.START_UP, Why.NEW_LEADER, Why.PODS_WAITING, Why.PODS_MOVED, Why.RESYNC)), why


def test_resume_reads_what_the_cut_run_read() -> None:
    resume = _decide(APPLIED, _phase(COLD, owed=True), Head(A))
    assert resume.kind is RunKind.RESUME and not resume.may_yield and resume.statuses is StatusScope.ALL
    assert resume.reading.dns is DnsRead.SERIALS and resume.reading.remembered and resume.reading.refresh_ownership


@pytest.mark.parametrize(("phase", "kube", "dns", "statuses"), [
    (WARM, KubeRead.RECALL, DnsRead.FOCUSED, StatusScope.AFFECTED),
    (_phase(serials_at=None), KubeRead.RECALL, DnsRead.SERIALS, StatusScope.AFFECTED),
    (_phase(statuses_owed=True), KubeRead.RECALL, DnsRead.FOCUSED, StatusScope.ALL),
    (_phase(kube_ns="other"), KubeRead.LIST, DnsRead.FOCUSED, StatusScope.ALL),
    (_phase(kube_at=NOW.mono - 600), KubeRead.LIST, DnsRead.FOCUSED, StatusScope.ALL),
    (_phase(dns_at=NOW.mono - 3600), KubeRead.RECALL, DnsRead.TRANSFER, StatusScope.AFFECTED),
    (_phase(has_dns=False, has_kube=False), KubeRead.LIST, DnsRead.TRANSFER, StatusScope.ALL),
], ids=["warm", "serials-stale", "statuses-owed", "other-namespace", "kube-stale", "dns-stale", "nothing"])
def test_what_is_fresh_is_remembered_the_rest_read(phase: Phase, kube: KubeRead, dns: DnsRead,
                                                    statuses: StatusScope) -> None:
    decision = _decide(APPLIED, phase, Head(B))
    assert (decision.reading.kube, decision.reading.dns, decision.statuses) == (kube, dns, statuses)
    fresh = dns is not DnsRead.TRANSFER
    assert decision.reading.plan_memo == fresh and decision.reading.refresh_ownership == (not fresh)


def test_detect_and_follow_never_ask_only_the_touched_zones() -> None:
    detect = _decide(APPLIED, WARM, Head(A), dataclasses.replace(OPTIONS, mode="detect"))
    assert detect.reading.dns is DnsRead.SERIALS and not detect.writes and detect.statuses is StatusScope.NONE
    dry = _decide(APPLIED, WARM, Head(A), dataclasses.replace(OPTIONS, dry_run=True))
    assert dry.reading.dns is DnsRead.FOCUSED and not dry.writes and not dry.names_superseded
    standby = _phase(standing=Standing.STANDBY)
    follow = _decide(_state(reconciled_at=NOW.wall - 3600), standby, Head(B))
    assert follow.reading.dns is DnsRead.SERIALS and follow.reading.kube is KubeRead.RECALL and not follow.writes
    # the leader wrote since the standby listed the cluster (or writes now): listed again
    assert _decide(_state(reconciled_at=NOW.wall), standby, Head(B)).reading.kube is KubeRead.LIST
    assert _decide(_state(writing_at=1.0), standby, Head(B)).reading.kube is KubeRead.LIST


@pytest.mark.parametrize(("state", "phase", "head", "options", "why"), [
    (APPLIED, _phase(standing=Standing.STANDBY), Head(B), dataclasses.replace(OPTIONS, suspend=True), Why.STANDBY),
    (REJECTED, _phase(owed=True), Head(B), dataclasses.replace(OPTIONS, dry_run=True), Why.DRY_RUN),
    (REJECTED, _phase(owed=True), Head(B), dataclasses.replace(OPTIONS, mode="detect"), Why.DETECT),
    (REJECTED, _phase(owed=True, pods_waiting=True), Head(B), OPTIONS, Why.REPAIR_AFTER_CUT),
    (REJECTED, _phase(owed=True), Head(B, serving_gone=True), OPTIONS, Why.PUSH_FIRST),
    (REJECTED, _phase(pods_waiting=True), Head(B, read=True), OPTIONS, Why.REFUSED_AGAIN),
    (APPLIED, WARM, Head(A, read=True), OPTIONS, Why.RESYNC),  # a revision read is never skipped
    (APPLIED, WARM, Head(None), OPTIONS, Why.NEW_HEAD),  # a directory: no head to compare
    (APPLIED, ONE_SHOT, Head(A), OPTIONS, Why.UNCHANGED),
    (_state(reconciled_at=NOW.wall - 600), ONE_SHOT, Head(A), OPTIONS, Why.RESYNC),
    (REJECTED, _phase(ONE_SHOT, served_at=0.0), Head(B), OPTIONS, Why.UNCHANGED),  # a one-shot run repairs nothing
    (APPLIED, _phase(COLD, owed=True), Head(A), OPTIONS, Why.RESUME),  # owed outranks a fresh process
    (_state(outcome="rejected", seen=B, applied=None), WARM, Head(B, read=True), OPTIONS, Why.REFUSED_AGAIN),
    (APPLIED, WARM, Head(B), dataclasses.replace(OPTIONS, dry_run=True), Why.DRY_RUN),
], ids=["standby-over-suspend", "dry-run-over-stuck", "detect-over-stuck", "owed-over-pods", "serving-gone",
        "read-never-repairs", "read-never-skips", "no-head", "one-shot-unchanged", "one-shot-resync",
        "one-shot-repairs-nothing", "owed-over-cold", "rejected-never-applied", "dry-run-new-head"])
def test_precedence(state: RunState, phase: Phase, head: Head, options: Options, why: Why) -> None:
    assert _decide(state, phase, head, options).why is why


def test_a_young_node_is_not_due_a_resync_it_never_made() -> None:
    """The monotonic clock of a machine booted a minute ago is small: `served_at` 0.0 is "never"."""
    young = Now(wall=NOW.wall, mono=60.0)
    phase = _phase(served_at=0.0, kube_at=0.0, dns_at=0.0, serials_at=None)
    assert d.decide(REJECTED, phase, Head(B), OPTIONS, young).why is Why.UNCHANGED
    assert d.decide(REJECTED, phase, Head(B), OPTIONS, Now(NOW.wall, 601.0)).why is Why.REPAIR_DUE
    start = d.decide(APPLIED, _phase(COLD, kube_at=0.0, dns_at=0.0), Head(A), OPTIONS, young)
    assert (start.reading.kube, start.reading.dns) == (KubeRead.LIST, DnsRead.TRANSFER)


def test_deciding_reads_no_clock_and_does_no_io(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> Any:
        raise AssertionError("decide read a clock or did I/O")

    for name in ("time", "monotonic", "time_ns", "monotonic_ns", "perf_counter", "sleep"):
        monkeypatch.setattr(time, name, refuse)
    monkeypatch.setattr(builtins, "open", refuse)
    monkeypatch.setattr(socket, "socket", refuse)
    for _why, state, phase, head, options in ROWS:
        decision = d.decide(state, phase, head, options, NOW)
        d.decide(state, phase, Head(head.revision, read=True), options, NOW)
        d.widen(state, phase, head.revision, options, NOW)
        d.repair_phase(decision, phase, NOW)
        for event in EVENTS:
            d.next_phase(phase, event)


EVENTS: list[d.PhaseEvent] = [d.RunEnded(Trigger.SCHEDULE, "applied"), d.Owed(True), d.LeaseTaken(0.0),
                              d.TakeOverFailed(), d.PodsSeen(True, frozenset({INSTANCE})),
                              d.StatusesComputed(frozenset({INSTANCE}))]


@pytest.mark.parametrize(("phase", "event", "changes", "trigger"), [
    (_phase(standing=Standing.NEW_LEADER), d.RunEnded(Trigger.LEADERSHIP, "unchanged"),
     {"standing": Standing.WARM}, None),
    (COLD, d.RunEnded(Trigger.START, "applied"), {}, None),  # warm once files are loaded (the file cache says)
    (_phase(owed=True), d.RunEnded(Trigger.START, "preempted"), {}, Trigger.PUSH),
    (_phase(owed=True), d.RunEnded(Trigger.PUSH, "applied"), {}, Trigger.RESUME),
    (_phase(owed=True), d.RunEnded(Trigger.WEBHOOK, "rejected"), {}, Trigger.RESUME),
    (_phase(owed=True), d.RunEnded(Trigger.RESUME, "partial"), {}, None),  # resumed once: as any run after
    (_phase(owed=True), d.RunEnded(Trigger.PUSH, "unreachable"), {}, None),
    (WARM, d.RunEnded(Trigger.SCHEDULE, "preempted"), {}, None),
    (WARM, d.Owed(True), {"owed": True}, None),
    (_phase(owed=True), d.Owed(False), {"owed": False}, None),
    (_phase(kube_listed=NOW.wall - 60), d.LeaseTaken(NOW.wall),
     {"standing": Standing.NEW_LEADER, "statuses_owed": True, "kube_at": 0.0, "serials_at": None}, None),
    (_phase(kube_listed=NOW.wall), d.LeaseTaken(NOW.wall - 60),
     {"standing": Standing.NEW_LEADER, "statuses_owed": True, "serials_at": None}, None),
    (WARM, d.TakeOverFailed(), {"standing": Standing.NEW_LEADER, "has_kube": False, "kube_at": 0.0,
                                "kube_listed": 0.0, "has_dns": False, "dns_at": 0.0, "serials_at": None}, None),
    (WARM, d.PodsSeen(True, frozenset({INSTANCE})), {"pods_waiting": True, "pods_moved": frozenset({INSTANCE})}, None),
    (_phase(pods_waiting=True), d.PodsSeen(None, frozenset()), {}, None),
    (_phase(pods_moved=frozenset({INSTANCE}), statuses_owed=True), d.StatusesComputed(frozenset({INSTANCE})),
     {"pods_moved": frozenset(), "statuses_owed": False}, None),
], ids=["new-leader-ends", "cold-stays", "cut-asks-push", "push-asks-resume", "rejected-push-asks-resume",
        "resume-once", "unreachable-asks-nothing", "not-owed", "owed", "settled", "lease-list-again",
        "lease-list-kept", "take-over-failed", "pods", "pods-unseen", "statuses"])
def test_next_phase(phase: Phase, event: d.PhaseEvent, changes: dict[str, Any], trigger: Trigger | None) -> None:
    assert d.next_phase(phase, event) == (dataclasses.replace(phase, **changes), trigger)
