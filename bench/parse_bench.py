"""Parse + validate + plan 10,000 record documents, against bare `yaml.load_all` (C loader).

    .venv/bin/python bench/parse_bench.py [--records 10000] [--repeat 3]

Prints the best of N runs for each, objects/s, and the ratio (target: within 3x of the bare parse).
The generated repository mixes the three ways a record finds its zone (recordsFrom labels,
spec.zone, fully qualified names) across 100 zones and all eight record types.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from agent.desired import hierarchy as desired
from agent.load import loader
from agent.load.manifest import Manifest
from agent.plan import build
from agent.sources import localdir

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"


def localdir_load(root: pathlib.Path, **kwargs: str) -> Manifest:
    return loader.load_files(localdir.files(root), **kwargs)


def _record(i: int, zone: int) -> str:
    zname = f"zone{zone}.example"
    meta = f"metadata:\n  name: r{i}\n  namespace: dns\n"
    way = i % 3
    if way == 0:
        meta += f"  labels:\n    zone: z{zone}\n"
    name = f"h{i}"
    zone_line = f"  zone: {zname}\n" if way == 1 else ""
    if way == 2:
        name = f"h{i}.{zname}."
    kind = i % 8
    body = {
        0: ("ARecord", f"  ipv4Addresses: [192.0.{i % 250}.{i % 200 + 1}, 198.51.100.{i % 250}]\n"),
        1: ("AAAARecord", f"  ipv6Addresses: ['2001:db8::{i // 65536:x}:{i % 65536:x}']\n"),
        2: ("CNAMERecord", f"  target: www.{zname}.\n"),
        3: ("MXRecord", f"  priority: {i % 50}\n  mailServer: mx.provider.test.\n"),
        4: ("TXTRecord", f"  text: ['v=spf1 ip4:192.0.2.{i % 250} -all']\n"),
        5: ("NSRecord", f"  nameserver: ns{i % 3}.provider.test.\n"),
        6: ("SRVRecord", f"  priority: 10\n  weight: 5\n  port: {1000 + i % 5000}\n  target: srv.provider.test.\n"),
        7: ("CAARecord", "  flags: 0\n  tag: issue\n  value: letsencrypt.org\n"),
    }[kind]
    return f"{HEAD}kind: {body[0]}\n{meta}spec:\n  name: {name}\n  ttl: 300\n{zone_line}{body[1]}"


def generate(root: pathlib.Path, records: int, zones: int = 100) -> None:
    (root / "cluster.yaml").write_text(
        HEAD + "kind: Bind9Cluster\nmetadata: {name: dns, namespace: dns}\nspec: {}\n")
    zone_docs = [
        HEAD + f"kind: DNSZone\nmetadata: {{name: z{z}, namespace: dns}}\nspec:\n"
        f"  zoneName: zone{z}.example\n  clusterRef: dns\n"
        "  soaRecord: {primaryNs: ns1.example.com., adminEmail: a.example.com., serial: 1, "
        "refresh: 3600, retry: 600, expire: 604800, negativeTtl: 300}\n"
        f"  recordsFrom: [{{selector: {{matchLabels: {{zone: z{z}}}}}}}]\n"
        for z in range(zones)
    ]
    (root / "zones.yaml").write_text("---\n".join(zone_docs))
    per_file = 100
    for f in range(0, records, per_file):
        docs = [_record(i, i % zones) for i in range(f, min(f + per_file, records))]
        (root / f"records-{f // per_file:04d}.yaml").write_text("---\n".join(docs))


def bare(root: pathlib.Path) -> int:
    n = 0
    for path in sorted(root.glob("*.yaml")):
        n += sum(1 for _ in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader))
    return n


def ours(root: pathlib.Path) -> int:
    manifest = localdir_load(root, default_namespace="dns")
    assert manifest.ok, [str(p) for p in manifest.problems[:5]]
    state = desired.build(manifest)
    errors = [str(p) for p in state.problems if p.severity.value == "error"]
    assert not errors, errors[:5]
    result = build.offline(state)
    assert result.changes
    return len(manifest.objects)


def best(fn, root: pathlib.Path, repeat: int) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    times, count = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = fn(root)
        times.append(time.perf_counter() - start)
    return min(times), count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        generate(root, args.records)
        base_t, base_n = best(bare, root, args.repeat)
        our_t, our_n = best(ours, root, args.repeat)
    print(f"documents: {base_n} ({args.records} records, 100 zones, 1 cluster)")
    print(f"baseline  yaml.load_all (CSafeLoader):      {base_t:7.3f} s  {base_n / base_t:9.0f} docs/s")
    print(f"bindy-agent load+validate+desired+plan:     {our_t:7.3f} s  {our_n / our_t:9.0f} objects/s")
    print(f"ratio (ours / baseline): {our_t / base_t:.2f}x   (target: <= 3.00x)")


if __name__ == "__main__":
    main()
