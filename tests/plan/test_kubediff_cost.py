"""Issue 28, a push at 100,000 records: the Kubernetes part of a push's plan follows the change.

A long-running agent plans a one-record commit against the cluster it remembers (`trust_hash`): the
Kubernetes diff is made list by list (the infrastructure, then the CRs of each Git file), and a
file's list that is the very list diffed last time, with nothing to change then, is not diffed again
(kubediff.diff_parts). What a user notices: the plan is the plan a cold diff makes, and what it reads
is the changed file's CRs, not the 100,000 others. These tests hold both, and what must still be
found: an object the inventory lists that is gone, and a change the last run did not apply. Also:
the statuses a push writes (outcome/status.wanted with `only`) are those a full computation gives.
"""

from __future__ import annotations

import pathlib
from typing import Any

from agent.desired.hierarchy import Desired
from agent.desired.memo import Memo
from agent.model.key import ObjectKey
from agent.model.observed import KubeObserved
from agent.outcome import status
from agent.plan import build, kubechange, kubediff
from agent.reconcile.kubeapply import KubeResult
from agent.run import planner
from agent.run.memory import Memory
from agent.run.revisions import GitRevisions
from agent.sources.git import GitSource
from tests.support import dnsworld
from tests.support.gitremote import GitRemote

AGENT = "dns-system"
ZONES = [f"z{i}.example" for i in range(8)]
_SOURCES: dict[pathlib.Path, tuple[GitRemote, GitRevisions]] = {}  # a test's remote, and its source (one clone)


def _desired(root: pathlib.Path, rev: dnsworld.Revision, memory: Memory) -> Desired:
    """`rev` committed and read as `bindy-agent run` reads it (from Git: an unchanged file, the same objects)."""
    if root not in _SOURCES:
        remote = GitRemote(root)
        _SOURCES[root] = remote, GitRevisions(GitSource(remote.url, root / "cache"))
    remote, source = _SOURCES[root]
    dnsworld.push_revision(remote, rev, "a commit")
    snap = source.snapshot()
    validated = planner.validate(snap.files, planner.Options(default_namespace=AGENT), limits=snap.limits,
                                 memory=memory)
    assert validated.ok and validated.desired is not None, validated.problems[:3]
    return validated.desired


def _applied(desired: Desired) -> dict[ObjectKey, dict[str, Any]]:
    """The cluster as the agent leaves it after applying `desired` (labels and applied hash)."""
    return {o.key: kubechange.manifest(o, AGENT) for o in desired.objects}


def _plan(desired: Desired, live: dict[ObjectKey, dict[str, Any]], memo: Memo,
          inventory: set[ObjectKey] | None = None) -> list[tuple[str, ObjectKey, tuple[str, ...]]]:
    observed = KubeObserved(live, set(live) if inventory is None else inventory, {AGENT})
    changes = build.kube_changes(desired, observed, agent=AGENT, trust_hash=True, memo=memo)
    return [(c.action, c.key, c.fields) for c in changes]


def _cold(desired: Desired, live: dict[ObjectKey, dict[str, Any]],
          inventory: set[ObjectKey] | None = None) -> list[tuple[str, ObjectKey, tuple[str, ...]]]:
    changes = kubediff.diff(list(desired.objects), live, set(live) if inventory is None else inventory,
                            agent=AGENT, trust_hash=True)
    return [(c.action, c.key, c.fields) for c in changes]


def _one_record_commit(rev: dnsworld.Revision, value: str) -> ObjectKey:
    rev[ZONES[3]][("h0", "A")] = (value,)
    return ObjectKey("ARecord", AGENT, "r3-h0-a")


def test_a_one_record_push_diffs_only_its_files_crs_and_plans_what_a_cold_diff_plans(tmp_path: pathlib.Path,
                                                                                     ) -> None:
    memory, rev = Memory(), dnsworld.revision(ZONES, 30)
    first = _desired(tmp_path, rev, memory)
    live = _applied(first)
    assert _plan(first, live, memory.desired) == []  # the revision as applied: nothing to change
    changed = _one_record_commit(rev, "192.0.2.77")
    second = _desired(tmp_path, rev, memory)
    misses = memory.desired.misses
    planned = _plan(second, live, memory.desired)
    assert planned == _cold(second, live)
    assert [(action, key) for action, key, _ in planned] == [("update", changed)]
    assert "spec.ipv4Addresses[0]" in planned[0][2]
    # diffed: the infrastructure's list (made anew by each expansion) and the changed file's two (its DNSZone,
    # its records); not the 16 lists of the other files
    assert len(second.objects.parts) == 19  # type: ignore[attr-defined]
    assert memory.desired.misses - misses == 3


def test_an_object_the_inventory_lists_that_is_gone_is_created_again(tmp_path: pathlib.Path) -> None:
    memory, rev = Memory(), dnsworld.revision(ZONES, 30)
    first = _desired(tmp_path, rev, memory)
    live = _applied(first)
    assert _plan(first, live, memory.desired) == []
    gone = ObjectKey("TXTRecord", AGENT, "r5-h1-txt")  # in a file no commit touches
    inventory = set(live)
    del live[gone]
    _one_record_commit(rev, "192.0.2.78")
    second = _desired(tmp_path, rev, memory)
    planned = _plan(second, live, memory.desired, inventory)
    assert ("create", gone, ()) in planned
    assert planned == _cold(second, live, inventory)


def test_a_change_the_last_run_did_not_apply_is_planned_again_and_one_it_applied_is_not(tmp_path: pathlib.Path,
                                                                                         ) -> None:
    memory, rev = Memory(), dnsworld.revision(ZONES, 30)
    first = _desired(tmp_path, rev, memory)
    live = _applied(first)
    _plan(first, live, memory.desired)
    changed = _one_record_commit(rev, "192.0.2.79")
    second = _desired(tmp_path, rev, memory)
    update = _cold(second, live)
    assert [(action, key) for action, key, _ in update] == [("update", changed)]
    assert _plan(second, live, memory.desired) == update
    third = _desired(tmp_path, rev, memory)  # the same revision again (a retry): the update was not applied
    assert _plan(third, live, memory.desired) == update
    live[changed] = kubechange.manifest(next(o for o in third.objects if o.key == changed), AGENT)  # now applied
    assert _plan(third, live, memory.desired) == []


def test_the_statuses_of_a_push_are_those_a_full_computation_gives_for_its_crs(tmp_path: pathlib.Path) -> None:
    memory, rev = Memory(), dnsworld.revision(ZONES, 30)
    changed = _one_record_commit(rev, "192.0.2.80")
    desired = _desired(tmp_path, rev, memory)
    live = _applied(desired)
    for n, body in enumerate(live.values()):
        body["metadata"]["generation"] = n + 1
    zone = ObjectKey("DNSZone", AGENT, ZONES[3].replace(".", "-"))
    other = ObjectKey("ARecord", AGENT, "r6-h0-a")
    result = KubeResult([], live)
    everything = status.wanted(desired, result, revision="abc")
    only = {changed, zone, ObjectKey("Bind9Cluster", AGENT, "dns")}
    pushed = status.wanted(desired, result, revision="abc", only=only)
    assert set(pushed) == only and other in everything
    assert pushed == {k: everything[k] for k in only}
    assert pushed[changed]["observedGeneration"] == live[changed]["metadata"]["generation"]
    assert pushed[changed]["zone"] == ZONES[3]
