"""The cost of the zones' hashes (the DNSZone status `zoneHash`) at 100,000 records: every zone
hashed cold, and a one-record push, where a long-running agent hashes again only the zone the
commit changed (its other zones are the very same objects, their hashes kept).

    .venv/bin/python bench/zonehash_bench.py [--records 100000] [--zones 100] [--repeat 3]

Builds a Git repository of `--zones` zones (tests/support/dnsworld.py), expands it with a
long-running agent's memory (the path `bindy-agent run` takes), then changes one record of one
zone and expands again. Prints, per case: seconds to hash every zone (best of --repeat for cold;
the push is measured once, as it happens), zones hashed again, and the expansion's own time for
scale. `--zones 1` puts every record in one zone: the push then hashes that whole zone again.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

import git

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from agent.desired import zonehash
from agent.desired.placement import Zone
from agent.model.limits import Limits
from agent.run import planner
from agent.run.memory import Memory
from agent.sources import gittree
from tests.support import dnsworld


def _expand(repo: git.Repo, memory: Memory, listing: gittree.Listing) -> tuple[list[Zone], float]:
    began = time.perf_counter()
    done = planner.validate(gittree.files(repo, "HEAD", listing),
                            planner.Options(default_namespace="dns-system"),
                            limits=Limits(), memory=memory)
    assert done.desired is not None, done.problems[:3]
    return done.desired.zones, time.perf_counter() - began


def _hash_all(zones: list[Zone]) -> tuple[float, int]:
    hashed = 0
    digest = zonehash.digest

    def counting(rrsets: object) -> str:
        nonlocal hashed
        hashed += 1
        return digest(rrsets)  # type: ignore[arg-type]

    zonehash.digest = counting  # type: ignore[assignment]
    try:
        began = time.perf_counter()
        for zone in zones:
            zonehash.of(zone)
        return time.perf_counter() - began, hashed
    finally:
        zonehash.digest = digest  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--zones", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp) / "repo"
        rev = dnsworld.revision(dnsworld.zone_names(args.zones, "b"), args.records // args.zones)
        dnsworld.write_repo(root, rev)
        repo = git.Repo.init(root)
        repo.git.config("user.name", "bench")
        repo.git.config("user.email", "bench@example.com")
        repo.git.add("-A")
        repo.git.commit("-q", "-m", "zones")
        memory, listing = Memory(), gittree.Listing()
        zones, expanded = _expand(repo, memory, listing)
        records = sum(len(z.records) for z in zones)
        cold = []
        for _ in range(args.repeat):
            for zone in zones:
                zone.digest_kept = None  # as a new agent would: nothing kept
            cold.append(_hash_all(zones))
        warm = _hash_all(zones)
        path = sorted(root.glob("zone-*.yaml"))[0]
        text = path.read_text()
        assert "'gen 0 record 1'" in text
        path.write_text(text.replace("'gen 0 record 1'", "'gen 0 record 1 changed'", 1))
        repo.git.commit("-q", "-am", "one record")
        pushed, push_expanded = _expand(repo, memory, listing)
        push = _hash_all(pushed)
        repo.close()
    print(f"{records:,} records in {len(zones)} zones (expanded in {expanded:.2f} s cold, "
          f"{push_expanded:.2f} s for the push)")
    print(f"cold: every zone hashed in {min(s for s, _ in cold) * 1000:.1f} ms "
          f"({cold[0][1]} zones hashed)")
    print(f"unchanged revision: {warm[0] * 1000:.2f} ms ({warm[1]} zones hashed)")
    print(f"one-record push: {push[0] * 1000:.2f} ms ({push[1]} zone(s) hashed again)")


if __name__ == "__main__":
    main()
