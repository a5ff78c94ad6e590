"""One run at a time per source: an OS file lock (flock) held for the whole run.

A second run on the same source waits up to `wait` seconds, then gives up naming the holder. The
kernel drops the lock when its holder dies, so a killed run never leaves a stale lock behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pathlib
import time
from collections.abc import Iterator

from agent.errors import AgentError
from agent.model import names


class Busy(AgentError):
    """Another run holds the lock."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def _holder(path: pathlib.Path, fd: int, *, patience: float = 1.0) -> str | None:
    """The pid the holder wrote; None when the lock came free meanwhile and is now ours. The holder
    writes its pid just after locking (and clears it on release, which a killed holder cannot): an
    empty file or a dead pid means that moment is now, so look again briefly."""
    until = time.monotonic() + patience
    while True:
        try:
            text = path.read_text().strip()
        except OSError:
            text = ""
        if text.isdigit() and _alive(int(text)):
            return f"pid {text}"
        if _take(fd):  # the holder finished while we looked: nobody to wait for
            return None
        if time.monotonic() >= until:
            return "unknown pid"
        time.sleep(0.02)


def _take(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextlib.contextmanager
def held(path: pathlib.Path, *, wait: float = names.DEFAULT_LOCK_WAIT) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    locked = False
    try:
        deadline = time.monotonic() + wait
        while not (locked := _take(fd)):
            if time.monotonic() >= deadline:
                holder = _holder(path, fd)
                if holder is None:
                    locked = True
                    break
                raise Busy(f"another sync is running ({holder}); waited {wait:.0f} s for it (lock "
                           f"{path})")
            time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        if locked:
            os.ftruncate(fd, 0)  # no stale pid for the next one to report
        os.close(fd)  # closing the descriptor releases the lock
