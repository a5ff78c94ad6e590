"""Pushes first: a restarted agent's start-up reconcile yields to a push that arrives while it reads
the zones; the push's zones are applied first, then the whole revision is reconciled (issue 28).
Real named pair, zone API, kube-apiserver and Git remote; the scheduler's "a webhook waits" is the
run's `yield_to`, here a function that pushes a commit the moment the reconcile first asks."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from agent.clients import dnsquery
from agent.clients import rfc2136 as records
from agent.clients.kubeapi import KubeApi
from agent.clients.statestore import ConfigMapStore
from agent.gate import safety
from agent.run import orchestrator
from agent.run.memory import Memory
from agent.sources.git import GitSource
from tests.support import agentrun, sampleworld
from tests.support import bind as bind_support
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster

pytestmark = pytest.mark.integration
WEB = "records/example-com/web.yaml"


@pytest.fixture
def world(tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any,
          kube: KubeCluster, namespace: str) -> dict[str, Any]:
    return sampleworld.sample_world(tmp_path, git_remote, bind, zone_api, kube, namespace)


def _run(world: dict[str, Any], memory: Memory, **kwargs: Any) -> orchestrator.RunOutcome:
    return sampleworld.run(world, memory, **kwargs)


def _transferred(run: orchestrator.RunOutcome) -> set[str]:
    assert run.plan is not None and run.plan.zones is not None
    return {zp.name for zp in run.plan.zones for seen in zp.observed.values() if not seen.remembered}


class _PushDuring:
    """The webhook of a commit that lands while the reconcile reads the zones: it is pushed (and the
    webhook "waits") from the first time the run asks."""

    def __init__(self, world: dict[str, Any], text: str) -> None:
        self.world, self.text, self.asked, self.sha = world, text, 0, ""

    def __call__(self) -> bool:
        self.asked += 1
        if not self.sha:
            self.sha = self.world["remote"].commit("one record", {WEB: self.text})
            self.world["remote"].push()
        return True


def _zones(run: orchestrator.RunOutcome) -> set[str]:
    return {zp.name for zp in (run.plan.zones or [])} if run.plan is not None else set()


def _serials(world: dict[str, Any], zones: set[str]) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for key, server in world["endpoints"].items():
        out.update({f"{key} {z}": s for z, s in dnsquery.serials(server, sorted(zones)).items()})
    return out


def test_a_push_during_the_start_up_reconcile_is_applied_first(world: dict[str, Any]) -> None:
    tag = world["tag"]
    applied = _run(world, Memory())  # the agent's last life: the revision applied cleanly
    assert applied.outcome == "applied", (applied.failures, applied.message)
    zones = _zones(applied)
    assert len(zones) == 3
    before = _serials(world, zones)

    memory = Memory()  # restarted with its state: its first run reconciles the applied revision
    push = _PushDuring(world, world["files"][WEB].replace("192.0.2.12", "192.0.2.42"))
    cut = _run(world, memory, yield_to=push)
    assert cut.outcome == "preempted", (cut.outcome, cut.message, cut.failures)
    assert cut.revision == applied.revision and "its zones go first" in cut.message
    assert push.asked == 1  # asked once a zone was read, then it stopped
    assert _serials(world, zones) == before  # nothing was written
    assert memory.reconcile_pending

    first = _run(world, memory)  # the webhook's run: the push's zone alone, Kubernetes left as it is
    assert first.outcome == "applied", (first.failures, first.message)
    assert first.revision == push.sha
    assert first.plan is not None and first.plan.kube is None
    assert [zp.name for zp in first.plan.zones or []] == [f"example-{tag}.com."]
    assert any("pushes first" in note for note in first.plan.notes)
    assert _transferred(first) <= {f"example-{tag}.com."}
    for server in world["endpoints"].values():
        assert records.query(server, f"www.example-{tag}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.42")
    assert memory.reconcile_pending  # the reconcile it cut still waits

    whole = _run(world, memory)  # the reconcile, for the newest revision, though it was applied
    assert whole.outcome == "applied", (whole.failures, whole.message)
    assert whole.revision == push.sha
    assert whole.plan is not None and whole.plan.kube is not None
    assert _zones(whole) == zones
    assert not memory.reconcile_pending
    # what the cut run read and what the push's run wrote are not transferred again: asked by serial
    assert f"example-{tag}.com." not in _transferred(whole)
    assert len(_transferred(whole)) <= 2

    quiet = _run(world, memory)  # and then the head is done
    assert quiet.outcome == "unchanged"


def test_a_new_revision_does_not_yield(world: dict[str, Any]) -> None:
    """Only a reconcile of what was applied cleanly yields: the run of a new revision is the push."""
    always = _PushDuring(world, world["files"][WEB])
    always.sha = "x"  # says a push waits, pushes nothing
    run = _run(world, Memory(), yield_to=always)
    assert run.outcome == "applied", (run.failures, run.message)
    assert always.asked == 0


def test_a_reconcile_after_a_partial_run_does_not_yield(world: dict[str, Any]) -> None:
    """A revision the last run left partial is repaired before anything else: not cut."""
    applied = _run(world, Memory())
    assert applied.outcome == "applied"
    store = ConfigMapStore(world["api"], world["namespace"])
    state = store.load_run()
    state.outcome = "partial"
    store.save_run(state)
    always = _PushDuring(world, world["files"][WEB])
    always.sha = "x"
    run = _run(world, Memory(), yield_to=always)
    assert run.outcome == "applied", (run.outcome, run.message, run.failures)
    assert always.asked == 0


@pytest.mark.parametrize("clone", ["kept", "new"])
def test_a_push_before_the_start_up_reconcile_began_goes_first_too(world: dict[str, Any], clone: str,
                                                                   tmp_path: pathlib.Path) -> None:
    """The push landed before the restarted agent's first run looked: that run reads the revision it
    applied last (from its clone; a new pod's new, shallow clone fetches it by its id), takes the
    push's zones alone, and leaves the reconcile of the whole revision to the next run."""
    tag = world["tag"]
    applied = _run(world, Memory())
    assert applied.outcome == "applied", (applied.failures, applied.message)
    sha = world["remote"].commit("one record", {WEB: world["files"][WEB].replace("192.0.2.12", "192.0.2.44")})
    world["remote"].push()
    if clone == "new":
        world["cache"] = tmp_path / "new-pod-cache"

    memory = Memory()
    first = _run(world, memory, yield_to=lambda: False)  # a long-running agent's start-up run
    assert first.outcome == "applied", (first.failures, first.message)
    assert first.revision == sha
    assert first.plan is not None and first.plan.kube is None
    assert [zp.name for zp in first.plan.zones or []] == [f"example-{tag}.com."]
    for server in world["endpoints"].values():
        assert records.query(server, f"www.example-{tag}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.44")
    assert memory.reconcile_pending
    whole = _run(world, memory)
    assert whole.outcome == "applied" and whole.plan is not None and whole.plan.kube is not None
    assert _zones(whole) == _zones(applied) and not memory.reconcile_pending


def test_a_one_shot_sync_never_plans_part_of_a_revision(world: dict[str, Any]) -> None:
    """`bindy-agent sync` (no memory, nothing to yield to) plans the whole revision, push or not."""
    applied = _run(world, Memory())
    assert applied.outcome == "applied"
    world["remote"].commit("one record", {WEB: world["files"][WEB].replace("192.0.2.12", "192.0.2.45")})
    world["remote"].push()
    api: KubeApi = world["api"]
    run = agentrun.sync_git(GitSource(world["remote"].url, world["cache"]), store=ConfigMapStore(
        api, world["namespace"]), kube_api=api, endpoints=world["endpoints"], agent_namespace=world["namespace"])
    assert run.outcome == "applied" and run.plan is not None and run.plan.kube is not None
    assert _zones(run) == _zones(applied)


def test_a_push_that_removes_a_zone_is_gated_whole_even_while_a_reconcile_waits(world: dict[str, Any]) -> None:
    """HOLE (found while building this): a push that changes a record of one zone and deletes another
    would have had its record applied by the push's run - whose plan holds the changed zones only -
    before the whole revision's gate refused the zone's deletion. A push that removes anything is
    planned and gated whole: refused, nothing of it is written."""
    tag = world["tag"]
    applied = _run(world, Memory())
    assert applied.outcome == "applied"
    memory = Memory()
    text = world["files"][WEB].replace("192.0.2.12", "192.0.2.46")
    push = _PushDuring(world, text)
    push.sha = world["remote"].commit("a record, and a whole zone gone", {
        WEB: text, "zones/internal.yaml": None, "records/internal/hosts.yaml": None})
    world["remote"].push()
    # the start-up run of a restarted agent: the push came first; it yields to nothing (no webhook waits)
    run = _run(world, memory, yield_to=lambda: False, policy=safety.Policy(min_managed=1))  # a small zone counts
    assert run.outcome == "rejected", (run.outcome, run.message, run.failures)
    assert any("whole zone" in r for r in run.refusals), run.refusals
    for server in world["endpoints"].values():  # the record of the refused revision was not written
        assert records.query(server, f"www.example-{tag}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.12")
    # the reconcile the push came before still happens: of the revision that serves, the head still refused
    assert memory.reconcile_pending
    repair = _run(world, memory, policy=safety.Policy(min_managed=1))
    assert (repair.outcome, repair.revision, repair.rejected_head) == ("applied", applied.revision, True)
    assert repair.plan is not None and repair.plan.kube is not None and _zones(repair) == _zones(applied)
    assert not memory.reconcile_pending
    state = ConfigMapStore(world["api"], world["namespace"]).load_run()
    assert (state.applied, state.seen, state.outcome) == (applied.revision, push.sha, "refused")
    assert _run(world, memory, policy=safety.Policy(min_managed=1)).outcome == "rejected"  # looked at again
