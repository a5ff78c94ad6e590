"""Initial DNS sync of 10,000 records across 100 zones, against two baselines, same run:

  (a) raw dnspython: the same records as one UPDATE per zone (the practical limit)
  (b) one UPDATE per record, the way Bindy's record reconcilers publish
  (b') Bindy's whole per-record reconcile per seeds/000: zone check over the zone API, one UPDATE,
       NOTIFY over the zone API (measured on 500 records, extrapolated to all)

    .venv/bin/python bench/dns_bench.py [--records 10000] [--zones 100]

Starts a real named and the zone API test server (tests/support; run scripts/install-test-deps
first). bindy-agent's time is its whole initial sync: zones created through the zone API, AXFR,
plan, TSIG-signed UPDATEs with prerequisites, NOTIFY, and verification of every RRset. The
baselines get their zones created beforehand (untimed) and only send UPDATEs (no verification).
Prints the three times and the ratios (goals: >= 0.5x of (a), >= 20x of (b)).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time
import uuid

import dns.query
import dns.rcode
import dns.tsigkeyring
import dns.update

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from agent.clients import endpoints as config
from agent.clients.statestore import FileStore
from agent.load import loader
from agent.load.manifest import Manifest
from agent.reconcile import dnsresult
from agent.run import orchestrator, planner, revisions
from agent.sources import localdir
from tests.support import bind as bind_support
from tests.support import zone_api as zone_api_support

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
SOA = ("  soaRecord: {primaryNs: ns1.example.com., adminEmail: a.example.com., serial: 1, refresh: 3600, "
       "retry: 600, expire: 604800, negativeTtl: 300}\n")


def localdir_load(root: pathlib.Path, **kwargs: str) -> Manifest:
    return loader.load_files(localdir.files(root), **kwargs)


def _zone(prefix: str, z: int) -> str:
    return f"{prefix}{z}.bench."


def _values(i: int) -> tuple[str, str, str]:
    """(name, type, value) of record i: mostly A, some AAAA, TXT and MX."""
    kind = i % 10
    if kind < 7:
        return f"h{i}", "A", f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}"
    if kind < 8:
        return f"h{i}", "AAAA", f"2001:db8::{i:x}"
    if kind < 9:
        return f"t{i}", "TXT", f"v=spf1 ip4:10.0.0.{i % 256} -all"
    return f"m{i}", "MX", "10 mx.provider.test."


def write_repo(root: pathlib.Path, prefix: str, records: int, zones: int) -> None:
    """One file: the cluster, the zones, and `records` records spread over the zones."""
    docs = [HEAD + "kind: Bind9Cluster\nmetadata: {name: dns, namespace: dns-system}\n"
            "spec: {primary: {replicas: 1}, secondary: {replicas: 0}}\n"]
    docs += [HEAD + f"kind: DNSZone\nmetadata: {{name: z{z}, namespace: dns-system}}\nspec:\n"
             f"  zoneName: {_zone(prefix, z)[:-1]}\n  clusterRef: dns\n" + SOA for z in range(zones)]
    for i in range(records):
        name, rtype, value = _values(i)
        fqdn = f"{name}.{_zone(prefix, i % zones)}"
        spec = {"A": f"ipv4Addresses: [{value}]", "AAAA": f"ipv6Addresses: ['{value}']",
                "TXT": f"text: ['{value}']", "MX": "priority: 10\n  mailServer: mx.provider.test."}[rtype]
        docs.append(HEAD + f"kind: {rtype}Record\nmetadata: {{name: r{i}, namespace: dns-system}}\n"
                    f"spec:\n  name: {fqdn}\n  ttl: 300\n  {spec}\n")
    (root / "all.yaml").write_text("---\n".join(docs))


def baseline(server: bind_support.BindServer, keys: bind_support.Keys, prefix: str, records: int, zones: int,
             *, per_zone: bool) -> tuple[float, int]:
    for z in range(zones):  # untimed: the zones exist before the records are sent
        name = _zone(prefix, z)[:-1]
        (server.dir / f"{name}.db").write_text(
            f"$TTL 300\n@ IN SOA ns1.{name}. a.{name}. 1 3600 600 604800 300\n@ IN NS ns1.example.com.\n")
        server.rndc("addzone", name, f'{{ type primary; file "{name}.db"; '
                    f'allow-update {{ key "{bind_support.TSIG_NAME}"; }}; }};')
    keyring = dns.tsigkeyring.from_text({bind_support.TSIG_NAME: ("hmac-sha256", keys.tsig)})
    by_zone: dict[int, list[tuple[str, str, str]]] = {}
    for i in range(records):
        by_zone.setdefault(i % zones, []).append(_values(i))
    messages = 0
    start = time.perf_counter()
    for z, items in by_zone.items():
        groups = [items] if per_zone else [[item] for item in items]
        for group in groups:
            update = dns.update.UpdateMessage(_zone(prefix, z), keyring=keyring, keyalgorithm="hmac-sha256")
            for name, rtype, value in group:
                update.add(name, 300, rtype, value)
            response = dns.query.tcp(update, server.address, port=server.port, timeout=10)
            assert response.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(response.rcode())
            messages += 1
    return time.perf_counter() - start, messages


def bindy_flow(server: bind_support.BindServer, keys: bind_support.Keys, api_url: str, token: str, prefix: str,
               sample: int) -> float:
    """Seconds per record for Bindy's per-record reconcile (seeds/000): check the zone exists over the
    zone API, send one UPDATE, NOTIFY over the zone API. Measured on `sample` records."""
    import httpx

    name = _zone(prefix, 0)[:-1]
    (server.dir / f"{name}.db").write_text(
        f"$TTL 300\n@ IN SOA ns1.{name}. a.{name}. 1 3600 600 604800 300\n@ IN NS ns1.example.com.\n")
    options = f'type primary; file "{name}.db"; allow-update {{ key "{bind_support.TSIG_NAME}"; }};'
    server.rndc("addzone", name, f"{{ {options} }};")
    keyring = dns.tsigkeyring.from_text({bind_support.TSIG_NAME: ("hmac-sha256", keys.tsig)})
    with httpx.Client(base_url=f"{api_url}/api/v1", headers={"Authorization": f"Bearer {token}"}) as http:
        start = time.perf_counter()
        for i in range(sample):
            assert http.get(f"/zones/{name}/status").status_code == 200
            rname, rtype, value = _values(i)
            update = dns.update.UpdateMessage(name, keyring=keyring, keyalgorithm="hmac-sha256")
            update.add(rname, 300, rtype, value)
            assert dns.query.tcp(update, server.address, port=server.port, timeout=10).rcode() == dns.rcode.NOERROR
            assert http.post(f"/zones/{name}/notify").status_code == 200
        return (time.perf_counter() - start) / sample


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--zones", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        keys = bind_support.Keys()
        server = bind_support.BindServer(work / "named", "127.0.0.10", keys, "bench").start()
        token = uuid.uuid4().hex
        api = zone_api_support.ZoneApi(server, token).start()
        try:
            (work / "tsig.key").write_text(f'key "{bind_support.TSIG_NAME}" {{ algorithm hmac-sha256; '
                                           f'secret "{keys.tsig}"; }};\n')
            (work / "token").write_text(token)
            (work / "endpoints.yaml").write_text(
                f"instances:\n  dns-system/dns-primary-0:\n    dns: {server.address}:{server.port}\n"
                f"    api: {api.url}\n    tokenFile: token\n    tsigKeyFile: tsig.key\n")
            endpoints = config.load_endpoints(work / "endpoints.yaml")
            (work / "zones").mkdir()
            (work / "repo").mkdir()
            write_repo(work / "zones", "agent", 0, args.zones)
            write_repo(work / "repo", "agent", args.records, args.zones)
            store = FileStore(work / "state")

            def sync(root: pathlib.Path) -> dnsresult.DnsResult:
                targets = planner.Targets(store, None, endpoints)
                run = orchestrator.run(revisions.DirectoryRevisions(root), targets, planner.Options())
                assert run.dns is not None, (run.outcome, run.message, run.problems[:3])
                return run.dns

            start = time.perf_counter()
            created = sync(work / "zones")
            zones_time = time.perf_counter() - start
            assert created.ok
            start = time.perf_counter()
            result = sync(work / "repo")
            ours = time.perf_counter() - start
            assert result.ok, [z.primary_error for z in result.zones if z.primary_error][:3]
            verified = sum(1 for z in result.zones for c in z.checks if c.ok)
            checks = sum(len(z.checks) for z in result.zones)

            batched, batched_msgs = baseline(server, keys, "raw", args.records, args.zones, per_zone=True)
            single, single_msgs = baseline(server, keys, "one", args.records, args.zones, per_zone=False)
            per_record = bindy_flow(server, keys, api.url, token, "flow", 500)
        finally:
            api.stop()
            server.stop()
    print(f"records: {args.records} in {args.zones} zones, one primary")
    print(f"bindy-agent, zones          {zones_time:7.2f} s  ({args.zones} zones created through the zone API)")
    print(f"bindy-agent, records        {ours:7.2f} s  ({result.updates_sent} UPDATEs with prerequisites, AXFR, "
          f"verified {verified}/{checks} RRsets)")
    print(f"bindy-agent initial sync    {zones_time + ours:7.2f} s  (both)")
    print(f"(a) raw dnspython batched   {batched:7.2f} s  ({batched_msgs} UPDATEs, zones pre-created, no verify)")
    print(f"(b) one UPDATE per record   {single:7.2f} s  ({single_msgs} UPDATEs, zones pre-created, no verify)")
    flow = per_record * args.records
    print(f"(b') Bindy's per-record reconcile: zone check + UPDATE + NOTIFY over the API: {per_record * 1000:.1f} ms "
          f"per record, measured on 500 -> {flow:.1f} s for {args.records} (extrapolated)")
    print(f"records ratio vs (a): {batched / ours:.2f}x (goal >= 0.5x)   vs (b): {single / ours:.1f}x   "
          f"vs (b'): {flow / ours:.0f}x (goal >= 20x)")
    print(f"whole initial sync (zones too) vs (b): {single / (zones_time + ours):.1f}x   vs (b'): "
          f"{flow / (zones_time + ours):.0f}x")


if __name__ == "__main__":
    main()
