"""`bindy-agent sync --repo` of one large commit, as a user runs it, and the report it leaves.

    .venv/bin/python bench/large_sync_bench.py [--records 50000] [--per-zone 100]

Starts a real named pair and the zone API test server (tests/support; run scripts/install-test-deps
first), commits a generated repository (A, TXT and CNAME records, `--per-zone` per zone) to a local
Git remote, and times, each as a CLI process: the first sync (zones created, every RRset written and
verified on primary and secondary, the note pushed), a second sync of a new commit changing every
record, a sync with nothing new (no fetch, no parse), and `report <sha> -o json`. Prints the times,
the note's size and the number of changes in the full report, and checks that both servers serve
every RRset of the last commit (AXFR).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from tests.support import bind as bind_support
from tests.support import dnsworld
from tests.support import zone_api as zone_api_support
from tests.support.gitremote import GitRemote

ROOT = pathlib.Path(__file__).resolve().parent.parent


def agent(*args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "agent", *args], capture_output=True, text=True, cwd=ROOT,
                          check=False)
    return time.perf_counter() - start, done


def commit(remote: GitRemote, rev: dnsworld.Revision, message: str) -> str:
    dnsworld.write_repo(remote.work, rev)
    sha = remote.commit(message, {})
    remote.push()
    return sha


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--per-zone", type=int, default=100)
    args = parser.parse_args()
    zones = dnsworld.zone_names(max(1, args.records // args.per_zone))
    with tempfile.TemporaryDirectory(prefix="bindy-large-") as tmp_name:
        tmp = pathlib.Path(tmp_name)
        pair = bind_support.start_pair(tmp / "bind")
        token = uuid.uuid4().hex
        apis = {"primary": zone_api_support.ZoneApi(pair.primary, token).start(),
                "secondary": zone_api_support.ZoneApi(pair.secondary, token).start()}
        try:
            world = dnsworld.Dns(pair, apis, dnsworld.endpoint_map(tmp / "endpoints", pair, apis))
            remote = GitRemote(tmp / "git")
            cli = ["sync", "--repo", remote.url, "--cache", str(tmp / "cache"), "--state", str(tmp / "state"),
                   "--endpoints", str(world.endpoints), "--deadline", "3600"]
            rows = []
            for generation, label in ((0, "first sync (create everything)"), (1, "new commit changing every record")):
                rev = dnsworld.revision(zones, args.per_zone, generation=generation)
                sha = commit(remote, rev, f"{dnsworld.records(rev)} records, generation {generation}")
                took, done = agent(*cli)
                if done.returncode != 0:
                    print(done.stderr[-3000:], file=sys.stderr)
                    return 1
                rows.append((label, took, done.stderr.strip().splitlines()[-1][:110]))
            took, done = agent(*cli)
            rows.append(("same head again (no-op)", took, done.stderr.strip().splitlines()[-1][:110]))
            took, shown = agent("report", sha, "--repo", remote.url, "--cache", str(tmp / "report-cache"), "-o", "json")
            changes = len(json.loads(shown.stdout)["changes"])
            rows.append(("report <sha> -o json", took, f"{changes:,} changes"))
            note = subprocess.run(["git", "-C", str(remote.bare), "notes", "--ref=bindy-agent", "show", sha],
                                  capture_output=True, text=True, check=True).stdout
            found = dnsworld.converged(world, rev, timeout=30)
        finally:
            for api in apis.values():
                api.stop()
            pair.stop()
    print(f"{dnsworld.records(rev):,} records in {len(zones)} zones, named primary + secondary, CLI processes:")
    for label, took, detail in rows:
        print(f"  {label:<34} {took:7.1f} s   {detail}")
    print(f"  note: {len(note):,} bytes, {len(note.splitlines())} lines; end state: {dnsworld.summary(found)}")
    return 0 if all(d.clean for d in found) else 1


if __name__ == "__main__":
    sys.exit(main())
