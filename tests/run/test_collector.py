"""The cyclic collector pauses while a revision is built, and always comes back."""

from __future__ import annotations

import gc
import threading
import warnings
import weakref

from agent.run import collector


def test_paused_while_building_and_back_after_nested_and_concurrent_blocks() -> None:
    assert gc.isenabled()
    inner_started, outer_may_end = threading.Event(), threading.Event()

    def other_run() -> None:
        with collector.long_lived():
            inner_started.set()
            outer_may_end.wait(5)

    with collector.long_lived():
        assert not gc.isenabled()
        with collector.long_lived():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still builds
        worker = threading.Thread(target=other_run)
        worker.start()
        inner_started.wait(5)
    assert not gc.isenabled()  # the other thread's block began later and has not ended
    outer_may_end.set()
    worker.join(5)
    assert gc.isenabled()


def test_an_error_inside_still_resumes_collection() -> None:
    try:
        with collector.long_lived():
            raise ValueError("boom")
    except ValueError:
        pass
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled() -> None:
    gc.disable()
    try:
        with collector.long_lived():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def _collect_what_earlier_tests_left() -> None:
    """A full collection here would finalize whatever earlier tests in this process left for the
    collector (an unclosed socket warns as it is freed): collected first, quietly, so the collection
    below is about this test's objects only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def test_cycles_made_while_paused_are_still_collected() -> None:
    class Node:
        pass

    _collect_what_earlier_tests_left()
    with collector.long_lived():
        a, b = Node(), Node()
        a.other, b.other = b, a  # type: ignore[attr-defined]
        probe = weakref.ref(a)
        del a, b
    assert probe() is not None  # a cycle: reference counting alone cannot free it
    gc.collect()
    assert probe() is None
