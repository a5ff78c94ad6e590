"""A million records (issue 28): 1,000,000 records in 10,000 zones, as a user would run them.

    .venv/bin/python bench/million_bench.py plan [--records 1000000] [--dir DIR] [--formats json]
                                                 [--no-first-byte]
    .venv/bin/python bench/million_bench.py dns  [--records 1000000] [--rounds 3] [--raw-zones 100]

Past 100,000 records the default read limits refuse the repository (agent/model/limits.py: 5,000,000
YAML nodes, 250,000 documents, 64 MiB of YAML); both parts pass the settings README's "A million
records" gives (`limit_flags`): ten times each default.

  plan  bench/plan_stream_bench.py with those flags: `validate` and `plan -o FORMAT` as whole
        processes against a bare C-loader parse of the same files, wall, CPU and peak RSS
        (--formats: which plans; --no-first-byte skips the extra run timing the first byte).
  dns   bench/scale_bench.py's world (a real named primary + secondary with the zone API, a Git
        remote, `bindy-agent run`) at N records: the first sync (zones, then records; the record
        step against raw batched UPDATEs of --raw-zones zones, scaled to all), one-record pushes ->
        served on both (median of --rounds; target < 1 s) beside one raw UPDATE, a webhook with no
        new commit, a no-change full reconcile (--resync-after 0) and the cold start of that agent,
        the peak RSS of each running agent (VmHWM; target <= 3 GB), the end state by AXFR.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import pathlib
import random
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from agent.model.limits import Limits, MiB, flag  # noqa: E402

MILLION = Limits(max_revision_bytes=640 * MiB, max_documents=2_500_000, max_nodes=50_000_000)
"""What README's "A million records" tells a user to set: ten times each default that 1,000,000
records pass (about 200 MB of YAML, 1.01 million documents, 23 million nodes)."""


def limit_flags(limits: Limits = MILLION) -> list[str]:
    """The flags (of validate, plan, sync and run) that set `limits` where they differ from the defaults."""
    default = Limits()
    return [arg for f in dataclasses.fields(Limits) if getattr(limits, f.name) != getattr(default, f.name)
            for arg in (flag(f.name), str(getattr(limits, f.name)))]


def _log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)


# -- plan: whole processes ----------------------------------------------------------------------------
def plan_part(args: argparse.Namespace) -> None:
    import parse_bench
    import plan_stream_bench

    plan_stream_bench.FLAGS.extend(limit_flags())
    keep = {"bare parse", "validate", *(f"plan -o {f}" for f in args.formats.split(","))}
    every = plan_stream_bench.commands
    plan_stream_bench.commands = lambda root: {k: v for k, v in every(root).items() if k in keep}
    if args.no_first_byte:
        plan_stream_bench.first_byte = lambda argv: (math.nan, math.nan)
    with tempfile.TemporaryDirectory(prefix="bindy-million-") as tmp:
        root = args.dir or pathlib.Path(tmp) / "repo"
        if not root.exists():
            root.mkdir(parents=True)
            parse_bench.generate(root, args.records, zones=max(1, args.records // 100))
        print(f"{args.records:,} records, {max(1, args.records // 100):,} zones; flags {' '.join(limit_flags())}")
        plan_stream_bench.run(root, args.repeat)


# -- dns: the running agent -----------------------------------------------------------------------------
def peak_mib(pid: int) -> float:
    """A live process's peak RSS (VmHWM) in MiB."""
    status = pathlib.Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) / 1024


def raw_sample(world: Any, zones: int) -> tuple[float, int]:
    """scale_bench.raw_batched on `zones` zones picked at random (seconds, zones)."""
    import scale_bench

    picked = random.Random(28).sample(world.zones, min(zones, len(world.zones)))
    return scale_bench.raw_batched(dataclasses.replace(world, rev={z: world.rev[z] for z in picked})), len(picked)


