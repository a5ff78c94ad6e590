"""Bindy's fields on the real node (issue 26): the generated BIND9 pods, installed as docs/install.md says.

One installation for the module (as tests/e2e/test_install.py's): sample-repo, its cluster pointed at
the local images, with three additions a user would write:
  * a DNSSEC policy on the cluster (`global.dnssec.signing`) and `dnssecPolicy` on example.org, whose
    only primary is dns-primary-0 (one pod) and whose secondary is dns-secondary-0;
  * a Bind9Instance `dns-pair` of the same cluster in the primary role with `replicas: 2`: one
    instance, two pods, each its own `named` (example.com and internal.example.net are placed on it);
and then, test after test: two pods of one instance serve every zone and a push; the signed zone is
served by the primary pod and transferred to the secondary pod, both verify (`dnssec-verify` on an
AXFR of each) and the DNSZone status shows the DS BIND derives from the served key; `nameServers`
edited after creation is served by every pod; the primary pod of example.org deleted: its
replacement serves, and the secondary transfers a new push from it (its `primaries` follow the pod);
dns-pair's key rotated (`autoRotate`, its Secret's rotate-at backdated as if an hour had passed): its
pods roll to the new key while pushes keep reaching both, and the status shows `rndcKeyRotation`.
Every check is a DNS query or AXFR at the pod IPs, kubectl, or the CR's status.
"""

from __future__ import annotations

import base64
import os
import pathlib
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import dns.exception
import dns.name
import dns.query
import dns.rdataclass
import dns.rdatatype
import dns.zone
import pytest

from agent.desired import workloads
from agent.plan import rotation
from tests.support import install
from tests.support.install import DNS_NS, Installation, kubectl
from tests.support.node import Node
from tests.support.procs import require

FIRST_SYNC_TIMEOUT = int(os.environ.get("BINDY_E2E_FIRST_SYNC", "420"))
PUSH_TIMEOUT = 120
# a run every 10 s, a full reconcile (every zone on every pod) once the last is 20 s old: a replaced
# pod gets its zones by the next resync, without a commit
AGENT_ENV = {"BINDY_AGENT_INTERVAL": "10", "BINDY_AGENT_JITTER": "1", "BINDY_AGENT_RESYNC_AFTER": "20"}
RESYNC = 20 + 10 + 1
POLICY = "e2e-signing"
SIGNED = "example.org"
SIGNING = f"""    dnssec:
      signing: {{enabled: true, policy: {POLICY}, algorithm: ECDSAP256SHA256, nsec3: true, nsec3Iterations: 0}}
"""
PAIR = """apiVersion: bindy.firestoned.io/v1beta1
kind: Bind9Instance
metadata:
  name: dns-pair
  namespace: dns-system
spec:
  clusterRef: dns
  role: primary
  replicas: 2
  rndcKey: {autoRotate: true, rotateAfter: 1h}
"""


def _files(node: Node) -> dict[str, str]:
    files = install.sample_repo_files(node)
    cluster = files["infrastructure/cluster.yaml"]
    signed = cluster.replace("    recursion: false\n", "    recursion: false\n" + SIGNING, 1)
    assert signed != cluster
    files["infrastructure/cluster.yaml"] = signed
    files["infrastructure/pair.yaml"] = PAIR
    org = files["zones/example-org.yaml"]
    files["zones/example-org.yaml"] = org.replace("  zoneName: example.org\n",
                                                  f"  zoneName: example.org\n  dnssecPolicy: {POLICY}\n", 1)
    assert POLICY in files["zones/example-org.yaml"]
    return files


@pytest.fixture(scope="module")
def installed(node: Node, api: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installation]:
    inst = Installation(node, api, tmp_path_factory.mktemp("fields"))
    inst.clean()
    inst.sha = inst.push(_files(node), "sample-repo with DNSSEC and a two-pod instance")
    started = time.monotonic()
    inst.install(agent_env=AGENT_ENV)
    try:
        inst.first_sync = inst.wait_zones(inst.desired(), FIRST_SYNC_TIMEOUT, roles=("primary",))
        print(f"\n[e2e] kubectl apply -k -> every zone on the primaries' pods: {time.monotonic() - started:.1f} s")
        yield inst
    finally:
        if not os.environ.get("BINDY_E2E_KEEP"):
            inst.uninstall()


def _wait(check: Any, timeout: float, what: str, inst: Installation, pause: float = 1) -> Any:
    return inst.wait(check, timeout, what, pause=pause)


def _record(name: str, zone_label: str | None, fqdn: str, address: str) -> str:
    labels = f", labels: {{zone: {zone_label}}}" if zone_label else ""
    return f"""apiVersion: bindy.firestoned.io/v1beta1
kind: ARecord
metadata: {{name: {name}, namespace: dns-system{labels}}}
spec: {{name: "{fqdn}", ipv4Addresses: ["{address}"]}}
"""


