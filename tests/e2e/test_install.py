"""The agent installed from deploy/ on the real node, as docs/install.md says (issue 25, stage 2).

`kubectl apply -k` of an overlay of deploy/ naming the local agent image and a Git repository the
agent pod reaches on the node's address; the two Secrets created with `kubectl create secret`.
sample-repo (its cluster pointed at the local bind9 and sidecar images under the names Bindy
trusts) is pushed before the install: the agent, as its own ServiceAccount with the shipped RBAC,
creates the hierarchy, the bind9 pods become Ready, and every RRset of the revision is answered by
every pod of the primary and of the secondary instance - asked with DNS queries at the pod IPs.
The tests of this module run in order on one installation."""

from __future__ import annotations

import os
import pathlib
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import install
from tests.support.install import AGENT_NS, DNS_NS, Installation, kubectl
from tests.support.node import Node

FIRST_SYNC_TIMEOUT = int(os.environ.get("BINDY_E2E_FIRST_SYNC", "420"))  # the agent's pods start, then its first run creates and waits for the servers
PUSH_TIMEOUT = 120
# The overlay's schedule: a run every 10 s, and a full reconcile (every zone on every pod) once the
# last is 20 s old - so a replaced bind9 pod gets its zones back by the next resync, without a commit.
AGENT_ENV = {"BINDY_AGENT_INTERVAL": "10", "BINDY_AGENT_JITTER": "1", "BINDY_AGENT_RESYNC_AFTER": "20"}
RESYNC = 20 + 10 + 1


@pytest.fixture(scope="module")
def installed(node: Node, api: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installation]:
    inst = Installation(node, api, tmp_path_factory.mktemp("install"))
    inst.clean()
    inst.sha = inst.push(install.sample_repo_files(node), "sample-repo")
    started = time.monotonic()
    inst.install(agent_env=AGENT_ENV)
    try:
        inst.first_sync = inst.wait_zones(inst.desired(), FIRST_SYNC_TIMEOUT, roles=("primary",))
        print(f"\n[e2e] kubectl apply -k -> every zone on the primary's pods: {time.monotonic() - started:.1f} s")
        yield inst
    finally:
        if not os.environ.get("BINDY_E2E_KEEP"):  # set: left installed, to look at after a failure
            inst.uninstall()


def _instances(inst: Installation) -> dict[str, str]:
    """Bind9Instance name -> role, as the agent created them."""
    listed = inst.custom().list_namespaced_custom_object("bindy.firestoned.io", "v1beta1", DNS_NS, "bind9instances")
    return {o["metadata"]["name"]: o["spec"].get("role", "") for o in listed["items"]}


def _wait(check: Any, timeout: float, what: str, inst: Installation, pause: float = 1) -> Any:
    return inst.wait(check, timeout, what, pause=pause)


def test_the_agent_as_its_service_account_creates_the_hierarchy_and_every_zone_on_the_primary(
        installed: Installation) -> None:
    """Through the zone API of the generated pods, whose sidecar reviews the agent's audience-bound
    token with the API server (TokenReview, deploy/bind9-tokenreview.yaml), reached by the Service's
    name (the node's cluster DNS)."""
    inst = installed
    pods = inst.agent_pods()
    assert pods and {p.spec.service_account_name for p in pods} == {"bindy-agent"}
    roles = _instances(inst)
    assert sorted(roles.values()) == ["primary", "secondary"], roles
    for name in roles:  # the fixture waited for the primary's; the secondary's may still be starting
        _wait(lambda n=name: inst.pods(n), 120, f"{name}: a ready pod", inst)
    assert inst.zones_missing(inst.desired(), roles=("primary",)) == []


def test_every_rrset_of_the_sample_repo_is_served_by_every_pod_and_the_instances_are_ready(
        installed: Installation) -> None:
    inst = installed
    roles = _instances(inst)
    desired = inst.desired()
    inst.wait_served(desired, PUSH_TIMEOUT)
    # every RRset on every ready pod of both instances, nothing missing, nothing extra
    assert inst.served(desired) == []
    assert inst.extra(desired) == []
    for name in roles:
        assert inst.pods(name), f"{name}: no ready pod"
        ready = _wait(lambda n=name: inst.instance_conditions(n).get("Ready", ("", "", ""))[0] == "True", PUSH_TIMEOUT,
                      f"Bind9Instance {name} Ready", inst)
        assert ready


