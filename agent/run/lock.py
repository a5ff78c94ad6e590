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


def _holder(path: pathlib.Path, *, patience: float = 1.0) -> str:
    """The pid the holder wrote. It writes it just after locking (and clears it on release, a killed
    holder cannot): an empty file or a dead pid means that moment is now, so look again briefly."""
    until = time.monotonic() + patience
    while True:
        try:
            text = path.read_text().strip()
        except OSError:
            text = ""
        if text.isdigit() and _alive(int(text)):
            return f"pid {text}"
        if time.monotonic() >= until:
            return "unknown pid"
        time.sleep(0.02)


@contextlib.contextmanager
def held(path: pathlib.Path, *, wait: float = names.DEFAULT_LOCK_WAIT) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    locked = False
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                locked = True
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise Busy(f"another sync is running ({_holder(path)}); waited {wait:.0f} s for it "
                               f"(lock {path})") from None
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        if locked:
            os.ftruncate(fd, 0)  # no stale pid for the next one to report
        os.close(fd)  # closing the descriptor releases the lock
