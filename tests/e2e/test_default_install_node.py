"""An install with default settings on the real node, as a platform team would make it (issue 39).

deploy/ through an overlay (2 agent replicas, the report key Secret, the agent's defaults: a run a
minute, a resync every 10 minutes), and a repository with a cluster of two primary instances and a
secondary, sample-repo's zones, example.org signed (`dnssecPolicy`). Then, in order:
  * the first commit, applied while every server was still starting, is reported `applied` (not
    partial) and `bindy-agent report` verifies it with the report key;
  * every pod - both primaries and the secondary - serves one DNSKEY set, `delv` validates answers
    from each against the DS the DNSZone's status shows (BIND's own dnssec-dsfromkey agrees);
  * a primary pod deleted: its replacement signs with the same keys, and its Bind9Instance is Ready
    again within 10 s of the new pod serving every zone, with no push;
  * the drift counters stay 0 through the install, that pod restart and an agent restart, and rise
    once a record changed by hand (nsupdate) is written back;
  * the leader force-deleted 5 times, each time with a warm standby alive: the standby leads.
Every check is a DNS query or AXFR at the pod IPs, kubectl, a CR's status, or an agent pod's /metrics.
"""

from __future__ import annotations

import base64
import os
import pathlib
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rdataclass
import dns.rdatatype
import dns.tsigkeyring
import dns.update
import dns.zone
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent.desired import workloads
from tests.conftest import ROOT
from tests.support import install
from tests.support.install import AGENT_NS, DNS_NS, Installation, kubectl
from tests.support.node import Node
from tests.support.procs import require

FIRST_SYNC_TIMEOUT = int(os.environ.get("BINDY_E2E_FIRST_SYNC", "420"))
SIGNED = "example.org."
POLICY = "e2e-shared"
SIGNING = f"""    dnssec:
      signing: {{enabled: true, policy: {POLICY}, algorithm: ECDSAP256SHA256}}
"""
SERVERS = ("dns-primary-0", "dns-primary-1", "dns-secondary-0")
LEASE_DURATION = 15  # the default


def _files(node: Node) -> dict[str, str]:
    files = install.sample_repo_files(node)
    cluster = files["infrastructure/cluster.yaml"]
    two = cluster.replace("  primary:\n    replicas: 1\n", "  primary:\n    replicas: 2\n", 1)
    signed = two.replace("    recursion: false\n", "    recursion: false\n" + SIGNING, 1)
    assert signed != two != cluster
    files["infrastructure/cluster.yaml"] = signed
    org = files["zones/example-org.yaml"]
    files["zones/example-org.yaml"] = org.replace("  zoneName: example.org\n",
                                                  f"  zoneName: example.org\n  dnssecPolicy: {POLICY}\n", 1)
    return files


@pytest.fixture(scope="module")
def installed(node: Node, api: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installation]:
    inst = Installation(node, api, tmp_path_factory.mktemp("defaults"))
    inst.clean()
    inst.sha = inst.push(_files(node), "two primaries, a secondary, a signed zone")
    started = time.monotonic()
    inst.install()  # the agent's defaults
    try:
        inst.wait_served(inst.desired(), FIRST_SYNC_TIMEOUT)
        inst.first_sync = time.monotonic() - started
        print(f"\n[e2e] kubectl apply -k -> every RRset on every pod (3 instances): {inst.first_sync:.1f} s")
        yield inst
    finally:
        if not os.environ.get("BINDY_E2E_KEEP"):
            inst.uninstall()


# -- helpers ---------------------------------------------------------------------------------------
def _agents(inst: Installation) -> dict[str, str]:
    """Live agent pods: name -> IP."""
    return {p.metadata.name: p.status.pod_ip for p in inst.agent_pods()
            if not p.metadata.deletion_timestamp and p.status.pod_ip}


def _holder(inst: Installation) -> str:
    from kubernetes import client

    holder = str(client.CoordinationV1Api(inst.api).read_namespaced_lease("bindy-agent", AGENT_NS).spec.holder_identity
                 or "")
    return next((name for name in _agents(inst) if holder.startswith(name + "-")), "")