def test_the_commit_gets_its_note(installed: Installation, tmp_path: pathlib.Path) -> None:
    inst = installed
    sha = inst.sha

    def note() -> str:
        dest = tmp_path / f"clone-{time.monotonic_ns()}"
        try:
            return inst.remote.note_seen_by_a_fresh_clone(dest, sha)
        except Exception:
            return ""

    text = _wait(note, 120, f"the agent's note on {sha[:12]}", inst)
    assert sha[:7] in text or "applied" in text.lower(), text


def test_a_one_record_push_is_served_by_every_pod(installed: Installation) -> None:
    inst = installed
    inst.push({"records/example-com/e2e.yaml": """
        apiVersion: bindy.firestoned.io/v1beta1
        kind: ARecord
        metadata:
          name: e2e-push
          namespace: dns-system
          labels: {zone: example-com}
        spec:
          name: e2e-push
          ipv4Addresses: ["192.0.2.250"]
        """}, "one record")
    started = time.monotonic()
    assert inst.webhook() in (200, 202)
    desired = inst.desired()
    took = inst.wait_served(desired, PUSH_TIMEOUT)
    print(f"\n[e2e] one-record push (webhook) -> served on every pod: {time.monotonic() - started:.1f} s ({took:.1f})")
    for role in ("primary", "secondary"):
        name = f"dns-{role}-0"
        for pod in inst.pods(name):
            answer = install.query(pod.ip, "e2e-push.example.com.", "A")
            assert [str(r) for rrset in answer.answer for r in rrset] == ["192.0.2.250"], (role, pod)


def test_the_secondary_gets_its_zones_by_transfer_and_is_notified(installed: Installation) -> None:
    inst = installed
    secondary, primary = "dns-secondary-0", "dns-primary-0"
    primary_ips = {p.ip for p in inst.pods(primary)}
    for pod in inst.pods(secondary):
        log = kubectl(inst.node, "-n", DNS_NS, "logs", pod.name, "-c", "bind9").stdout
        for zone in ("example.com", "example.org", "internal.example.net"):
            transfers = [line for line in log.splitlines()
                         if f"transfer of '{zone}/IN' from" in line and "Transfer completed" in line]
            assert transfers, f"{pod.name}: no completed transfer of {zone} in its log:\n{log[-3000:]}"
            assert any(ip in line for line in transfers for ip in primary_ips), transfers
        # the one-record push reached it by NOTIFY from the primary (its refresh is an hour)
        notified = [line for line in log.splitlines() if "zone example.com/IN: notify from" in line]
        assert notified and any(ip in line for line in notified for ip in primary_ips), log[-3000:]


def test_an_instance_whose_pod_cannot_start_is_not_ready_while_the_others_are(installed: Installation) -> None:
    inst = installed
    cluster = inst.files["infrastructure/cluster.yaml"]
    broken = cluster.split("---")[0].replace("name: dns\n", "name: broken\n", 1)
    broken = broken.replace(inst.node.mirror("bind9"), "docker.io/internetsystemsconsortium/bind9:9.18-not-here")
    broken = broken.split("  zonesFrom:")[0].replace("  secondary:\n    replicas: 1\n    labels:\n      tier: edge\n",
                                                     "")
    inst.push({"infrastructure/broken.yaml": broken}, "a cluster whose image is not there")
    assert inst.webhook() in (200, 202)

    def not_ready() -> tuple[str, str, str] | None:
        names = [n for n in _instances(inst) if n.startswith("broken")]
        if not names:
            return None
        cond = inst.instance_conditions(names[0]).get("Ready")
        return cond if cond and cond[0] == "False" else None

    cond = _wait(not_ready, 120, "the broken instance's Ready condition False", inst)
    assert cond[0] == "False", cond
    inst.broken_condition = cond
    # the servers that can start are Ready and still serve everything
    for name, _ in _instances(inst).items():
        if not name.startswith("broken"):
            assert inst.instance_conditions(name).get("Ready", ("",))[0] == "True", name
    assert inst.served(inst.desired()) == []


def test_the_not_ready_instance_says_why(installed: Installation) -> None:
    """The first Ready=False comes from the run that created the Deployment, before its pod tried to
    pull; a tick of the unchanged head looks again while pods are not ready, and names the reason."""
    inst = installed
    assert getattr(inst, "broken_condition", None) is not None, "test_an_instance_whose_pod_cannot_start ran first"

    def why() -> tuple[str, str, str] | None:
        names = [n for n in _instances(inst) if n.startswith("broken")]
        cond = inst.instance_conditions(names[0]).get("Ready") if names else None
        pulls = ("ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff")
        return cond if cond and cond[0] == "False" and any(r in cond[2] for r in pulls) else None

    cond = _wait(why, 90, "the broken instance's Ready condition naming why its image is not pulled", inst)
    assert "pod broken-primary-0" in cond[2] and "container bind9" in cond[2], cond


