"""A leader change costs what a push costs (issue 28, warm standby): the first push after a failover,
served by the standby that took over, against the first push to a cold agent (restarted with its
state and cache, as after a leader change without a warm standby) in the same run.

    .venv/bin/python bench/standby_bench.py [--size 100000] [--rounds 3]

N records in N/100 zones on a real named primary + secondary with the zone API, a Git remote and a
real kube-apiserver (for the Lease only: the agents' Kubernetes objects are a handful). Steps:

  setup     the revision applied once by the agent's own code, then by one `bindy-agent run` that
            is stopped (its Kubernetes objects exist; the state is shared by every agent below)
  cold      `bindy-agent run` restarted, its Lease deleted before (no standby around: it leads at
            once); a one-record push is committed as soon as it listens and leads, its webhook
            POSTed; seconds until primary AND secondary answer the new value (the start-up run loads
            that push's revision whole, so it transfers every zone first)
  warming   restarted again (its Lease deleted before too); the push comes once its start-up run
            reconciles (its first zone transfer): pushes first, the reconcile yields, the push's
            zones are applied, then the reconcile goes on (target: < 2 s at 100,000 records)
  standby   two replicas, A then B (B follows A's revision read-only); A is killed (SIGKILL); once B
            holds the Lease, a one-record push and its webhook to B: seconds until both servers serve
            it (median of --rounds pushes, each after a fresh failover is not repeated: the first push
            after the takeover is shown apart from the next ones)
  floor     one raw TSIG UPDATE of one record, until both servers answer it

Prints each figure, its baseline and the ratio (target: < 1 s after the webhook at 100,000 records).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import signal
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import scale_bench as sb  # the bench's World, Agent, first sync and push rounds


def _agent(world: sb.World, pod: str, *extra: str) -> sb.Agent:
    os.environ["POD_NAME"] = pod  # the identity in the Lease (read at start)
    try:
        return sb.Agent(world, "--lease-duration", "3", "--cache", str(world.work / f"cache-{pod}"), *extra)
    finally:
        os.environ.pop("POD_NAME", None)


def _cold_start(api: Any) -> None:
    """No Lease: the next agent takes it at its first look, as a replica started with no standby
    around (a released or expired Lease is left to a warm standby for one more lease duration,
    agent/run/lease.py: meanwhile the new replica follows as a standby and is not cold any more)."""
    api.delete("Lease", sb.NAMESPACE, "bindy-agent")


def _leading(agent: sb.Agent) -> float:
    """Seconds until the agent holds the Lease (webhooks to a standby are refused)."""
    return _wait("the agent leads", lambda: agent.metric("bindy_agent_leader") == 1)


def _listening(agent: sb.Agent, timeout: float = 600) -> float:
    start = time.perf_counter()
    while True:
        try:
            if agent.http.get(agent.url + "/healthz").status_code == 200:
                return time.perf_counter() - start
        except Exception:  # not listening yet
            pass
        if agent.proc.poll() is not None or time.perf_counter() - start > timeout:
            raise SystemExit(f"the agent did not start: {agent.log.read_text()[-3000:]}")
        time.sleep(0.01)


def _wait(what: str, check: Any, timeout: float = 600) -> float:
    start = time.perf_counter()
    while not check():
        if time.perf_counter() - start > timeout:
            raise SystemExit(f"{what}: not within {timeout} s")
        time.sleep(0.01)
    return time.perf_counter() - start


def _runs(agent: sb.Agent) -> list[str]:
    """Each run's trigger, outcome, seconds and long steps, from the agent's log."""
    ends = [json.loads(line) for line in agent.log.read_text().splitlines() if '"msg":"sync ' in line]
    return [f"{e.get('trigger')} {e.get('outcome')} {e.get('seconds')} s ("
            + ", ".join(f"{k} {v}" for k, v in (e.get("steps") or {}).items() if v >= 0.2) + ")" for e in ends[:3]]


def measure(n: int, work: pathlib.Path, rounds: int) -> dict[str, Any]:
    from agent.clients.kubeapi import KubeApi
    from agent.run import crds
    from tests.support import bind as bind_support
    from tests.support import dnsworld
    from tests.support import zone_api as zone_api_support
    from tests.support.gitremote import GitRemote
    from tests.support.kube import KubeCluster

    work.mkdir(parents=True)
    zones = dnsworld.zone_names(max(1, n // 100))
    pair = bind_support.start_pair(work / "bind")
    token = uuid.uuid4().hex
    apis = {"primary": zone_api_support.ZoneApi(pair.primary, token).start(),
            "secondary": zone_api_support.ZoneApi(pair.secondary, token).start()}
    kube = KubeCluster(work / "kube").start()
    agents: list[sb.Agent] = []
    out: dict[str, Any] = {"zones": len(zones)}
    try:
        world = sb.World(work, dnsworld.Dns(pair, apis, dnsworld.endpoint_map(work / "endpoints", pair, apis,
                                                                                namespace=sb.NAMESPACE)),
                         GitRemote(work / "git"), zones, dnsworld.revision(zones, 100), work / "cache",
                         work / "state")
        out["records"] = dnsworld.records(world.rev)
        print(f"[{n:,}] first sync ...", file=sys.stderr, flush=True)
        out["first_sync"] = sum(v for k, v in sb.first_sync(world).items() if k.endswith("_run"))
        api = KubeApi.from_kubeconfig(str(kube.kubeconfig))
        crds.install_crds(api)
        api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": sb.NAMESPACE}})
        world.kubeconfig = kube.kubeconfig
        out["raw_one"] = sb.raw_one(world, max(rounds, 5))
        commits = sb._one_record_commits(world)

        setup = _agent(world, "setup")  # applies the agents' Kubernetes objects once
        agents.append(setup)
        setup.wait_runs(1)
        setup.stop()

        print(f"[{n:,}] cold agent ...", file=sys.stderr, flush=True)
        _cold_start(api)
        cold = _agent(world, "cold")
        agents.append(cold)
        out["cold_listens"] = _listening(cold)
        out["cold_leads"] = out["cold_listens"] + _leading(cold)
        out["cold_first_push"] = sb.push_rounds(world, cold, 1, commits)[0]
        out["cold_runs"] = _runs(cold)
        cold.stop()

        print(f"[{n:,}] cold agent, a push during its start-up reconcile ...", file=sys.stderr, flush=True)
        _cold_start(api)
        warming = _agent(world, "warming")
        agents.append(warming)
        _listening(warming)
        _leading(warming)
        # its start-up run has loaded the revision and reads the zones: the push arrives now
        _wait("the start-up run transfers", lambda: warming.metric("bindy_agent_external_calls_total",
                                                                    target="axfr") >= 1)
        out["during_start_push"] = sb.push_rounds(world, warming, 1, commits)[0]
        warming.wait_runs(3)  # cut, the push's zones, then the whole reconcile
        out["during_start_runs"] = _runs(warming)
        warming.stop()

        print(f"[{n:,}] leader and standby ...", file=sys.stderr, flush=True)
        _cold_start(api)
        a = _agent(world, "a")
        agents.append(a)
        _listening(a)
        _wait("A leads", lambda: a.metric("bindy_agent_leader") == 1)
        a.wait_runs(1)
        b = _agent(world, "b", "--interval", "2")  # B follows every 2 s (the default interval is 60 s)
        agents.append(b)
        _listening(b)
        out["standby_first_follow"] = _wait("B follows", lambda: b.metric("bindy_agent_standby_follows_total",
                                                                          result="ok") >= 1)
        sb.push_rounds(world, a, 1, commits)  # a push A serves; B follows it
        seen = b.metric("bindy_agent_standby_follows_total", result="ok")
        _wait("B follows again", lambda: b.metric("bindy_agent_standby_follows_total", result="ok") >= seen + 2)
        axfr = b.metric("bindy_agent_external_calls_total", target="axfr")
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait(30)
        out["takeover"] = _wait("B takes over", lambda: b.metric("bindy_agent_leader") == 1)
        b.wait_runs(1)  # its leadership run: the head was applied by A, nothing to do
        floors: list[float] = []  # the raw floor, measured just before each round
        pushes = sb.push_rounds(world, b, rounds + 1, commits, floors)
        out["standby_first_push"], out["standby_push"] = pushes[0], pushes[1:]
        out["standby_floors"] = floors
        out["standby_transfers"] = b.metric("bindy_agent_external_calls_total", target="axfr") - axfr
        ends = [json.loads(line) for line in b.log.read_text().splitlines() if '"msg":"sync ' in line]
        first = next((e for e in ends if e.get("trigger") == "webhook"), {})  # after the leadership run
        out["standby_first_push_steps"] = first.get("steps", {})
        print(f"[{n:,}] standby's runs: " + "; ".join(f"{e.get('trigger')} {e.get('msg')} {e.get('steps')}"
                                                   for e in ends[:3]), file=sys.stderr, flush=True)
    finally:
        for agent in agents:
            agent.stop()
        for api_ in apis.values():
            api_.stop()
        pair.stop()
        kube.stop()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bindy-standby-") as tmp:
        r = measure(args.size, pathlib.Path(tmp) / "w", args.rounds)
    floor = statistics.median(r["raw_one"])
    first, cold = r["standby_first_push"], r["cold_first_push"]
    print(f"machine: {sb.machine()}")
    print(f"{r['records']:,} records in {r['zones']:,} zones (first sync {r['first_sync']:.1f} s)")
    print(f"  raw TSIG UPDATE of one record, served on both      {floor * 1000:8.1f} ms  (the floor)")
    print(f"  cold agent: listens after                          {r['cold_listens']:8.2f} s  (leads after "
          f"{r['cold_leads']:.2f} s)")
    print(f"  cold agent: first push served after its webhook    {cold:8.2f} s  (baseline)")
    print(f"    its runs: {'; '.join(r['cold_runs'])}")
    during = r["during_start_push"]
    met = "met" if during < 2 else "NOT met"
    print(f"  cold agent: a push while its start-up run reads    {during:8.2f} s  {during / cold:.3f}x the cold "
          f"agent's, {during / floor:.0f}x the floor  (pushes first; target < 2 s)  {met}")
    print(f"    its runs: {'; '.join(r['during_start_runs'])}")
    print(f"  standby: first follow                              {r['standby_first_follow']:8.2f} s")
    print(f"  standby: holds the Lease after the leader's kill   {r['takeover']:8.2f} s  (lease 3 s)")
    print(f"  standby: first push after taking over              {first:8.2f} s  {first / cold:.3f}x the cold "
          f"agent's, {first / floor:.0f}x the floor  (target < 1 s)  {'met' if first < 1 else 'NOT met'}")
    steps = ", ".join(f"{k} {v:.2f}" for k, v in r["standby_first_push_steps"].items() if v >= 0.05)
    print(f"    its run's steps (s): {steps}")
    nexts, floors = statistics.median(r["standby_push"]), statistics.median(r["standby_floors"][1:])
    print(f"  standby: next pushes (now the leader), median of {len(r['standby_push'])}  {nexts:8.2f} s  "
          f"{nexts / floors:.0f}x the raw UPDATE served on both just before each round "
          f"(median {floors * 1000:.1f} ms: {', '.join(f'{f * 1000:.1f}' for f in r['standby_floors'])})")
    print(f"  zones transferred by the standby from its kill to the last push: {r['standby_transfers']:.0f} "
          f"(of {r['zones']:,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