def _metric(ip: str, name: str) -> float:
    text = httpx.get(f"http://{ip}:8080/metrics", timeout=5).text
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples if s.name == name)


def _drift(inst: Installation) -> dict[str, float]:
    """bindy_agent_drift_repaired_total (every layer) of each agent pod."""
    return {name: _metric(ip, "bindy_agent_drift_repaired_total") for name, ip in _agents(inst).items()}


def _log(inst: Installation, pod: str) -> str:
    return kubectl(inst.node, "-n", AGENT_NS, "logs", pod, check=False).stdout


def _axfr(ip: str, zone: str) -> dns.zone.Zone | None:
    try:
        return dns.zone.from_xfr(dns.query.xfr(ip, zone, port=workloads.DNS_CONTAINER_PORT, timeout=5, lifetime=15,
                                               relativize=False), relativize=False)
    except Exception:
        return None


def _dnskeys(ip: str) -> tuple[str, ...]:
    xfr = _axfr(ip, SIGNED)
    found = xfr.get_rdataset(SIGNED, "DNSKEY") if xfr is not None else None
    return tuple(sorted(r.to_text() for r in found)) if found is not None else ()


def _signed_everywhere(inst: Installation) -> dict[str, tuple[str, ...]]:
    """Every ready pod of the three instances -> the DNSKEY set it serves for example.org."""
    return {f"{name}/{pod.name}": _dnskeys(pod.ip) for name in SERVERS for pod in inst.pods(name)}


def _status_ds(inst: Installation) -> list[str]:
    obj = inst.custom().get_namespaced_custom_object("bindy.firestoned.io", "v1beta1", DNS_NS, "dnszones",
                                                     "example-org")
    return list(((obj.get("status") or {}).get("dnssec") or {}).get("dsRecords") or [])


def _delv(ip: str, ds: list[str], tmp: pathlib.Path) -> str:
    anchors = tmp / "anchors.conf"
    anchors.write_text("trust-anchors {\n" + "".join(
        f'  {f[0]} static-ds {f[3]} {f[4]} {f[5]} "{f[6]}";\n' for f in (d.split() for d in ds)) + "};\n")
    done = subprocess.run([require("delv", component="delv (bind9-dnsutils)"), f"@{ip}", "-p",
                           str(workloads.DNS_CONTAINER_PORT), "-a", str(anchors), f"+root={SIGNED}",
                           f"www.{SIGNED}", "A"], capture_output=True, text=True, timeout=30)
    return done.stdout + done.stderr


def _answers(ip: str, zones: list[Any]) -> bool:
    """The pod answers every zone's SOA authoritatively (a quick look before asking every RRset)."""
    for zone in zones:
        query = dns.message.make_query(zone.name, "SOA")
        try:
            reply = dns.query.udp(query, ip, port=workloads.DNS_CONTAINER_PORT, timeout=0.3)
        except Exception:
            return False
        if not reply.answer or not reply.flags & dns.flags.AA:
            return False
    return True


def _ready(inst: Installation, name: str) -> bool:
    return inst.instance_conditions(name).get("Ready", ("",))[0] == "True"


