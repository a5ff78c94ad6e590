"""DNSSEC on real named: a DNSZone with `dnssecPolicy` is served signed by the primary and the
secondary that transfers it, validates from its own key, stays signed through the agent's DNS
UPDATEs, and its status shows the DS records of the key it is served with.

The test named gets the `dnssec-policy` block from the named.conf the agent generates for the
primary instance, and the zone API server turns `dnssecPolicy`/`inlineSigning` into the zone's
configuration as bindcar does: what is proven here is the agent's own output.
"""

from __future__ import annotations

import base64
import pathlib
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import dns.exception
import dns.name
import dns.query
import dns.rdataclass
import dns.rdatatype
import dns.zone
import pytest

from agent.clients import endpoints as config
from agent.desired import hierarchy
from agent.outcome import status
from agent.run import orchestrator
from tests.conftest import load_dir
from tests.support import agentrun, dnsrepo
from tests.support import bind as bind_support
from tests.support import zone_api as zone_api_support
from tests.support.procs import require

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
CLUSTER = HEAD + """kind: Bind9Cluster
metadata: {name: dns, namespace: dns-system}
spec:
  global:
    dnssec:
      signing: {enabled: true, policy: bindy-test, algorithm: ECDSAP256SHA256, nsec3: true, nsec3Iterations: 0}
"""


def _zone_doc(zone: str) -> str:
    return HEAD + f"""kind: DNSZone
metadata: {{name: secure, namespace: dns-system}}
spec:
  zoneName: {zone}
  clusterRef: dns
  dnssecPolicy: bindy-test
  soaRecord: {{primaryNs: ns1.{zone}., adminEmail: hostmaster.{zone}., serial: 1, refresh: 3600, retry: 600,
              expire: 604800, negativeTtl: 300}}
  nameServers: [{{hostname: ns1.{zone}., ipv4Address: 192.0.2.53}}]
  recordsFrom: [{{selector: {{matchLabels: {{zone: secure}}}}}}]
"""


def _record(name: str, address: str) -> str:
    return HEAD + f"""kind: ARecord
metadata: {{name: {name}, namespace: dns-system, labels: {{zone: secure}}}}
spec: {{name: {name}, ipv4Addresses: [{address}]}}
"""


def _policy_block(root: pathlib.Path) -> str:
    """The dnssec-policy statement of the named.conf the agent generates for the primary."""
    desired = hierarchy.build(load_dir(root))
    maps = [o for o in desired.objects if o.key.kind == "ConfigMap" and "primary" in o.key.name]
    conf = str(maps[0].body["data"]["named.conf"])
    start = conf.index('dnssec-policy "bindy-test"')
    return conf[start:conf.index("\n};", start) + 3] + "\n"


@pytest.fixture
def world(tmp_path: pathlib.Path) -> Iterator[dict[str, Any]]:
    zone = f"secure-{uuid.uuid4().hex[:6]}.test"
    root = tmp_path / "repo"
    root.mkdir()
    (root / "cluster.yaml").write_text(CLUSTER)
    (root / "zone.yaml").write_text(_zone_doc(zone))
    (root / "www.yaml").write_text(_record("www", "192.0.2.80"))
    block = _policy_block(root)
    pair = bind_support.start_pair(tmp_path / "bind", extra=block)
    token = uuid.uuid4().hex
    apis = {"primary": zone_api_support.ZoneApi(pair.primary, token).start(),
            "secondary": zone_api_support.ZoneApi(pair.secondary, token).start()}
    endpoints_file = dnsrepo.endpoint_map(tmp_path, pair, apis)
    try:
        yield {"zone": zone, "root": root, "pair": pair, "dir": tmp_path, "block": block,
               "endpoints": config.load_endpoints(endpoints_file), "state": tmp_path / "state"}
    finally:
        for api in apis.values():
            api.stop()
        pair.stop()


def _sync(world: dict[str, Any]) -> orchestrator.RunOutcome:
    run = agentrun.sync_dir(world["root"], state=world["state"], endpoints=world["endpoints"])
    assert run.dns is not None and run.dns.ok, (run.outcome, run.message, [str(p) for p in run.problems],
                                                run.failures)
    return run


def _axfr(server: bind_support.BindServer, zone: str) -> dns.zone.Zone:
    return dns.zone.from_xfr(dns.query.xfr(server.address, zone, port=server.port, timeout=5, lifetime=10,
                                           relativize=False),
                             relativize=False)


def _wait(what: str, check: Any, timeout: float = 30) -> Any:
    end = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.3)


def _signed(server: bind_support.BindServer, zone: str, owner: str, rtype: str) -> list[str]:
    """The RRSIGs that cover `owner rtype` in an AXFR of `server` (empty if none, or no zone yet)."""
    try:
        xfr = _axfr(server, zone)
    except (OSError, EOFError, dns.exception.DNSException):  # not served (yet)
        return []
    node = xfr.get_node(dns.name.from_text(owner))
    if node is None:
        return []
    sigs = node.get_rdataset(dns.rdataclass.IN, dns.rdatatype.RRSIG, dns.rdatatype.from_text(rtype))
    return [r.to_text() for r in sigs] if sigs else []


def _serial(server: bind_support.BindServer, zone: str) -> int | None:
    try:
        return int(_axfr(server, zone).get_soa().serial)
    except (OSError, EOFError, dns.exception.DNSException):  # not served (yet)
        return None