def _a(ip: str, name: str) -> list[str]:
    try:
        answer = install.query(ip, name, "A")
    except (dns.exception.DNSException, OSError):
        return []
    return sorted(str(r) for rrset in answer.answer for r in rrset)


def _axfr(ip: str, zone: str) -> dns.zone.Zone | None:
    try:
        return dns.zone.from_xfr(dns.query.xfr(ip, zone, port=workloads.DNS_CONTAINER_PORT, timeout=5, lifetime=15,
                                               relativize=False), relativize=False)
    except (OSError, EOFError, dns.exception.DNSException):
        return None


def _signed(ip: str, zone: str, owner: str) -> bool:
    """`ip` serves `zone` with its DNSKEY and a signature over `owner A`."""
    xfr = _axfr(ip, zone)
    if xfr is None or xfr.get_rdataset(zone + ".", "DNSKEY") is None:
        return False
    node = xfr.get_node(dns.name.from_text(owner))
    return node is not None and node.get_rdataset(dns.rdataclass.IN, dns.rdatatype.RRSIG, dns.rdatatype.A) is not None


def _serial(ip: str, zone: str) -> int | None:
    xfr = _axfr(ip, zone)
    return int(xfr.get_soa().serial) if xfr is not None else None


def _verify(ip: str, zone: str, path: pathlib.Path) -> str:
    """dnssec-verify on an AXFR of the pod at `ip`."""
    xfr = _axfr(ip, zone)
    assert xfr is not None, f"{ip}: no transfer of {zone}"
    xfr.to_file(str(path), relativize=False)
    done = subprocess.run([require("dnssec-verify", component="dnssec-verify (bind9-utils)"), "-o", zone, str(path)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, (ip, done.stdout, done.stderr)
    return done.stdout + done.stderr


def _dsfromkey(ip: str, zone: str, path: pathlib.Path) -> list[str]:
    """BIND's own DS of the KSK `ip` serves (dnssec-dsfromkey on its AXFR), independent of the agent."""
    xfr = _axfr(ip, zone)
    assert xfr is not None
    xfr.to_file(str(path), relativize=False)
    out = subprocess.run(["dnssec-dsfromkey", "-2", "-f", str(path), zone], capture_output=True, text=True,
                         check=True).stdout
    return sorted(" ".join(line.split()) for line in out.splitlines() if line.strip())


def _zone_status(inst: Installation, name: str) -> dict[str, Any]:
    obj = inst.custom().get_namespaced_custom_object("bindy.firestoned.io", "v1beta1", DNS_NS, "dnszones", name)
    return dict(obj.get("status") or {})


def _transfers_from(inst: Installation, pod: install.Pod, zone: str) -> list[str]:
    """The lines of the pod's bind9 log saying a transfer of `zone` completed, and from where."""
    log = kubectl(inst.node, "-n", DNS_NS, "logs", pod.name, "-c", "bind9").stdout
    return [line for line in log.splitlines() if f"transfer of '{zone}/IN' from" in line
            and "Transfer completed" in line]


def test_two_pods_of_one_instance_each_serve_every_zone_and_a_push(installed: Installation) -> None:
    inst = installed
    desired = inst.desired()
    pair = next(i for k, i in desired.instances.items() if k.name == "dns-pair")
    assert pair.spec.replicas == 2
    took = inst.wait_served(desired, PUSH_TIMEOUT)  # every RRset on every ready pod, both of dns-pair included
    pods = inst.pods("dns-pair")
    assert len(pods) == 2 and len({p.ip for p in pods}) == 2, pods
    print(f"\n[e2e] both pods of dns-pair (and every other pod) serve every zone {took:.1f} s after the primaries")

    inst.push({"records/example-com/pair.yaml": _record("pair-push", "example-com", "pair-push", "192.0.2.201")},
              "a record for both pods")
    started = time.monotonic()
    assert inst.webhook() in (200, 202)
    inst.wait_served(inst.desired(), PUSH_TIMEOUT)
    print(f"[e2e] one-record push -> served by both pods of one instance: {time.monotonic() - started:.1f} s")
    for pod in inst.pods("dns-pair"):
        assert _a(pod.ip, "pair-push.example.com.") == ["192.0.2.201"], pod


def test_a_signed_zone_is_served_transferred_verified_and_its_ds_shown(installed: Installation,
                                                                       tmp_path: pathlib.Path) -> None:
    inst = installed
    primary = _wait(lambda: inst.pods("dns-primary-0"), 120, "a ready pod of dns-primary-0", inst)[0]
    secondary = _wait(lambda: inst.pods("dns-secondary-0"), 120, "a ready pod of dns-secondary-0", inst)[0]
    owner = f"www.{SIGNED}."
    started = time.monotonic()
    _wait(lambda: _signed(primary.ip, SIGNED, owner), 120, f"{SIGNED} signed on the primary pod", inst)
    _wait(lambda: _signed(secondary.ip, SIGNED, owner) and _serial(secondary.ip, SIGNED) == _serial(primary.ip, SIGNED),
          120, f"the signed {SIGNED} transferred to the secondary pod", inst)
    print(f"\n[e2e] {SIGNED}: signed on the primary pod and transferred to the secondary pod within "
          f"{time.monotonic() - started:.1f} s")
    for pod in (primary, secondary):
        out = _verify(pod.ip, SIGNED, tmp_path / f"{pod.name}.zone")
        assert "Zone fully signed" in out and "ECDSAP256SHA256: KSKs: 1 active" in out, out
    # the DNSZone's status shows the DS the parent needs: the one BIND derives from the served KSK
    ds = _dsfromkey(primary.ip, SIGNED, tmp_path / "dnskey.zone")

    def shown() -> list[str] | None:
        dnssec = _zone_status(inst, "example-org").get("dnssec") or {}
        records = sorted(" ".join(str(r).split()) for r in dnssec.get("dsRecords") or [])
        return records if records == ds else None

    _wait(shown, RESYNC + PUSH_TIMEOUT, f"the DNSZone example-org status showing the DS {ds}", inst, pause=2)
    print(f"[e2e] the DNSZone status shows the DS {time.monotonic() - started:.1f} s after the test began waiting")


def test_name_servers_edited_after_creation_are_served_by_every_pod(installed: Installation) -> None:
    inst = installed
    zone = inst.files["zones/example-com.yaml"]
    edited = zone.replace("      ipv4Address: 198.51.100.53\n", "      ipv4Address: 198.51.100.54\n", 1)
    edited = edited.replace("  recordsFrom:\n", "    - hostname: ns3.example.com.\n      ipv4Address: 203.0.113.53\n"
                            "  recordsFrom:\n", 1)
    assert edited.count("ns3.example.com.") == 1 and "198.51.100.54" in edited
    inst.push({"zones/example-com.yaml": edited}, "ns2 moves, ns3 joins")
    started = time.monotonic()
    assert inst.webhook() in (200, 202)
    desired = inst.desired()
    inst.wait_served(desired, PUSH_TIMEOUT)  # the apex NS and the glue among every RRset, on every pod
    print(f"\n[e2e] nameServers edit -> served by every pod: {time.monotonic() - started:.1f} s")
    zone_ = next(z for z in desired.zones if z.name == "example.com.")
    for inst_key in zone_.instances:
        for pod in inst.pods(inst_key.name):
            assert _a(pod.ip, "ns2.example.com.") == ["198.51.100.54"], pod
            assert _a(pod.ip, "ns3.example.com.") == ["203.0.113.53"], pod
            ns = install.query(pod.ip, "example.com.", "NS")
            names = sorted(str(r) for rrset in ns.answer for r in rrset)
            assert names == ["ns1.example.com.", "ns2.example.com.", "ns3.example.com."], (pod, names)


def test_a_replaced_primary_pod_serves_and_the_secondary_transfers_from_it(installed: Installation,
                                                                          tmp_path: pathlib.Path) -> None:
    inst = installed
    old = inst.pods("dns-primary-0")
    secondary = inst.pods("dns-secondary-0")
    assert len(old) == 1 and secondary, (old, secondary)
    kubectl(inst.node, "-n", DNS_NS, "delete", "pod", old[0].name, "--wait=false")
    deleted = time.monotonic()
    new = _wait(lambda: [p for p in inst.pods("dns-primary-0") if p.name != old[0].name], 180,
                "a replacement pod of dns-primary-0", inst)[0]
    ready = time.monotonic()
    assert new.ip != old[0].ip, "the replacement pod has a new address"
    # the next resync creates every zone on the new pod (no commit)
    inst.wait_served(inst.desired(), RESYNC + PUSH_TIMEOUT)
    served = time.monotonic()
    # a push to the zone whose only primary is this instance: the secondary gets it by transfer from
    # the new pod (its `primaries` were the old pod's address: the agent created the zone there again)
    inst.push({"records/example-org/moved.yaml": _record("org-moved", None, f"moved.{SIGNED}.", "198.51.100.99")},
              "a record after the primary pod moved")
    pushed = time.monotonic()
    assert inst.webhook() in (200, 202)
    _wait(lambda: _a(new.ip, f"moved.{SIGNED}.") == ["198.51.100.99"], PUSH_TIMEOUT, "the push on the new pod", inst,
          pause=0.3)
    _wait(lambda: _a(secondary[0].ip, f"moved.{SIGNED}.") == ["198.51.100.99"], PUSH_TIMEOUT,
          "the push on the secondary, transferred from the new primary pod", inst, pause=0.3)
    done = time.monotonic()
    print(f"\n[e2e] primary pod deleted -> replacement ready {ready - deleted:.1f} s -> every zone served again "
          f"{served - ready:.1f} s later; a push then reached the secondary by transfer in {done - pushed:.1f} s "
          f"(deleted -> secondary transfers from the new pod: {done - deleted:.1f} s)")
    transfers = _transfers_from(inst, secondary[0], SIGNED)
    assert any(f"from {new.ip}#" in line for line in transfers), transfers[-5:]
    # still signed and whole on both, now with the new pod's keys
    _wait(lambda: _serial(secondary[0].ip, SIGNED) == _serial(new.ip, SIGNED), 60, "the secondary at the primary's serial",
          inst)
    for pod in (new, secondary[0]):
        _verify(pod.ip, SIGNED, tmp_path / f"{pod.name}-moved.zone")


def _deployment(inst: Installation, name: str) -> Any:
    from kubernetes import client

    return client.AppsV1Api(inst.api).read_namespaced_deployment(name, DNS_NS)


def _rolled_out(inst: Installation, name: str, stamp: str) -> bool:
    d = _deployment(inst, name)
    template = d.spec.template.metadata.annotations or {}
    want, st = d.spec.replicas, d.status
    return (template.get(rotation.ROTATED_AT) == stamp and (st.observed_generation or 0) >= d.metadata.generation
            and st.updated_replicas == want and st.replicas == want and st.available_replicas == want
            and not st.unavailable_replicas)


def test_a_key_rotation_rolls_the_pods_and_updates_keep_reaching_both(installed: Installation) -> None:
    inst = installed
    name, secret_name = "dns-pair", workloads.rndc_key_name("dns-pair")
    core = inst.core()
    before = core.read_namespaced_secret(secret_name, DNS_NS)
    assert rotation.CREATED_AT in (before.metadata.annotations or {}), before.metadata.annotations
    old_pods = {p.name for p in inst.pods(name)}
    # as if the key were older than rotateAfter (1h, Bindy's minimum): the next run rotates it
    kubectl(inst.node, "-n", DNS_NS, "annotate", "secret", secret_name, "--overwrite",
            f"{rotation.CREATED_AT}=2026-01-01T00:00:00Z", f"{rotation.ROTATE_AT}=2026-01-01T01:00:00Z")
    started = time.monotonic()
    assert inst.webhook() in (200, 202)
    stamp = _wait(lambda: (_deployment(inst, name).spec.template.metadata.annotations or {}).get(rotation.ROTATED_AT),
                  RESYNC + 60, "the rotation stamped on dns-pair's pod template", inst, pause=0.5)
    rotated = core.read_namespaced_secret(secret_name, DNS_NS)
    assert rotated.data["secret"] != before.data["secret"] and base64.b64decode(rotated.data["secret"])
    # while the pods roll (old ones with the old key, new ones with the new): a push reaches every pod
    inst.push({"records/example-com/rolling.yaml": _record("rolling", "example-com", "rolling", "192.0.2.210")},
              "a record while the key rolls out")
    assert inst.webhook() in (200, 202)
    inst.wait_served(inst.desired(), PUSH_TIMEOUT)
    during = time.monotonic()
    _wait(lambda: _rolled_out(inst, name, stamp), 180, "dns-pair rolled out to the new key", inst)
    rolled = time.monotonic()
    new_pods = {p.name for p in inst.pods(name)}
    assert new_pods and not new_pods & old_pods, (old_pods, new_pods)
    inst.push({"records/example-com/rotated.yaml": _record("rotated", "example-com", "rotated", "192.0.2.211")},
              "a record after the rollout")
    assert inst.webhook() in (200, 202)
    inst.wait_served(inst.desired(), PUSH_TIMEOUT)
    for pod in inst.pods(name):
        assert _a(pod.ip, "rotated.example.com.") == ["192.0.2.211"], pod
        assert _a(pod.ip, "rolling.example.com.") == ["192.0.2.210"], pod

    def shown() -> dict[str, Any] | None:
        obj = inst.custom().get_namespaced_custom_object("bindy.firestoned.io", "v1beta1", DNS_NS,
                                                         "bind9instances", name)
        found = (obj.get("status") or {}).get("rndcKeyRotation") or {}
        return found if found.get("rotationCount") == 1 else None

    status = _wait(shown, RESYNC + 30, "dns-pair's status showing rndcKeyRotation", inst)
    assert status["lastRotatedAt"] == stamp, status
    print(f"\n[e2e] key rotation: rotated, and a push served on every pod mid-rollout, {during - started:.1f} s after "
          f"the trigger; rolled out {rolled - during:.1f} s later; a push after it served on both new pods")
