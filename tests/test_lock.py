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
