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


class Busy(AgentError):
    """Another run holds the lock."""


def _holder(path: pathlib.Path) -> str:
    try:
        pid = path.read_text().strip()
    except OSError:
        return "unknown pid"
    return f"pid {pid}" if pid else "unknown pid"


@contextlib.contextmanager
def held(path: pathlib.Path, *, wait: float = 30) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise Busy(f"another sync is running ({_holder(path)}); waited {wait:.0f} s for it "
                               f"(lock {path})") from None
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
