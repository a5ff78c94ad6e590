"""A Git remote with one commit synced and signed by the agent and one it never handled (fixture `world`),
the report key it signs with, and what anyone with push access can do to the notes."""

from __future__ import annotations

import pathlib
import subprocess

import pytest

from tests.support.clirun import Result, main
from tests.support.gitremote import GitRemote

KEY = "k3y-" + "0123456789abcdef" * 3  # 52 characters: longer than the 32 a report key needs


class World:
    """A remote with one commit synced (and signed) by the agent, and a second one it never handled."""

    def __init__(self, tmp: pathlib.Path) -> None:
        self.tmp = tmp
        self.remote = GitRemote(tmp)
        self.key = tmp / "report.key"
        self.key.write_text(KEY + "\n")
        self.endpoints = tmp / "endpoints.yaml"
        self.endpoints.write_text("instances: {}\n")
        self.state = tmp / "state"
        self.synced = self.commit("synced by the agent")
        assert self.sync().returncode == 0
        self.foreign = self.commit("never handled by the agent")

    def commit(self, subject: str) -> str:
        sha = self.remote.commit(subject, {f"{subject.replace(' ', '-')}.yaml": "# no CRs\n"})
        self.remote.push()
        return sha

    def sync(self, *extra: str, key: bool = True) -> Result:
        return main("sync", "--repo", self.remote.url, "--endpoints", str(self.endpoints), "--state", str(self.state),
                    "--cache", str(self.tmp / "cache"), *(["--report-key-file", str(self.key)] if key else []),
                    *extra)

    def report(self, *args: str, key: bool = True, cache: str = "report-cache") -> Result:
        return main("report", *args, "--repo", self.remote.url, "--cache", str(self.tmp / cache),
                    *(["--report-key-file", str(self.key)] if key else []))

    def note(self, sha: str, ref: str = "bindy-agent") -> bytes:
        """The note on `sha` as the remote holds it, byte for byte."""
        self.remote.cmd("fetch", "-q", "origin", "+refs/notes/*:refs/notes/*")
        blob = self.remote.cmd("notes", f"--ref={ref}", "list", sha)
        return subprocess.run([self.remote.git, "-C", str(self.remote.work), "cat-file", "blob", blob], check=True,
                              capture_output=True).stdout

    def forge(self, sha: str, data: bytes, ref: str = "bindy-agent") -> None:
        """What anyone with push access can do: write any note on any commit, and push it."""
        self.remote.cmd("fetch", "-q", "origin", "+refs/notes/*:refs/notes/*")
        file = self.tmp / "forged.note"
        file.write_bytes(data)
        blob = self.remote.cmd("hash-object", "-w", str(file))
        self.remote.cmd("notes", f"--ref={ref}", "add", "-f", "-C", blob, sha)
        self.remote.cmd("push", "-q", "-f", "origin", f"refs/notes/{ref}")


@pytest.fixture
def world(tmp_path: pathlib.Path) -> World:
    return World(tmp_path)
