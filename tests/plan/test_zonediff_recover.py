"""An interrupted run's intent folded back in (zonediff.recover) across the pods of an instance: a
write the intent names becomes the agent's only if no pod holds other data at that key. A run
killed after it wrote pod A and before pod B, which holds foreign data there, leaves pod B's
conflict a conflict: the foreign RRset is not overwritten by the next run."""

from __future__ import annotations

import dataclasses
import pathlib

from agent.model.observed import ZoneObserved
from agent.model.ownership import Intent, digest
from agent.plan import zonediff
from tests.support.podworld import POD_A, POD_B, _desired, _pods_world


def test_a_kill_between_pods_does_not_make_the_foreign_rrset_on_the_other_pod_the_agents(
        tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    zone = desired.zones[0]
    key = sorted(k for k in zone.rrsets if k[1] == "A")[0]
    want = zone.rrsets[key]
    foreign = dict(zone.rrsets)
    foreign[key] = dataclasses.replace(want, rdatas=("198.51.100.1",), objects=())
    # pod A got the agent's write before the kill; pod B holds someone else's data there
    name, world = _pods_world(desired, {POD_A: ZoneObserved(dict(zone.rrsets)), POD_B: ZoneObserved(foreign)})
    owned = world.ownership[name]
    owned.managed.discard(key)
    owned.pending = Intent(writes={key: digest(want.rdatas, want.ttl)})

    plan = zonediff.plan_zone(name, zone, world)

    assert plan.records[POD_B].changes == [], "the foreign RRset on pod B is planned to be overwritten"
    assert [c for c in plan.conflicts if c.startswith(f"{key[0]} {key[1]}:")], plan.conflicts
    assert key not in plan.managed_after


def test_a_write_that_landed_on_one_pod_and_is_missing_on_the_other_is_the_agents(tmp_path: pathlib.Path) -> None:
    desired = _desired(tmp_path)
    zone = desired.zones[0]
    key = sorted(k for k in zone.rrsets if k[1] == "A")[0]
    want = zone.rrsets[key]
    missing = {k: v for k, v in zone.rrsets.items() if k != key}
    name, world = _pods_world(desired, {POD_A: ZoneObserved(dict(zone.rrsets)), POD_B: ZoneObserved(missing)})
    owned = world.ownership[name]
    owned.managed.discard(key)
    owned.pending = Intent(writes={key: digest(want.rdatas, want.ttl)})

    plan = zonediff.plan_zone(name, zone, world)

    assert [(c.action, c.key) for c in plan.records[POD_B].changes] == [("create", key)]
    assert key in plan.managed_after and not plan.conflicts