def test_the_agent_pod_killed_mid_sync_its_replacement_converges(installed: Installation) -> None:
    inst = installed
    records = "\n---\n".join(f"""apiVersion: bindy.firestoned.io/v1beta1
kind: ARecord
metadata: {{name: bulk-{i}, namespace: dns-system, labels: {{zone: example-com}}}}
spec: {{name: bulk-{i}, ipv4Addresses: ["198.51.100.{i % 250 + 1}"]}}""" for i in range(150))
    inst.push({"records/example-com/bulk.yaml": records + "\n"}, "150 records")
    holder = _lease_holder(inst)
    assert inst.webhook_endpoint() == holder  # the webhook Service selects the leader's pod only
    runs = _runs_started(inst, holder)
    assert inst.webhook() in (200, 202)
    # the holder's run for the webhook has started: it fetches, plans, then writes 150 UPDATEs
    _wait(lambda: _runs_started(inst, holder) > runs, 30, f"a run started by {holder}", inst)
    kubectl(inst.node, "-n", AGENT_NS, "delete", "pod", holder, "--grace-period=0", "--force", "--wait=false")
    desired = inst.desired()
    took = inst.wait_served(desired, PUSH_TIMEOUT)
    print(f"\n[e2e] agent pod {holder} killed mid-sync: converged {took:.1f} s later")
    assert inst.extra(desired) == []
    # the standby takes the Lease once the killed holder's expires, labels its pod, and the webhook
    # Service selects that pod: a webhook now reaches the replica that syncs
    _wait(lambda: _holder_pod(inst) not in ("", holder), 60, "a new Lease holder", inst)
    new = _lease_holder(inst)
    _wait(lambda: inst.webhook_endpoint() == new, 30, f"the webhook Service selecting the new leader {new}", inst)


def test_replicas_2_both_primary_pods_serve_every_zone(installed: Installation) -> None:
    inst = installed
    cluster = inst.files["infrastructure/cluster.yaml"]
    two = cluster.replace("  primary:\n    replicas: 1\n", "  primary:\n    replicas: 2\n", 1)
    assert two != cluster
    inst.push({"infrastructure/cluster.yaml": two}, "two primaries")
    assert inst.webhook() in (200, 202)
    desired = inst.desired()
    # a cluster's `primary.replicas` is its number of primary Bind9Instances (Bindy's hierarchy), each
    # with its own pod: the new one gets every zone and record, and both serve them
    assert sorted(k.name for k, i in desired.instances.items() if i.role == "primary" and k.name.startswith("dns-")) \
        == ["dns-primary-0", "dns-primary-1"]
    took = inst.wait_served(desired, 180)
    print(f"\n[e2e] a second primary instance -> every zone served on it: {took:.1f} s")


def test_a_deleted_pod_is_replaced_and_serves_again_without_a_new_commit(installed: Installation) -> None:
    inst = installed
    desired = inst.desired()
    primary = "dns-primary-0"
    before = inst.pods(primary)
    assert before
    kubectl(inst.node, "-n", DNS_NS, "delete", "pod", before[0].name, "--wait=false")
    _wait(lambda: [p for p in inst.pods(primary) if p.name != before[0].name], 180, "a replacement pod", inst)
    # the next resync (AGENT_ENV) adds the zones and records to the new pod
    took = inst.wait_served(desired, RESYNC + PUSH_TIMEOUT)
    print(f"\n[e2e] replacement pod ready -> served again: {took:.1f} s")


def _lease_holder(inst: Installation) -> str:
    from kubernetes import client

    lease = client.CoordinationV1Api(inst.api).read_namespaced_lease("bindy-agent", AGENT_NS)
    holder = str(lease.spec.holder_identity or "")  # `<pod name>-<random suffix>`
    pods = [p.metadata.name for p in inst.agent_pods() if holder.startswith(p.metadata.name + "-")]
    assert len(pods) == 1, (holder, [p.metadata.name for p in inst.agent_pods()])
    return str(pods[0])


def _holder_pod(inst: Installation) -> str:
    """The live agent pod that holds the Lease, or ""."""
    from kubernetes import client

    holder = str(client.CoordinationV1Api(inst.api).read_namespaced_lease("bindy-agent", AGENT_NS).spec.holder_identity
                 or "")
    return next((p.metadata.name for p in inst.agent_pods() if holder.startswith(p.metadata.name + "-")), "")


def _runs_started(inst: Installation, pod: str) -> int:
    log = kubectl(inst.node, "-n", AGENT_NS, "logs", pod, check=False).stdout
    return sum(1 for line in log.splitlines() if '"msg":"run started by' in line)