def dns_part(args: argparse.Namespace) -> dict[str, Any]:
    import scale_bench

    from tests.support import bind as bind_support
    from tests.support import dnsworld
    from tests.support import zone_api as zone_api_support
    from tests.support.gitremote import GitRemote

    n, rounds = args.records, args.rounds
    tmp = tempfile.TemporaryDirectory(prefix="bindy-million-")
    work = pathlib.Path(tmp.name)
    zones = dnsworld.zone_names(max(1, n // 100))
    _log(f"starting named pair and zone APIs in {work}")
    pair = bind_support.start_pair(work / "bind")
    token = uuid.uuid4().hex
    apis = {"primary": zone_api_support.ZoneApi(pair.primary, token).start(),
            "secondary": zone_api_support.ZoneApi(pair.secondary, token).start()}
    agents: list[Any] = []
    out: dict[str, Any] = {"records_wanted": n, "zones": len(zones), "flags": limit_flags()}
    try:
        world = scale_bench.World(work, dnsworld.Dns(pair, apis, dnsworld.endpoint_map(
            work / "endpoints", pair, apis, namespace=scale_bench.NAMESPACE)), GitRemote(work / "git"), zones,
            dnsworld.revision(zones, 100), work / "cache", work / "state")
        out["records"] = dnsworld.records(world.rev)
        _log(f"first sync of {out['records']:,} records in {len(zones):,} zones")
        out.update(scale_bench.first_sync(world, MILLION))
        _log(f"first sync: {json.dumps(out)}")
        out["raw_batched_sample"], out["raw_batched_zones"] = raw_sample(world, args.raw_zones)
        out["raw_one"] = scale_bench.raw_one(world, max(rounds, 5))
        commits = scale_bench._one_record_commits(world)

        _log("agent (resync after 600 s): start-up run")
        agent = scale_bench.Agent(world, *limit_flags())
        agents.append(agent)
        out["start_run"] = agent.wait_runs(1, timeout=7200)
        out["start_peak_mib"] = peak_mib(agent.proc.pid)
        _log(f"start-up run {out['start_run']:.1f} s; pushes")
        out["first_push"] = scale_bench.push_rounds(world, agent, 1, commits)[0]
        agent.wait_runs(2)
        out["push"] = scale_bench.push_rounds(world, agent, rounds, commits)
        agent.wait_runs(2 + rounds)
        out["idle"] = scale_bench.idle_rounds(agent, rounds)
        out["agent_peak_mib"] = peak_mib(agent.proc.pid)
        agent.stop()
        _log(f"pushes {out['push']}; agent peak {out['agent_peak_mib']:.0f} MiB; full-reconcile agent")

        full = scale_bench.Agent(world, "--resync-after", "0", *limit_flags())
        agents.append(full)
        out["cold_start"] = full.wait_runs(1, timeout=7200)
        _log(f"cold start {out['cold_start']:.1f} s; no-change reconciles")
        out["full_reconcile"] = scale_bench.idle_rounds(full, rounds)
        out["full_peak_mib"] = peak_mib(full.proc.pid)
        full.stop()
        _log("end state (AXFR of both servers)")
        start = time.perf_counter()
        found = dnsworld.converged(world.dns, world.rev, timeout=120)
        out["end_state_s"] = time.perf_counter() - start
        out["end_state"] = dnsworld.summary(found)
        out["clean"] = all(d.clean for d in found)
    finally:
        for a in agents:
            a.stop()
        for api in apis.values():
            api.stop()
        pair.stop()
        tmp.cleanup()
    return out


def _s(x: float) -> str:
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.1f} s"


def dns_table(r: dict[str, Any]) -> list[str]:
    med = statistics.median
    scaled = r["raw_batched_sample"] * r["zones"] / r["raw_batched_zones"]
    push, floor = med(r["push"]), med(r["raw_one"])
    peak = max(r["agent_peak_mib"], r["full_peak_mib"])
    n = f"{r['records']:,} records, {r['zones']:,} zones"
    return [
        f"| figure ({n}) | bindy-agent | baseline (same run) | ratio | target |",
        "| --- | --- | --- | --- | --- |",
        f"| first sync: whole run (zones / records) | {_s(r['zones_run'])} / {_s(r['records_run'])} | | | (info) |",
        f"| first sync: record step (UPDATEs + verification on both) | {_s(r['records_dns'])} | raw batched UPDATEs, "
        f"{r['raw_batched_zones']} zones scaled to {r['zones']:,}: {_s(scaled)} | {r['records_dns'] / scaled:.2f}x "
        "| <= 1.5x |",
        f"| agent start-up run (reconciles the applied revision) / first push after it | {_s(r['start_run'])} / "
        f"{_s(r['first_push'])} | | | (info) |",
        f"| push -> served on primary + secondary (median of {len(r['push'])}; min {_s(min(r['push']))}, max "
        f"{_s(max(r['push']))}) | {_s(push)} | one raw UPDATE {_s(floor)} | {push / floor:.0f}x | < 1 s "
        f"{'met' if push < 1 else 'NOT met'} |",
        f"| webhook with no new commit | {_s(med(r['idle']))} | | | (info) |",
        f"| no-change full reconcile (--resync-after 0: revision re-read, SOA of every zone) | "
        f"{_s(med(r['full_reconcile']))} | | | (info) |",
        f"| agent start, cold (every file parsed, every zone transferred) | {_s(r['cold_start'])} | | | (info) |",
        f"| peak RSS of the running agent (after its pushes / of the --resync-after 0 agent) | "
        f"{r['agent_peak_mib']:.0f} / {r['full_peak_mib']:.0f} MiB | | | <= 3 GB "
        f"{'met' if peak * MiB <= 3e9 else 'NOT met'} |",
        f"| end state (AXFR of primary and secondary, {_s(r['end_state_s'])}) | {r['end_state']} | | | clean "
        f"{'met' if r['clean'] else 'NOT met'} |",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", choices=("plan", "dns"))
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1, help="plan: runs of each process (best is shown)")
    parser.add_argument("--dir", type=pathlib.Path, help="plan: the generated repository (made if missing; kept)")
    parser.add_argument("--formats", default="json", help="plan: json,text,markdown")
    parser.add_argument("--no-first-byte", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="dns: pushes, idle webhooks, full reconciles")
    parser.add_argument("--raw-zones", type=int, default=100, help="dns: zones of the raw batched baseline")
    parser.add_argument("--json", type=pathlib.Path, help="dns: also write the raw results here")
    args = parser.parse_args()
    if args.part == "plan":
        plan_part(args)
        return 0
    result = dns_part(args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, default=str))
    import scale_bench

    print(f"machine: {scale_bench.machine()}")
    print("\n".join(dns_table(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
