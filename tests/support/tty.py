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
        timeout: float = 120) -> Result:
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
        proc = subprocess.run(list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=slave, timeout=timeout, check=False)
    finally:
        os.close(slave)
        reader.join(10)
        os.close(master)
    return Result(proc.returncode, proc.stdout.decode(), b"".join(chunks).decode(errors="replace"))
