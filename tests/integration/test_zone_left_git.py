"""A zone that leaves Git keeps the data the agent did not write, and only `--force` deletes it: a Git remote
synced onto real named and zone APIs, the end state read back by AXFR of the primary and the secondary."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time
from typing import Any

from agent.outcome import report
from tests.conftest import ROOT
from tests.support import bind as bind_support
from tests.support import dnsworld
from tests.support.gitremote import GitRemote


def _agent(*args: str, timeout: float = 200) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, check=False)


# -- 11. a zone that leaves Git keeps what the agent did not write ------------------------------------
def _others(served: dnsworld.Served | None, zone: str) -> dict[tuple[str, str], tuple[int, tuple[str, ...]]]:
    """What a server serves in `zone` besides its SOA and apex NS."""
    assert served is not None, f"{zone} is not served"
    return {k: v for k, v in served.items() if k[1] != "SOA" and not (k[0] == f"{zone}." and k[1] == "NS")}


def test_a_zone_removed_from_git_keeps_foreign_data_and_only_force_deletes_it(
        tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: dict[str, Any]) -> None:
    doomed, kept = dnsworld.zone_names(2)
    world = dnsworld.Dns(bind, zone_api, dnsworld.endpoint_map(tmp_path / "endpoints", bind, zone_api))
    rev = {**dnsworld.revision([doomed], 5), **dnsworld.revision([kept], 3)}
    cli = ["sync", "--repo", git_remote.url, "--cache", str(tmp_path / "cache"), "--endpoints",
           str(world.endpoints), "--state", str(tmp_path / "state")]
    dnsworld.push_revision(git_remote, rev, "Two zones")
    first = _agent(*cli)
    assert first.returncode == 0, first.stderr
    acme = f'"cert-manager token for {doomed}"'
    world.update(doomed, lambda u: u.add("_acme-challenge", 60, "TXT", acme))  # cert-manager's, not the agent's

    rest = {kept: rev[kept]}
    sha = dnsworld.push_revision(git_remote, rest, "Drop the doomed zone")
    second = _agent(*cli)
    assert second.returncode == 1, second.stderr  # partial: the zone Git dropped is still there
    why = (f"{doomed}.: zone kept on 2 server(s) although it left Git: it holds 1 RRset(s) the agent did not write "
           f"(_acme-challenge.{doomed}. TXT); the agent's own RRsets in it are deleted; `--force` deletes the zone "
           "with them")
    assert f"conflict: {why}" in second.stderr.splitlines(), second.stderr
    note = git_remote.note_seen_by_a_fresh_clone(tmp_path / f"fresh-{sha[:8]}", sha)
    assert note.startswith(f"bindy-agent: partial {sha[:12]}"), note
    assert f"conflict: {why}" in note.splitlines(), note
    assert why in report.parse(note)["conflicts"]
    only_acme = {(f"_acme-challenge.{doomed}.", "TXT"): (60, (acme,))}
    for server in world.servers:  # the agent's 5 RRsets gone, the foreign TXT served, the zone still there
        deadline = time.monotonic() + 15
        while _others(world.axfr(server, doomed), doomed) != only_acme and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _others(world.axfr(server, doomed), doomed) == only_acme, server.name
    found = dnsworld.converged(world, rest)
    assert all(d.clean for d in found), dnsworld.summary(found)

    again = _agent(*cli)  # nothing changed: still kept, still said
    assert again.returncode == 1, again.stderr
    assert f"conflict: {why}" in again.stderr.splitlines(), again.stderr
    assert _others(world.axfr(bind.primary, doomed), doomed) == only_acme

    forced = _agent(*cli, "--force")
    assert forced.returncode == 0, forced.stderr
    found = dnsworld.converged(world, rest, gone=[doomed])
    assert all(d.clean for d in found), dnsworld.summary(found)
    assert world.axfr(bind.primary, doomed) is None and world.axfr(bind.secondary, doomed) is None
