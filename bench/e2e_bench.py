"""On the e2e node (`scripts/node up`): the agent installed from deploy/ as README says, then
  1. `kubectl apply -k` -> every zone of sample-repo on the primary's pods, and -> every RRset
     served by every pod of the primary and secondary instances (first sync);
  2. a one-record commit + its signed webhook -> served on every pod (median of --rounds).
Prints each figure, or what was not served when it gives up. Needs root, a running node (or it
starts one and stops it after) and the images (images/build).

    .venv/bin/python bench/e2e_bench.py [--rounds 3] [--timeout 300] [--interval 60]

--interval is the agent's schedule (BINDY_AGENT_INTERVAL; the shipped default is 60 s): the first
run after `kubectl apply -k` finds the bind9 pods not ready yet and runs again after 5 s, doubling
(a retryable run). The webhook goes through the agent's Service, which selects the Lease holder's
pod only (the label bindy.firestoned.io/leader): the replica that syncs.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from tests.support.install import Installation
from tests.support.node import Node


def _record(i: int) -> str:
    return f"""
        apiVersion: bindy.firestoned.io/v1beta1
        kind: ARecord
        metadata: {{name: bench-{i}, namespace: dns-system, labels: {{zone: example-com}}}}
        spec: {{name: bench-{i}, ipv4Addresses: ["192.0.2.{100 + i}"]}}
        """


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--interval", type=float, default=60, help="the agent's BINDY_AGENT_INTERVAL")
    args = parser.parse_args(argv)
    from kubernetes import config

    from tests.support import install

    with Node.lock():
        node = Node()
        started_node = node.up()
        try:
            api = config.new_client_from_config(str(node.kubeconfig))
            with tempfile.TemporaryDirectory(prefix="e2e-bench-") as tmp:
                inst = Installation(node, api, pathlib.Path(tmp))
                inst.clean()
                inst.push(install.sample_repo_files(node), "sample-repo")
                t0 = time.monotonic()
                # the rounds follow each other closer than real pushes: without a webhook throttle each
                # round measures one push, not the 10 s that spaces a burst (as bench/webhook_bench.py)
                inst.install(agent_env={"BINDY_AGENT_INTERVAL": f"{args.interval:g}",
                                        "BINDY_AGENT_WEBHOOK_MIN_INTERVAL": "0"})
                try:
                    desired = inst.desired()
                    zones = inst.wait_zones(desired, args.timeout, roles=("primary",))
                    print(f"kubectl apply -k -> every zone on the primary's pods: {time.monotonic() - t0:.1f} s "
                          f"({zones:.1f} s of waiting)")
                    inst.wait_served(desired, args.timeout)
                    print(f"kubectl apply -k -> every RRset served by every pod: {time.monotonic() - t0:.1f} s")
                    times = []
                    for i in range(args.rounds):
                        inst.push({f"records/example-com/bench-{i}.yaml": _record(i)}, f"bench record {i}")
                        t1 = time.monotonic()
                        inst.webhook()
                        inst.wait_served(inst.desired(), args.timeout)
                        times.append(time.monotonic() - t1)
                    print(f"one-record push (webhook) -> served on every pod: median {statistics.median(times):.2f} s "
                          f"({', '.join(f'{t:.2f}' for t in times)})")
                except AssertionError as exc:
                    print(f"not served: {str(exc)[:3000]}", file=sys.stderr)
                    return 1
                finally:
                    inst.uninstall()
        finally:
            if started_node:
                node.down()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