def _verify(server: bind_support.BindServer, zone: str, path: pathlib.Path) -> str:
    """dnssec-verify on an AXFR of `server`: every RRset signed, the NSEC3 chain complete."""
    _axfr(server, zone).to_file(str(path), relativize=False)
    result = subprocess.run([require("dnssec-verify", component="dnssec-verify (bind9-utils)"), "-o", zone, str(path)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, (server.name, result.stdout, result.stderr)
    return result.stdout + result.stderr


def _delv(world: dict[str, Any], name: str) -> str:
    """delv with the zone's served KSK as its only trust anchor: validates `name A` from the primary."""
    zone, primary = world["zone"], world["pair"].primary
    keys = _axfr(primary, zone).get_rdataset(zone + ".", "DNSKEY")
    assert keys is not None
    ksk = next(k for k in keys if k.flags & 1)
    anchors = world["dir"] / "anchors.conf"
    anchors.write_text(f'trust-anchors {{ "{zone}." static-key {ksk.flags} {ksk.protocol} {ksk.algorithm} '
                       f"\"{base64.b64encode(ksk.key).decode()}\"; }};\n")
    result = subprocess.run([require("delv", component="delv (bind9-dnsutils)"), "-a", str(anchors), f"+root={zone}",
                             f"@{primary.address}", "-p", str(primary.port), name, "A"],
                            capture_output=True, text=True, check=False)
    return result.stdout + result.stderr


def _dsfromkey(world: dict[str, Any]) -> list[str]:
    """BIND's own DS of the served KSK (dnssec-dsfromkey on the AXFR), independent of the agent."""
    zone = world["zone"]
    path = world["dir"] / "dnskey.zone"
    _axfr(world["pair"].primary, zone).to_file(str(path), relativize=False)
    out = subprocess.run(["dnssec-dsfromkey", "-2", "-f", str(path), zone], capture_output=True, text=True,
                         check=True).stdout
    return sorted(" ".join(line.split()) for line in out.splitlines() if line.strip())


def test_a_signed_zone_is_served_transferred_validated_and_stays_signed(world: dict[str, Any]) -> None:
    zone, pair = world["zone"], world["pair"]
    assert "nsec3param iterations 0" in world["block"]  # the agent's rendering of nsec3: true
    _sync(world)
    # BIND signs in the background: the DNSKEY and the signatures appear on the primary, then the secondary
    _wait("the primary to sign the zone", lambda: _signed(pair.primary, zone, f"www.{zone}.", "A"))
    _wait("the secondary to transfer the signed zone",
          lambda: _signed(pair.secondary, zone, f"www.{zone}.", "A")
          and _serial(pair.secondary, zone) == _serial(pair.primary, zone))
    for server in (pair.primary, pair.secondary):
        out = _verify(server, zone, world["dir"] / f"{server.name}.zone")
        assert "Zone fully signed" in out and "ECDSAP256SHA256: KSKs: 1 active" in out, out
    _wait("the NSEC3 chain of the policy's nsec3param",
          lambda: _axfr(pair.secondary, zone).get_rdataset(zone + ".", "NSEC3PARAM"))
    validated = _delv(world, f"www.{zone}")
    assert "; fully validated" in validated and "192.0.2.80" in validated, validated

    # the next run reads the signed zone: DNSSEC data is the zone's own, not drift and not foreign
    again = _sync(world)
    result = next(z for z in again.dns.zones if z.name == zone + ".")  # type: ignore[union-attr]
    assert (result.changes, result.conflicts, again.dns.updates_sent) == ([], [], 0)  # type: ignore[union-attr]
    assert again.plan is not None and all(not zp.records.get(p, None) or not zp.records[p].changes
                                          for zp in again.plan.zones or [] for p in zp.records)
    # the DNSZone's status shows the DS the parent needs, the one BIND itself derives from the served KSK
    desired = hierarchy.build(load_dir(world["root"]))
    shown = status.statuses(desired, {}, revisions={}, generations={}, dns=again.dns)
    dnssec = next(s for k, s in shown.items() if k.kind == "DNSZone")["dnssec"]
    assert dnssec["signed"] is True and dnssec["algorithm"] == "ECDSAP256SHA256"
    assert sorted(dnssec["dsRecords"]) == _dsfromkey(world)
    assert str(dnssec["keyTag"]) in dnssec["dsRecords"][0]

    # the agent's UPDATEs keep it signed: a new record and a changed one get their signatures
    (world["root"] / "www.yaml").write_text(_record("www", "192.0.2.81"))
    (world["root"] / "api.yaml").write_text(_record("api", "192.0.2.90"))
    before = _signed(pair.primary, zone, f"www.{zone}.", "A")
    _sync(world)
    _wait("a signature of the new record", lambda: _signed(pair.primary, zone, f"api.{zone}.", "A"))
    _wait("a new signature of the changed record", lambda: _signed(pair.primary, zone, f"www.{zone}.", "A") != before)
    _wait("the secondary to catch up",
          lambda: _serial(pair.secondary, zone) == _serial(pair.primary, zone)
          and _signed(pair.secondary, zone, f"api.{zone}.", "A"))
    for server in (pair.primary, pair.secondary):
        _verify(server, zone, world["dir"] / f"{server.name}-2.zone")
    validated = _delv(world, f"api.{zone}")
    assert "; fully validated" in validated and "192.0.2.90" in validated, validated
