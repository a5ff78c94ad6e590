"""A Bind9Instance's zones on a PersistentVolumeClaim, on the real node (issue 26, "Pods and storage").

The node has no storage provisioner, so the test is the cluster's administrator: it creates a static
hostPath PersistentVolume of class `bindy-e2e-local` (a directory under the test's tmp dir). The
repository, installed as docs/install.md says: a Bind9Cluster `vault` with a DNSSEC policy and no generated
instances, one Bind9Instance `kept-0` whose `storage` asks for a claim of that class
(`persistentVolumeClaim: {size, storageClassName}`), and a signed zone kept.example on it. Then, test
after test: the agent creates the claim, kube-controller-manager's binder binds it to the volume, the
pod runs with it and serves the signed zone, whose keys BIND wrote on the volume; the pod deleted, its
replacement serves the same DNSSEC keys (same DNSKEY set, same key tags, the ones BIND keeps on the
claim); the instance removed from Git, its Deployment
goes and the claim stays, bound, with the keys on it, and so does the zone's key Secret (the zone has
no primary now, and its keys are kept as they are); the instance back in Git, its new pod serves the
same keys again. Every check is a DNS query at the pod IP, kubectl, or the volume's directory.
"""

from __future__ import annotations

import json
import os
import pathlib
import time
from collections.abc import Iterator
from typing import Any

import dns.dnssec
import dns.exception
import dns.rdatatype
import pytest

from agent.desired import workloads
from agent.model import names
from tests.support import install
from tests.support.install import DNS_NS, Installation, kubectl
from tests.support.node import Node

FIRST_SYNC_TIMEOUT = int(os.environ.get("BINDY_E2E_FIRST_SYNC", "420"))
PUSH_TIMEOUT = 120
# the instance leaving Git prunes 6 of the 9 objects the agent may prune here (its claim is not one, nor
# the signed zone's key Secret: the agent deletes neither): under the gate's prune limit (30% from 10
# objects), however the run observed the cluster - with no --allow-prune
AGENT_ENV = {"BINDY_AGENT_INTERVAL": "10", "BINDY_AGENT_JITTER": "1", "BINDY_AGENT_RESYNC_AFTER": "20"}
KEYS = "kept-dnssec-keys"  # the zone's key Secret (agent/desired/zonekeys.py)
RESYNC = 20 + 10 + 1
CLASS = "bindy-e2e-local"
VOLUME = "bindy-e2e-kept"
INSTANCE = "kept-0"
CLAIM = f"{INSTANCE}-zones"  # storage.claim_name's default
ZONE = "kept.example"
POLICY = "e2e-kept"


def _files(node: Node) -> dict[str, str]:
    return {
        "infrastructure/cluster.yaml": f"""apiVersion: bindy.firestoned.io/v1beta1
kind: Bind9Cluster
metadata: {{name: vault, namespace: dns-system}}
spec:
  version: "9.18"
  image: {{image: "{node.mirror('bind9')}", imagePullPolicy: Never}}
  primary: {{replicas: 0}}
  secondary: {{replicas: 0}}
  global:
    recursion: false
    allowQuery: ["any"]
    bindcarConfig: {{image: "{node.mirror('zone-api')}", imagePullPolicy: Never}}
    dnssec:
      signing: {{enabled: true, policy: {POLICY}, algorithm: ECDSAP256SHA256, nsec3: true, nsec3Iterations: 0}}
""",
        "infrastructure/kept.yaml": _instance(),
        "zones/kept.yaml": f"""apiVersion: bindy.firestoned.io/v1beta1
kind: DNSZone
metadata: {{name: kept, namespace: dns-system}}
spec:
  zoneName: {ZONE}
  clusterRef: vault
  dnssecPolicy: {POLICY}
  soaRecord: {{primaryNs: ns1.{ZONE}., adminEmail: hostmaster.{ZONE}., serial: 1, refresh: 3600, retry: 600,
               expire: 604800, negativeTtl: 300}}
  nameServers:
    - {{hostname: ns1.{ZONE}., ipv4Address: 192.0.2.53}}
""",
        "records/www.yaml": f"""apiVersion: bindy.firestoned.io/v1beta1
kind: ARecord
metadata: {{name: kept-www, namespace: dns-system}}
spec: {{name: "www.{ZONE}.", ipv4Addresses: ["192.0.2.80"]}}
""",
    }


