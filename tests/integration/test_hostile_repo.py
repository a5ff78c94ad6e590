"""A hostile commit through `bindy-agent sync --repo`, against a real Git remote and a real named
pair: symbolic links to a file on the agent's machine and to /dev/zero, and an alias bomb, are
refused with file:line, reach neither the output, the commit's note nor named; the same record
committed as a regular file is published (so the checks below can see a leak)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time
from typing import Any

import pytest

from agent.clients import axfr
from agent.clients import endpoints as config
from agent.clients import rfc2136 as records
from agent.outcome import report
from tests.conftest import ROOT
from tests.support import bind as bind_support
from tests.support import dnsrepo
from tests.support.gitremote import GitRemote

SECRET = "s3cr3t-on-the-agent-host"


@pytest.fixture
def world(tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any) -> dict[str, Any]:
    sample, tag = dnsrepo.unique_sample(tmp_path / "sample")
    endpoints_file = dnsrepo.endpoint_map(tmp_path, bind, zone_api)
    secret = tmp_path / "agent-home" / "secret.yaml"  # a file the agent can read, outside the repository
    secret.parent.mkdir()
    secret.write_text(_leak(tag))
    return {"remote": git_remote, "tag": tag, "tmp": tmp_path, "secret": secret, "endpoints_file": endpoints_file,
            "endpoints": config.load_endpoints(endpoints_file),
            "files": {str(p.relative_to(sample)): p.read_text() for p in sample.rglob("*.yaml")}}


def _leak(tag: str) -> str:
    return f"""apiVersion: bindy.firestoned.io/v1beta1
kind: TXTRecord
metadata: {{name: leak, namespace: dns-system, labels: {{zone: example-com}}}}
spec: {{name: leak, text: ["{SECRET}"]}}
"""


def _sync(world: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    cli = [sys.executable, "-m", "agent", "sync", "--repo", world["remote"].url, "--endpoints",
           str(world["endpoints_file"]), "--state", str(world["tmp"] / "state.json"), "--cache",
           str(world["tmp"] / "cache")]
    return subprocess.run(cli, capture_output=True, text=True, cwd=ROOT, check=False, timeout=120)


def _zones(world: dict[str, Any]) -> dict[str, Any]:
    primary = world["endpoints"]["dns-system/dns-primary-0"]
    return {z: axfr.read_zone(primary, z) for z in (f"example-{world['tag']}.{tld}." for tld in ("com", "org"))}


def _note(world: dict[str, Any], sha: str) -> str:
    return str(world["remote"].note_seen_by_a_fresh_clone(world["tmp"] / f"clone-{sha[:8]}", sha))


def test_links_out_of_the_repository_and_an_alias_bomb_reach_nothing(world: dict[str, Any]) -> None:
    remote, tag = world["remote"], world["tag"]
    remote.commit("Initial DNS", world["files"])
    remote.push()
    assert _sync(world).returncode == 0
    before = _zones(world)

    links = remote.work / "records" / "example-com"
    os.symlink(world["secret"], links / "leak.yaml")
    os.symlink(os.path.relpath(world["secret"], links), links / "climb.yaml")
    os.symlink("/dev/zero", links / "zero.yaml")
    bomb = ['    x-a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'] + [
        f"    x-{n}: &{n} [" + ", ".join([f"*{p}"] * 9) + "]" for p, n in zip("abcdef", "bcdefg", strict=True)]
    sha = remote.commit("Hostile", {"infrastructure/bomb.yaml": "apiVersion: bindy.firestoned.io/v1beta1\n"
                                    "kind: Bind9Instance\nmetadata: {name: i, namespace: dns-system}\nspec:\n"
                                    "  clusterRef: dns\n  role: primary\n  volumes:\n  - name: v\n"
                                    + "\n".join(bomb) + "\n"})
    remote.push()
    started = time.monotonic()
    done = _sync(world)
    assert time.monotonic() - started < 60
    assert done.returncode == 2, done.stderr
    for line in (
        "records/example-com/leak.yaml:1: not read: a symbolic link pointing outside the repository "
        f"(-> '{world['secret']}'); links may only point at files inside it - commit the file itself instead",
        "records/example-com/climb.yaml:1: not read: a symbolic link pointing outside the repository",
        "records/example-com/zero.yaml:1: not read: a symbolic link pointing outside the repository (-> '/dev/zero')",
        "infrastructure/bomb.yaml:13: YAML aliases of the anchor at this line expand the document by",
        f"rejected {sha}: 4 validation errors; nothing applied; the last good revision keeps serving",
    ):
        assert line in done.stderr, (line, done.stderr)
    assert SECRET not in done.stdout + done.stderr
    note = _note(world, sha)
    assert report.parse(note)["outcome"] == "rejected" and SECRET not in note
    assert _zones(world) == before  # named: nothing changed, nothing published
    primary = world["endpoints"]["dns-system/dns-primary-0"]
    assert records.query(primary, f"leak.example-{tag}.com.", "TXT") == ()  # answered: no such record

    # the control: committed as a regular file, the same record is published and seen by the checks above
    for name in ("leak.yaml", "climb.yaml", "zero.yaml"):
        (links / name).unlink()
    remote.commit("Regular file", {"records/example-com/leak.yaml": _leak(tag), "infrastructure/bomb.yaml": None})
    remote.push()
    assert _sync(world).returncode == 0
    assert records.query(primary, f"leak.example-{tag}.com.", "TXT") == (f'"{SECRET}"',)
