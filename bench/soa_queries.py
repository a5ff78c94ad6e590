"""How many SOA exchanges (and other external calls) each run of a long-running agent makes: the
tally of agent/model/calls.py, run by run, on scale_bench's world (N records in N/100 zones, a real
named primary + secondary with the zone API, a Git remote; the agent of `bindy-agent run` built in
this process, its worker's `run_once` called directly):

    start-up    the first run of the agent (the revision the one-shot sync applied)
    push        one A record changed (three pushes, each in another zone)
    resync      the same head once `--resync-after` has passed: every zone's serial asked
    push        one more record, after the resync

    .venv/bin/python bench/soa_queries.py [--size 2000] [--checkout DIR]

`--checkout DIR` runs the agent of another tree (e.g. `git archive main | tar -x -C DIR`), so two
trees are counted alike. Prints, per run, its outcome and its calls by target and operation.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time
import uuid

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import scale_bench

RESYNC_AFTER = 3.0  # seconds: short, so that the resync comes without a long wait


def _tally() -> dict[tuple[str, str], int]:
    from agent.model import calls

    out: dict[tuple[str, str], int] = {}
    for (target, op, _result), n in calls.totals().items():
        out[(target, op)] = out.get((target, op), 0) + n
    return out


def _counted(label: str, run: object) -> dict[tuple[str, str], int]:
    before = _tally()
    outcome = run() if callable(run) else None
    after = _tally()
    delta = {k: n - before.get(k, 0) for k, n in sorted(after.items()) if n != before.get(k, 0)}
    shown = " ".join(f"{t}/{op} {n}" for (t, op), n in delta.items())
    print(f"{label:<10} {getattr(outcome, 'outcome', '?'):<9} {shown}")
    return delta


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--checkout", type=pathlib.Path, default=None, help="the tree whose agent/ runs")
    args = parser.parse_args()
    if args.checkout is not None:
        sys.path.insert(0, str(args.checkout.resolve()))

    import agent
    from agent.cli import _parser
    from agent.run import agent as run_agent
    from agent.run import settings as config
    from tests.support import bind as bind_support
    from tests.support import dnsworld, procs
    from tests.support import zone_api as zone_api_support
    from tests.support.gitremote import GitRemote

    print(f"agent from {pathlib.Path(agent.__file__).parent}, {args.size} records", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="bindy-soaq-") as tmp:
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
            scale_bench.first_sync(world)
            argv = ["run", "--repo", world.remote.url, *world.cli_targets, "--interval", "86400", "--jitter", "0",
                    "--listen", f"127.0.0.1:{procs.free_port()}", "--no-push-notes", "--webhook-min-interval", "0",
                    "--deadline", "3600", "--allowed-namespaces", "*", "--resync-after", str(RESYNC_AFTER)]
            ns = _parser(argv).parse_args(argv)
            flags = {name: getattr(ns, name) for name in config.Settings.model_fields}
            runner = run_agent.Agent(config.load_settings(flags, environ={}))
            commits = scale_bench._one_record_commits(world)
            _counted("start-up", lambda: runner.run_once("start"))
            for _ in range(3):
                next(commits)
                _counted("push", lambda: runner.run_once("webhook"))
            time.sleep(RESYNC_AFTER + 0.5)
            _counted("resync", lambda: runner.run_once("schedule"))
            next(commits)
            _counted("push", lambda: runner.run_once("webhook"))
            runner.httpd.close() if hasattr(runner.httpd, "close") else None
        finally:
            for api in apis.values():
                api.stop()
            pair.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