def _instance(extra: str = "") -> str:
    return f"""apiVersion: bindy.firestoned.io/v1beta1
kind: Bind9Instance
metadata: {{name: {INSTANCE}, namespace: dns-system}}
spec:
  clusterRef: vault
  role: primary
  storage:
    storageType: persistentVolumeClaim
    persistentVolumeClaim: {{size: 64Mi, storageClassName: {CLASS}}}
{extra}"""


class Storage(Installation):
    volume_dir: pathlib.Path
    claim_bound = 0.0  # seconds from `kubectl apply -k` to the claim Bound
    key_tags: list[int]


def _volume(node: Node, path: pathlib.Path) -> None:
    """The administrator's part: a static volume of the class the instance asks for."""
    path.mkdir(parents=True)
    os.chown(path, workloads.BIND_UID, workloads.BIND_UID)  # the pod's user; hostPath has no fsGroup
    kubectl(node, "delete", "pv", VOLUME, "--ignore-not-found", "--wait=true", timeout=60)
    kubectl(node, "apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": VOLUME},
        "spec": {"capacity": {"storage": "64Mi"}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": CLASS,
                 "hostPath": {"path": str(path), "type": "Directory"}}}))


@pytest.fixture(scope="module")
def installed(node: Node, api: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Storage]:
    tmp = tmp_path_factory.mktemp("storage")
    inst = Storage(node, api, tmp)
    inst.clean()
    inst.volume_dir = tmp / "volume"
    _volume(node, inst.volume_dir)
    inst.sha = inst.push(_files(node), "a signed zone on an instance with a claim")
    started = time.monotonic()
    inst.install(agent_env=AGENT_ENV)
    try:
        _wait(lambda: _claim(inst), FIRST_SYNC_TIMEOUT, f"the claim {CLAIM} created", inst, pause=0.2)
        created = time.monotonic()
        _wait(lambda: _bound(inst), 120, f"the claim {CLAIM} bound to {VOLUME}", inst, pause=0.2)
        inst.claim_bound = time.monotonic() - created
        inst.first_sync = inst.wait_zones(inst.desired(), FIRST_SYNC_TIMEOUT)
        print(f"\n[e2e] kubectl apply -k -> claim {CLAIM} created {created - started:.1f} s, bound "
              f"{inst.claim_bound:.1f} s later -> {ZONE} served {time.monotonic() - started:.1f} s")
        yield inst
    finally:
        if not os.environ.get("BINDY_E2E_KEEP"):
            inst.uninstall()
            kubectl(node, "delete", "pv", VOLUME, "--ignore-not-found", "--wait=false", check=False)


def _wait(check: Any, timeout: float, what: str, inst: Installation, pause: float = 1) -> Any:
    return inst.wait(check, timeout, what, pause=pause)


def _claim(inst: Installation) -> Any:
    from kubernetes.client.exceptions import ApiException

    try:
        return inst.core().read_namespaced_persistent_volume_claim(CLAIM, DNS_NS)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _bound(inst: Installation) -> bool:
    claim = _claim(inst)
    return claim is not None and claim.status.phase == "Bound" and claim.spec.volume_name == VOLUME


def _key_tags(ip: str) -> list[int]:
    """The key tags of the DNSKEY set the pod serves for ZONE ([] when it serves none)."""
    try:
        reply = install.query(ip, f"{ZONE}.", "DNSKEY")
    except (dns.exception.DNSException, OSError):
        return []
    return sorted(dns.dnssec.key_id(r) for rrset in reply.answer if rrset.rdtype == dns.rdatatype.DNSKEY
                  for r in rrset)


def _key_files(directory: pathlib.Path) -> list[int]:
    """The key tags of the zone's key files BIND wrote on the volume (K<zone>.+013+<tag>.key)."""
    return sorted(int(p.name.rsplit("+", 1)[1].split(".")[0]) for p in directory.glob(f"K{ZONE}.+*.key"))


