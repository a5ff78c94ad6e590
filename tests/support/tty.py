"""Runs a command with its stderr on a real pseudo-terminal (python's pty), as a person at a terminal
would, and returns what the terminal received byte for byte."""

from __future__ import annotations

import dataclasses
import os
import pty
import subprocess
import threading
from collections.abc import Sequence


@dataclasses.dataclass
class Result:
    returncode: int
    stdout: str
    terminal: str  # what stderr wrote to the terminal, control sequences included


def run(argv: Sequence[str], *, cwd: str | os.PathLike[str], env: dict[str, str] | None = None,
        timeout: float = 120, stdout_too: bool = False) -> Result:
    """With `stdout_too`, stdout is on a terminal of its own as well (Result.stdout: what it received)."""
    if stdout_too:
        out = _Terminal()
        try:
            inner = _run(argv, cwd=cwd, env=env, timeout=timeout, stdout_fd=out.slave)
        finally:
            out.close()
        return Result(inner.returncode, out.received(), inner.terminal)
    return _run(argv, cwd=cwd, env=env, timeout=timeout)


class _Terminal:
    """A pseudo-terminal whose output is read in the background."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        self.chunks: list[bytes] = []
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self.master, 4096)
            except OSError:  # EIO: the last writer closed the terminal
                return
            if not data:
                return
            self.chunks.append(data)

    def close(self) -> None:
        os.close(self.slave)
        self.reader.join(10)
        os.close(self.master)

    def received(self) -> str:
        return b"".join(self.chunks).decode(errors="replace").replace("\r\n", "\n")


def _run(argv: Sequence[str], *, cwd: str | os.PathLike[str], env: dict[str, str] | None = None,
         timeout: float = 120, stdout_fd: int | None = None) -> Result:
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the last writer closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        proc = subprocess.run(list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE if stdout_fd is None else stdout_fd,
                              stderr=slave, timeout=timeout, check=False)
    finally:
        os.close(slave)
        reader.join(10)
        os.close(master)
    return Result(proc.returncode, (proc.stdout or b"").decode(), b"".join(chunks).decode(errors="replace"))
