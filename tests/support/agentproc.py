"""`bindy-agent run` as a real process on a free loopback port, with its JSON log in a file."""

from __future__ import annotations

import hashlib
import hmac
import os
import pathlib
import re
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support.procs import free_port, wait_for

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent


class AgentProcess:
    def __init__(self, workdir: pathlib.Path, *, repo: str, endpoints: pathlib.Path,
                 secret_file: pathlib.Path | None = None, extra: Sequence[str] = (),
                 state: pathlib.Path | None = None, env: Mapping[str, str] | None = None,
                 until: str = "/readyz", push_notes: bool = False) -> None:
        """`state`: the state directory (default: one of this process's own); `env`: added to the
        environment (BINDY_AGENT_* settings); `until`: the path that answers 200 once it has started
        (/healthz for an agent that will not be ready: suspended, or detecting with nothing applied);
        `push_notes`: push the commit reports to the remote (default: kept in the clone)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / f"agent-{self.port}.log"
        self.state = state or workdir / f"state-{self.port}.json"
        argv = [sys.executable, "-m", "agent", "run", "--repo", repo, "--endpoints", str(endpoints),
                "--state", str(self.state), "--cache", str(workdir / f"cache-{self.port}"),
                "--interval", "3600", "--jitter", "0", "--listen", f"127.0.0.1:{self.port}",
                *([] if push_notes else ["--no-push-notes"]),
                *(["--webhook-secret-file", str(secret_file)] if secret_file else []), *extra]
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(argv, cwd=ROOT, stderr=out, env={**os.environ, **(env or {})})
        wait_for(lambda: self.get(until) == 200 or self.proc.poll() is not None, 30)
        assert self.proc.poll() is None, self.log.read_text()

    def get(self, path: str) -> int:
        try:
            return httpx.get(self.url + path, timeout=2).status_code
        except httpx.TransportError:
            return 0

    def poke(self, secret: bytes) -> int:
        """A signed push webhook (GitHub's signature), as a Git server sends after a push: starts a run."""
        body = b'{"ref": "refs/heads/main"}'
        signature = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        return httpx.post(self.url + "/hooks/git", content=body, headers={"X-Hub-Signature-256": signature},
                          timeout=5).status_code

    def log_lines(self) -> list[str]:
        return self.log.read_text().splitlines()

    def status(self, field: str) -> int:
        """A number from /proc/<pid>/status, e.g. VmRSS (KiB) or Threads."""
        text = pathlib.Path(f"/proc/{self.proc.pid}/status").read_text()
        match = re.search(rf"^{field}:\s+(\d+)", text, re.MULTILINE)
        assert match, field
        return int(match.group(1))

    def metric(self, name: str, **labels: str) -> float:
        """The sum of the samples of `name` (with these labels) on /metrics."""
        text = httpx.get(self.url + "/metrics", timeout=5).text
        return sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
                   if sample.name == name and labels.items() <= sample.labels.items())

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)
        return self.proc.returncode
