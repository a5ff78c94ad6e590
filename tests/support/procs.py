"""Starting, waiting for and stopping the real components, with their logs kept for failures."""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

CACHE = pathlib.Path(os.environ.get("BINDY_AGENT_CACHE", pathlib.Path.home() / ".cache" / "bindy-agent"))
FIX = "run scripts/install-test-deps (as root) to install or build it"


class ComponentError(RuntimeError):
    """A real component could not start; the message names it and how to fix it."""


def free_port(host: str = "127.0.0.1") -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def require(binary: str, *, component: str) -> str:
    found = shutil.which(binary) or (str(CACHE / "kube" / "bin" / binary)
                                     if (CACHE / "kube" / "bin" / binary).exists() else None)
    if not found:
        raise ComponentError(f"{component}: `{binary}` not found; {FIX}")
    return found


class Process:
    """One child process whose stdout+stderr go to a log file."""

    def __init__(self, name: str, argv: Sequence[str], log: pathlib.Path, **kwargs: object) -> None:
        self.name, self.argv, self.log, self._kwargs = name, list(argv), log, kwargs
        self._fh = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = self._spawn()

    def _spawn(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(self.argv, stdout=self._fh, stderr=subprocess.STDOUT,  # type: ignore[call-overload]
                                start_new_session=True, **self._kwargs)

    def signal(self, sig: signal.Signals) -> None:
        """Sends `sig` to the process (and its group): SIGKILL, SIGSTOP, SIGCONT ... as a fault would."""
        os.killpg(self.proc.pid, sig)

    def kill(self) -> None:
        """SIGKILL, as the OOM killer or a node failure would: no chance to clean up."""
        self.signal(signal.SIGKILL)
        self.proc.wait(10)

    def restart(self) -> None:
        """Starts the same command again (same config, same data directory), appending to the log."""
        if self.proc.poll() is None:
            raise ComponentError(f"{self.name} is still running (pid {self.proc.pid}); kill it first")
        self._fh.close()
        self._fh = open(self.log, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = self._spawn()

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def wait_until(self, check: Callable[[], bool], *, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ComponentError(f"{self.name} exited with {self.proc.returncode} before {what}:\n"
                                     f"$ {' '.join(self.argv)}\n{self.tail()}")
            try:
                if check():
                    return
            except Exception:
                pass
            time.sleep(0.1)
        raise ComponentError(f"{self.name} not {what} after {timeout:.0f}s:\n$ {' '.join(self.argv)}\n{self.tail()}")

    def stop(self, timeout: float = 10) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout)
        self._fh.close()


T = TypeVar("T")


def wait_for(check: Callable[[], object], timeout: float = 30, *, every: float = 0.1) -> float:
    """Polls `check` until it returns something truthy; fails the test after `timeout` seconds.
    Returns the seconds it took."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"condition not met within {timeout:.0f} s")
        time.sleep(every)
    return time.monotonic() - start


def until(what: str, check: Callable[[], T], timeout: float = 60, *, every: float = 0.3) -> T:
    """Polls `check` until it returns something truthy, and returns that; fails the test, naming
    `what`, after `timeout` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = check()
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


def run(argv: Sequence[str], **kwargs: object) -> str:
    result = subprocess.run(list(argv), capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        raise ComponentError(f"$ {' '.join(argv)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return str(result.stdout)
