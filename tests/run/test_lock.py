"""One run at a time: the waiter names the holder's pid, never a stale or missing one."""

from __future__ import annotations

import os
import pathlib
import threading

import pytest

from agent.run import lock


def test_a_second_run_is_told_the_holders_pid_and_a_released_lock_names_nobody(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "repo.lock"
    path.write_text("999999999\n")  # left by a holder that was SIGKILLed: that pid is gone
    inside, release = threading.Event(), threading.Event()

    def holder() -> None:
        with lock.held(path, wait=0):
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert inside.wait(10)
        with pytest.raises(lock.Busy, match=rf"another sync is running \(pid {os.getpid()}\); waited 0 s"), \
                lock.held(path, wait=0):
            pass
    finally:
        release.set()
        thread.join(10)
    assert path.read_text() == ""  # released: no pid for the next waiter to report
    with lock.held(path, wait=0):
        assert path.read_text() == f"{os.getpid()}\n"


def test_a_holder_that_finishes_while_it_is_looked_up_leaves_the_lock_to_the_caller(tmp_path: pathlib.Path) -> None:
    """--lock-wait 0 against a run that ends that very moment: the caller runs, not "unknown pid"."""
    import fcntl

    path = tmp_path / "repo.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)  # held, its pid not written yet (or already cleared)
    threading.Timer(0.3, os.close, [fd]).start()
    with lock.held(path, wait=0):
        assert path.read_text().strip() == str(os.getpid())
