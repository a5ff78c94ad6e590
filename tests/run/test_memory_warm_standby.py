"""What a standby that takes over keeps of what it followed (agent/run/memory.py `take_over`), and the
ownership records read back as the very same objects while they say the same (the zone plans' memo)."""

from __future__ import annotations

import pathlib
import time

from agent.clients.statestore import FileStore
from agent.model.observed import KubeObserved
from agent.model.ownership import ZoneOwnership
from agent.run import memorize
from agent.run.memory import CLOCK_SKEW, Memory


def _followed(listed: float) -> Memory:
    memory = Memory()
    memory.kube, memory.kube_at, memory.kube_listed = KubeObserved({}, set(), set()), time.monotonic(), listed
    memory.serials_at = time.monotonic()
    memory.dns.sources["example.com."] = object()
    return memory


def test_the_cluster_listed_after_the_old_leaders_last_write_is_trusted() -> None:
    memory = _followed(listed=1000.0)
    memorize.take_over(memory, applied_at=1000.0 - CLOCK_SKEW - 1)
    assert memory.kube_fresh(600, memory.agent_namespace)  # not listed again
    assert memory.serials_at is None and not memory.dns.sources  # every zone's serial is asked


def test_the_cluster_listed_before_the_old_leaders_last_write_is_read_again() -> None:
    for applied_at in (1000.0 - CLOCK_SKEW, 1000.0, 2000.0):  # within the clock margin counts as before
        memory = _followed(listed=1000.0)
        memorize.take_over(memory, applied_at=applied_at)
        assert not memory.kube_fresh(600, memory.agent_namespace), applied_at


def test_a_record_read_back_unchanged_is_the_same_object_and_a_changed_one_is_new(tmp_path: pathlib.Path) -> None:
    store = FileStore(tmp_path / "state")
    store.save_zone(ZoneOwnership("a.example.", placements={"ns/p": "primary"}))
    store.save_zone(ZoneOwnership("b.example.", placements={"ns/p": "primary"}))
    first = store.load_zones(refresh=True)
    other = FileStore(tmp_path / "state")  # another replica, the writer now
    other.save_zone(ZoneOwnership("b.example.", placements={"ns/p": "primary", "ns/s": "secondary"}))
    again = store.load_zones(refresh=True)
    assert again["a.example."] is first["a.example."]
    assert again["b.example."] is not first["b.example."] and again["b.example."].placements["ns/s"] == "secondary"
