"""Where a one-record push's time goes, in process: scale_bench's world (N records in N/100 zones, a
real named primary + secondary with the zone API, a Git remote), the agent of `bindy-agent run`
built in this process (run_agent.Agent, not started: its worker's `run_once` is called directly),
then one-record pushes, each timed step by step (RunOutcome.steps) and by the functions in `WRAPPED`
("parts"), from the run's start until its first UPDATE is sent and until both servers serve the new
value, against the raw floor (one TSIG UPDATE served on both, just before each round); with
--profile, as many rounds again under cProfile (their slowest functions printed, their times not).
Develop with it at 10k-30k records: at 100,000 the first sync alone takes minutes.

    .venv/bin/python bench/push_profile.py [--size 30000] [--rounds 5] [--profile] [--top 40]
"""

from __future__ import annotations

import argparse
import cProfile
import pathlib
import pstats
import statistics
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import scale_bench

# functions timed apart within each push (seconds per round, printed as "parts")
WRAPPED = [("agent.sources.git.GitSource", "remote_head"), ("agent.sources.git.GitSource", "fetch"),
           ("agent.sources.git.GitSource", "commits_between"), ("agent.sources.gittree", "files"),
           ("agent.sources.gittree", "list_tree"), ("agent.sources.gittree", "_unsound"),
           ("agent.load.loader", "load_files"), ("agent.desired.zoneset", "place"),
           ("agent.desired.hierarchy", "build"), ("agent.observe.dnsobserve", "observe"),
           ("agent.observe.dnsobserve", "zones_of_waiting"), ("agent.plan.build", "build"),
           ("agent.reconcile.dnsapply", "apply"), ("agent.run.memorize", "after_run"),
           ("agent.run.orchestrator._Run", "_finish"), ("agent.run.runtrace.RunTrace", "finish"),
           ("agent.run.orchestrator._Run", "_next_state")]


def _module(dotted: str) -> object:
    """The module, or the class in a module, that `dotted` names."""
    import importlib

    try:
        return importlib.import_module(dotted)
    except ImportError:
        owner, _, cls = dotted.rpartition(".")
        return getattr(importlib.import_module(owner), cls)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=30_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()

    from agent.cli import _parser
    from agent.run import agent as run_agent
    from agent.run import settings as config
    from tests.support import bind as bind_support
    from tests.support import dnsworld, procs
    from tests.support import zone_api as zone_api_support
    from tests.support.gitremote import GitRemote

    with tempfile.TemporaryDirectory(prefix="bindy-pushprof-") as tmp:
        work = pathlib.Path(tmp)
        zones = dnsworld.zone_names(max(1, args.size // 100))
        pair = bind_support.start_pair(work / "bind")
        token = uuid.uuid4().hex
        apis = {"primary": zone_api_support.ZoneApi(pair.primary, token).start(),
                "secondary": zone_api_support.ZoneApi(pair.secondary, token).start()}
        try:
            world = scale_bench.World(work, dnsworld.Dns(pair, apis, dnsworld.endpoint_map(
                work / "endpoints", pair, apis, namespace=scale_bench.NAMESPACE)), GitRemote(work / "git"), zones,
                dnsworld.revision(zones, 100), work / "cache", work / "state")
            t = time.perf_counter()
            scale_bench.first_sync(world)
            print(f"first sync {time.perf_counter() - t:.1f} s", file=sys.stderr)
            argv = ["run", "--repo", world.remote.url, *world.cli_targets, "--interval", "86400", "--jitter", "0",
                    "--listen", f"127.0.0.1:{procs.free_port()}", "--no-push-notes", "--webhook-min-interval", "0",
                    "--deadline", "3600", "--allowed-namespaces", "*"]
            ns = _parser(argv).parse_args(argv)
            flags = {name: getattr(ns, name) for name in config.Settings.model_fields}
            agent = run_agent.Agent(config.load_settings(flags, environ={}))
            t = time.perf_counter()
            start = agent.run_once("start")
            print(f"start-up run {time.perf_counter() - t:.2f} s: {start.outcome}", file=sys.stderr)
            parts: dict[str, float] = {}
            for module, name in WRAPPED:
                scale_bench._timed(_module(module), name, parts, f"{module.rsplit('.', 1)[-1]}.{name}")
            from agent.clients import rfc2136
            sent_at: list[float] = []
            send = rfc2136.send

            def timed_send(*a: object, **k: object) -> None:
                sent_at.append(time.perf_counter())
                send(*a, **k)  # type: ignore[arg-type]

            rfc2136.send = timed_send  # type: ignore[assignment]
            commits = scale_bench._one_record_commits(world)
            totals, served_at, floors, steps_all = [], [], [], []
            prof = cProfile.Profile() if args.profile else None
            profiled = args.rounds if args.profile else 0
            for i in range(args.rounds + 1 + profiled):
                floors.append(scale_bench.raw_served(world, i))
                name, value = next(commits)
                done = threading.Event()
                seen: list[float] = []

                def watch(name: str = name, value: str = value, done: threading.Event = done,
                          seen: list[float] = seen) -> None:
                    while not scale_bench._served(world, name, value):
                        time.sleep(0.0005)
                    seen.append(time.perf_counter())
                    done.set()

                sent_at.clear()
                begin = time.perf_counter()
                watcher = threading.Thread(target=watch, daemon=True)
                watcher.start()
                on = prof is not None and i > args.rounds
                if on:
                    prof.enable()
                run = agent.run_once("webhook")
                if on:
                    prof.disable()
                end = time.perf_counter()
                done.wait(60)
                if i == 0 or i > args.rounds:
                    continue  # the first push after the start-up run is apart (as in scale_bench)
                print("  parts: " + " ".join(f"{k} {1000 * v:.1f}" for k, v in sorted(parts.items())), file=sys.stderr)
                parts.clear()
                totals.append(end - begin)
                served_at.append(seen[0] - begin)
                steps_all.append(run.steps)
                print(f"round {i}: {run.outcome} run {1000 * (end - begin):.1f} ms, UPDATE sent after "
                      f"{1000 * (sent_at[0] - begin):.1f} ms, served after "
                      f"{1000 * (seen[0] - begin):.1f} ms; floor {1000 * floors[-1]:.1f} ms; "
                      + " ".join(f"{k} {1000 * v:.1f}" for k, v in run.steps.items()), file=sys.stderr)
            scale_bench.raw_cleared(world)
            names = sorted({k for s in steps_all for k in s})
            print(f"N={args.size}: run median {1000 * statistics.median(totals):.1f} ms, served median "
                  f"{1000 * statistics.median(served_at):.1f} ms, raw floor median "
                  f"{1000 * statistics.median(floors[1:]):.1f} ms")
            print("steps (median ms): " + ", ".join(
                f"{k} {1000 * statistics.median([s.get(k, 0.0) for s in steps_all]):.1f}" for k in names))
            if prof is not None:
                stats = pstats.Stats(prof)
                stats.sort_stats("cumulative").print_stats(args.top)
                stats.sort_stats("tottime").print_stats(args.top)
            agent.httpd.close() if hasattr(agent.httpd, "close") else None
        finally:
            for api in apis.values():
                api.stop()
            pair.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