# -- the tests, in order -----------------------------------------------------------------------------
def test_the_first_commit_is_reported_applied_and_its_report_verifies(installed: Installation,
                                                                       tmp_path: pathlib.Path) -> None:
    inst = installed
    dest = tmp_path / "clone"

    def note() -> str:
        try:
            return inst.remote.note_seen_by_a_fresh_clone(dest / str(time.monotonic_ns()), inst.sha)
        except Exception:
            return ""

    text = inst.wait(note, 120, f"the note on {inst.sha[:12]}")
    head = text.splitlines()[0]
    assert head.startswith(f"bindy-agent: applied {inst.sha[:12]}"), text[:2000]
    summary = text.split("--- bindy-agent report")[0]
    assert "failed:" not in summary, text[:3000]
    # its run created the servers: it said what waits for them, not a failure
    assert "waiting: waiting for dns-primary-0 to start: its zones are written once its pods run" in summary, summary
    shown = subprocess.run([str(ROOT / ".venv" / "bin" / "bindy-agent"), "report", inst.sha, "--repo", inst.remote.url,
                            "--cache", str(tmp_path / "cache"), "--report-key-file", str(inst.report_key_file)],
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stdout[:2000] + shown.stderr
    for name in SERVERS:
        inst.wait(lambda n=name: _ready(inst, n), 60, f"Bind9Instance {name} Ready")
    assert set(_drift(inst).values()) == {0.0}, _drift(inst)  # the install: the agent's own work only


def test_every_pod_serves_one_dnskey_set_and_delv_validates_against_the_status_ds(
        installed: Installation, tmp_path: pathlib.Path) -> None:
    inst = installed

    def alike() -> dict[str, tuple[str, ...]] | None:
        seen = _signed_everywhere(inst)
        return seen if len(seen) == len(SERVERS) and all(seen.values()) and len(set(seen.values())) == 1 else None

    seen = inst.wait(alike, 180, "one DNSKEY set for example.org on every pod")
    ds = inst.wait(lambda: _status_ds(inst), 120, "the DS in example-org's status")
    assert len(ds) == 1, ds
    some = next(iter(inst.pods("dns-primary-0")))
    xfr = _axfr(some.ip, SIGNED)
    assert xfr is not None
    xfr.to_file(str(tmp_path / "keys.zone"), relativize=False)
    bind_ds = subprocess.run(["dnssec-dsfromkey", "-2", "-f", str(tmp_path / "keys.zone"), SIGNED],
                             capture_output=True, text=True, check=True).stdout.split()
    assert ds[0].split() == bind_ds
    for name in SERVERS:
        for pod in inst.pods(name):
            answer = _delv(pod.ip, ds, tmp_path)
            assert "; fully validated" in answer, (name, pod, answer)
    inst.dnskeys = next(iter(seen.values()))  # type: ignore[attr-defined]
    secret = inst.core().read_namespaced_secret("example-org-dnssec-keys", DNS_NS)
    assert secret.metadata.labels.get("app.kubernetes.io/managed-by") == "bindy-agent"
    assert base64.b64decode(secret.data["ksk-file"]).decode().startswith("Kexample.org.+013+")


def test_a_deleted_primary_pod_signs_with_the_same_keys_and_is_ready_within_10_s_of_serving(
        installed: Installation, tmp_path: pathlib.Path) -> None:
    inst = installed
    name = "dns-primary-1"
    [old] = inst.pods(name)
    kubectl(inst.node, "-n", DNS_NS, "delete", "pod", old.name, "--wait=false")
    deleted = time.monotonic()
    zones = [z for z in inst.desired().zones if any(i.name == name for i in z.instances)]
    not_ready = serving = ready = 0.0
    new: install.Pod | None = None
    while time.monotonic() - deleted < 300 and not ready:
        if not not_ready and not _ready(inst, name):
            not_ready = time.monotonic()
        if new is None:
            new = next((p for p in inst.pods(name, ready_only=False) if p.name != old.name), None)
        if new is not None and not serving and _answers(new.ip, zones) and all(
                not install._served_on(new, z) for z in zones):
            serving = time.monotonic()
        if serving and _ready(inst, name):
            ready = time.monotonic()
        time.sleep(0.25)
    print(f"\n[e2e] {name}'s pod deleted: instance not Ready after {not_ready - deleted:.1f} s, the new pod served "
          f"every zone after {serving - deleted:.1f} s, the instance Ready {ready - serving:.1f} s after that")
    assert not_ready, "the instance's status never said its pod was gone"
    assert serving and ready, (serving, ready)
    assert ready - serving <= 10, f"Ready {ready - serving:.1f} s after the new pod served every zone"
    assert new is not None and _dnskeys(new.ip) == inst.dnskeys  # type: ignore[attr-defined]
    answer = _delv(new.ip, _status_ds(inst), tmp_path)
    assert "; fully validated" in answer, answer
    assert set(_drift(inst).values()) == {0.0}, _drift(inst)  # a pod restart: the agent's own work


def test_an_agent_restart_is_not_drift(installed: Installation) -> None:
    inst = installed
    leader = inst.wait(lambda: _holder(inst), 60, "a Lease holder")
    kubectl(inst.node, "-n", AGENT_NS, "delete", "pod", leader, "--wait=false")  # a clean stop: the Lease is released
    new = inst.wait(lambda: (h := _holder(inst)) not in ("", leader) and h, 60, "a new leader")
    inst.wait(lambda: _metric(_agents(inst)[new], "bindy_agent_runs_total") >= 1, 120,
              f"the first run of the new leader {new}")
    inst.wait(lambda: len(_agents(inst)) == 2, 120, "two agent pods again")
    assert set(_drift(inst).values()) == {0.0}, _drift(inst)


def test_a_record_changed_by_hand_is_written_back_and_counted_as_drift(installed: Installation) -> None:
    inst = installed
    [pod] = inst.pods("dns-primary-0")
    secret = inst.core().read_namespaced_secret(workloads.rndc_key_name("dns-primary-0"), DNS_NS)
    key_name = base64.b64decode(secret.data["key-name"]).decode()
    keyring = dns.tsigkeyring.from_text({key_name: (base64.b64decode(secret.data["algorithm"]).decode(),
                                                    base64.b64decode(secret.data["secret"]).decode())})
    update = dns.update.UpdateMessage("example.com.", keyring=keyring, keyname=dns.name.from_text(key_name))
    update.replace("www", 300, "A", "203.0.113.66")
    reply = dns.query.tcp(update, pod.ip, port=workloads.DNS_CONTAINER_PORT, timeout=10)
    assert reply.rcode() == 0, reply
    assert install.query(pod.ip, "www.example.com.", "A").answer[0][0].to_text() == "203.0.113.66"
    # the repair comes with the next full reconcile: the resync (10 minutes by default) or, as here,
    # a new leader's first run (the old one stopped cleanly)
    leader = _holder(inst)
    kubectl(inst.node, "-n", AGENT_NS, "delete", "pod", leader, "--wait=false")
    inst.wait(lambda: not install._served_on(pod, next(z for z in inst.desired().zones if z.name == "example.com.")),
              180, "www.example.com put back")
    inst.wait(lambda: sum(_drift(inst).values()) >= 1, 60, "the drift counter of the new leader")
    inst.wait(lambda: len(_agents(inst)) == 2, 120, "two agent pods again")


def test_force_deleting_the_leader_hands_over_to_the_warm_standby_5_times(installed: Installation) -> None:
    inst = installed
    for attempt in range(5):
        inst.wait(lambda: len(_agents(inst)) == 2 and _holder(inst), 180, "two agent pods and a leader")
        leader = _holder(inst)
        [standby] = [n for n in _agents(inst) if n != leader]
        # warm: it has followed the revision (at its start), and for a lease duration
        inst.wait(lambda s=standby: "standby: followed" in _log(inst, s), 180, f"{standby} following as a standby")
        time.sleep(LEASE_DURATION + 2)
        kubectl(inst.node, "-n", AGENT_NS, "delete", "pod", leader, "--grace-period=0", "--force", "--wait=false")
        killed = time.monotonic()
        new = inst.wait(lambda old=leader: (h := _holder(inst)) not in ("", old) and h, 90, "a new leader")
        print(f"[e2e] try {attempt + 1}: leader {leader} force-deleted; {new} leads after "
              f"{time.monotonic() - killed:.1f} s (standby: {standby})")
        assert new == standby, f"try {attempt + 1}: {new} took the Lease, not the warm standby {standby}"