def _www(ip: str) -> list[str]:
    try:
        reply = install.query(ip, f"www.{ZONE}.", "A")
    except (dns.exception.DNSException, OSError):
        return []
    return sorted(str(r) for rrset in reply.answer for r in rrset if rrset.rdtype == dns.rdatatype.A)


def test_the_agent_creates_the_claim_it_binds_and_the_pod_serves_signed_zones_from_it(installed: Storage) -> None:
    inst = installed
    claim = _claim(inst)
    assert claim is not None and _bound(inst), claim
    # the agent's claim: its labels, no owner (it outlives the instance), the size and class from Git
    assert (claim.metadata.labels or {}).get(names.MANAGED_BY_KEY) == names.MANAGED_BY_VALUE, claim.metadata.labels
    assert not claim.metadata.owner_references, claim.metadata.owner_references
    assert claim.spec.storage_class_name == CLASS and claim.spec.resources.requests == {"storage": "64Mi"}
    assert claim.spec.access_modes == ["ReadWriteOnce"]
    pods = inst.core().list_namespaced_pod(DNS_NS, label_selector=f"app.kubernetes.io/instance={INSTANCE}").items
    assert len(pods) == 1 and pods[0].status.phase == "Running", [p.status.phase for p in pods]
    zones = next(v for v in pods[0].spec.volumes if v.name == "zones")
    assert zones.persistent_volume_claim.claim_name == CLAIM
    inst.wait_served(inst.desired(), PUSH_TIMEOUT)
    pod = inst.pods(INSTANCE)[0]
    inst.key_tags = _wait(lambda: _key_tags(pod.ip), PUSH_TIMEOUT, f"{ZONE} signed (DNSKEY) on {pod.name}", inst)
    # BIND wrote the keys it serves on the volume
    assert _key_files(inst.volume_dir) == inst.key_tags, (sorted(p.name for p in inst.volume_dir.iterdir()),
                                                         inst.key_tags)
    print(f"\n[e2e] claim bound {inst.claim_bound:.1f} s after the agent created it; {ZONE} served signed with key "
          f"tags {inst.key_tags}")


def test_a_replaced_pod_serves_the_same_dnssec_keys(installed: Storage) -> None:
    inst = installed
    old = inst.pods(INSTANCE)
    assert len(old) == 1, old
    before = _key_tags(old[0].ip)
    assert before == inst.key_tags, (before, inst.key_tags)
    kubectl(inst.node, "-n", DNS_NS, "delete", "pod", old[0].name, "--wait=false")
    deleted = time.monotonic()
    new = _wait(lambda: [p for p in inst.pods(INSTANCE) if p.name != old[0].name], 180,
                f"a replacement pod of {INSTANCE}", inst)[0]
    ready = time.monotonic()
    # the zone and its keys come back from the claim with the pod, before any run of the agent
    after = _wait(lambda: _key_tags(new.ip), RESYNC + PUSH_TIMEOUT, f"{ZONE} DNSKEY on {new.name}", inst, pause=0.3)
    served = time.monotonic()
    assert after == before, f"the replacement pod serves other keys: {after} (before: {before})"
    assert _www(new.ip) == ["192.0.2.80"]
    inst.wait_served(inst.desired(), RESYNC + PUSH_TIMEOUT)
    assert _key_tags(new.ip) == before and _key_files(inst.volume_dir) == before
    print(f"\n[e2e] pod deleted -> replacement ready {ready - deleted:.1f} s -> {ZONE} served with the same key "
          f"tags {after} {served - ready:.1f} s later")


def _running(inst: Installation) -> list[str]:
    """The pods of INSTANCE whose bind9 container runs (named has the claim's directory open)."""
    out = []
    for pod in inst.core().list_namespaced_pod(DNS_NS, label_selector=f"app.kubernetes.io/instance={INSTANCE}").items:
        if any(c.name == "bind9" and c.state.running for c in pod.status.container_statuses or []):
            out.append(pod.metadata.name)
    return sorted(out)


def test_a_rollout_of_the_instance_keeps_its_keys(installed: Storage) -> None:
    inst = installed
    old = {p.name for p in inst.pods(INSTANCE)}
    before = _key_tags(inst.pods(INSTANCE)[0].ip)
    inst.push({"infrastructure/kept.yaml": _instance("  resources: {requests: {cpu: 20m, memory: 48Mi}}\n")},
              f"{INSTANCE}'s pod template changes: a rollout")
    started = time.monotonic()
    assert inst.webhook() in (200, 202)
    most: list[str] = []
    deadline = time.monotonic() + RESYNC + 180
    while time.monotonic() < deadline:
        running = _running(inst)
        most = running if len(running) > len(most) else most
        ready = {p.name for p in inst.pods(INSTANCE)}
        if ready and not ready & old and not set(running) & old:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"{INSTANCE} not rolled out\n{inst.diagnose()}")
    rolled = time.monotonic()
    new = inst.pods(INSTANCE)[0]
    tags = _wait(lambda: _key_tags(new.ip), PUSH_TIMEOUT, f"{ZONE} DNSKEY on {new.name}", inst, pause=0.3)
    assert tags == before, f"after a rollout the pod serves other keys: {tags} (before: {before})"
    inst.wait_served(inst.desired(), RESYNC + PUSH_TIMEOUT)
    print(f"\n[e2e] rollout of {INSTANCE}: done {rolled - started:.1f} s after the push; at most {len(most)} pods ran "
          f"named on the claim at once ({most}); same key tags {tags}")


def test_the_claim_stays_when_the_instance_leaves_git_and_serves_its_keys_when_it_returns(
        installed: Storage) -> None:
    inst = installed
    from kubernetes import client

    apps = client.AppsV1Api(inst.api)
    keys = inst.core().read_namespaced_secret(KEYS, DNS_NS)
    inst.push({"infrastructure/kept.yaml": None}, f"{INSTANCE} leaves Git")
    assert inst.webhook() in (200, 202)
    started = time.monotonic()

    def deployment_gone() -> bool:
        return not [d for d in apps.list_namespaced_deployment(DNS_NS).items if d.metadata.name == INSTANCE]

    _wait(deployment_gone, RESYNC + PUSH_TIMEOUT, f"the Deployment {INSTANCE} pruned", inst)
    _wait(lambda: not inst.pods(INSTANCE, ready_only=False), 120, f"the pods of {INSTANCE} gone", inst)
    pruned = time.monotonic()
    claim = _claim(inst)
    assert claim is not None and claim.metadata.deletion_timestamp is None and _bound(inst), claim
    assert _key_files(inst.volume_dir) == inst.key_tags
    # a later run (the resync) still leaves it
    time.sleep(RESYNC)
    assert _bound(inst) and _claim(inst).metadata.uid == claim.metadata.uid
    kept = inst.core().read_namespaced_secret(KEYS, DNS_NS)  # the zone's keys, though no primary signs it now
    assert (kept.metadata.uid, kept.data) == (keys.metadata.uid, keys.data), "the zone's key Secret was replaced"

    inst.push({"infrastructure/kept.yaml": _instance()}, f"{INSTANCE} back in Git")
    back = time.monotonic()
    assert inst.webhook() in (200, 202)
    pod = _wait(lambda: inst.pods(INSTANCE), 180, f"a ready pod of {INSTANCE} again", inst)[0]
    tags = _wait(lambda: _key_tags(pod.ip), RESYNC + PUSH_TIMEOUT, f"{ZONE} DNSKEY on {pod.name}", inst, pause=0.3)
    assert tags == inst.key_tags, f"the returning instance serves other keys: {tags} (before: {inst.key_tags})"
    inst.wait_served(inst.desired(), RESYNC + PUSH_TIMEOUT)
    assert inst.core().read_namespaced_secret(KEYS, DNS_NS).data == keys.data
    print(f"\n[e2e] {INSTANCE} out of Git -> pruned {pruned - started:.1f} s, claim kept (uid {claim.metadata.uid}); "
          f"back in Git -> serving the same key tags {tags} {time.monotonic() - back:.1f} s later")
