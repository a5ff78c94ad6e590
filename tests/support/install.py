"""The agent installed on the e2e node the way docs/install.md says, and what a user then sees.

`Installation.install()`: a Git repository served over smart HTTP on the node's address (the agent
pod reaches it there), the two Secrets created with `kubectl create secret generic --from-file`, and
`kubectl apply -k` of an overlay of deploy/ that names the local agent image (`images:` newName /
newTag) and the repository - nothing else of deploy/ changes. The repository's Bind9Clusters point
at the local bind9 and sidecar images under the names Bindy trusts (Node.mirror), as a user with a
private mirror would. `served()` reads every RRset the revision wants from every pod of every
instance that serves its zone, with DNS queries straight at the pod IPs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
import pathlib
import secrets
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.zone

from agent.desired import hierarchy, placement, workloads
from tests.conftest import ROOT, load_dir
from tests.support.githttp import GitHttpServer
from tests.support.gitremote import GitRemote
from tests.support.node import NODE_IP, Node

KUBECTL = "/usr/bin/kubectl" if os.path.exists("/usr/bin/kubectl") else str(ROOT / ".venv" / "bin" / "kubectl")
AGENT_NS = "bindy-agent"
DNS_NS = "dns-system"
IMAGE = "ghcr.io/bindy-gitops/bindy-agent"


def kubectl(node: Node, *args: str, check: bool = True, stdin: str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([KUBECTL, "--kubeconfig", str(node.kubeconfig), *args], capture_output=True, text=True,
                          timeout=timeout, input=stdin)
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done


def sample_repo_files(node: Node) -> dict[str, str]:
    """sample-repo as shipped, its cluster pointed at the local images."""
    files = {str(p.relative_to(ROOT / "sample-repo")): p.read_text()
             for p in sorted((ROOT / "sample-repo").rglob("*.yaml"))}
    cluster = files["infrastructure/cluster.yaml"]
    local = f"""  image:
    image: {node.mirror('bind9')}
    imagePullPolicy: Never
"""
    cluster = cluster.replace('  version: "9.18"\n', f'  version: "9.18"\n{local}', 1)
    cluster = cluster.replace("  global:\n", f"""  global:
    bindcarConfig:
      image: {node.mirror('zone-api')}
      imagePullPolicy: Never
""", 1)
    assert node.mirror("zone-api") in cluster and node.mirror("bind9") in cluster, cluster
    files["infrastructure/cluster.yaml"] = cluster
    return files


@dataclasses.dataclass
class Pod:
    name: str
    ip: str
    instance: str
    role: str


class Installation:
    def __init__(self, node: Node, api: Any, tmp: pathlib.Path) -> None:
        self.node, self.api, self.tmp = node, api, tmp
        self.token = secrets.token_hex(20)
        self.webhook_secret = secrets.token_hex(32)
        self.remote = GitRemote(tmp / "git")
        self.git = GitHttpServer(tmp / "git", self.token, host=NODE_IP)
        self.overlay = tmp / "overlay"
        self.files: dict[str, str] = {}  # the repository's files at its head
        self.sha = ""  # the commit a test pushed first
        self.first_sync = 0.0
        self.broken_condition: tuple[str, str, str] | None = None

    # --- install --------------------------------------------------------------------------------
    def clean(self) -> None:
        """What an earlier install on this node left (a reused node): its namespaces."""
        for ns in (DNS_NS, AGENT_NS):
            kubectl(self.node, "delete", "namespace", ns, "--ignore-not-found", "--wait=true", timeout=300)

    def push(self, files: Mapping[str, str | None], message: str) -> str:
        self.files.update({k: v for k, v in files.items() if v is not None})
        for k, v in files.items():
            if v is None:
                self.files.pop(k, None)
        sha = self.remote.commit(message, dict(files))
        self.remote.push()
        return sha

    def write_overlay(self, *, agent_env: dict[str, str] | None = None) -> pathlib.Path:
        ref = self.node.image("agent")
        name, _, tag = ref.rpartition(":")
        env = {"BINDY_AGENT_REPO": self.git.url("remote.git"), **(agent_env or {})}
        self.overlay.mkdir(parents=True, exist_ok=True)
        deploy = os.path.relpath(ROOT / "deploy", self.overlay)
        env_yaml = ", ".join(f"{{name: {k}, value: {json.dumps(v)}}}" for k, v in env.items())
        (self.overlay / "kustomization.yaml").write_text(f"""resources: [{deploy}]
images: [{{name: {IMAGE}, newName: {name}, newTag: "{tag}"}}]
patches:
  - patch: |
      apiVersion: apps/v1
      kind: Deployment
      metadata: {{name: bindy-agent, namespace: {AGENT_NS}}}
      spec:
        template:
          spec:
            containers:
              - name: agent
                imagePullPolicy: Never
                env: [{env_yaml}]
""")
        return self.overlay

    def install(self, *, agent_env: dict[str, str] | None = None) -> None:
        """docs/install.md's "Before you install", steps 2 and 3, then `kubectl apply -k`."""
        self.git.start()
        secrets_dir = self.tmp / "secrets"
        secrets_dir.mkdir()
        (secrets_dir / "git-token").write_text(self.token + "\n")
        (secrets_dir / "webhook-secret").write_text(self.webhook_secret + "\n")
        kubectl(self.node, "create", "namespace", AGENT_NS)
        kubectl(self.node, "-n", AGENT_NS, "create", "secret", "generic", "bindy-agent-git",
                f"--from-file=token={secrets_dir / 'git-token'}")
        kubectl(self.node, "-n", AGENT_NS, "create", "secret", "generic", "bindy-agent-webhook",
                f"--from-file=secret={secrets_dir / 'webhook-secret'}")
        kubectl(self.node, "apply", "-k", str(self.write_overlay(agent_env=agent_env)))

    def uninstall(self) -> None:
        kubectl(self.node, "delete", "-k", str(self.overlay), "--ignore-not-found", "--wait=false", check=False)
        self.clean()
        self.git.stop()

    # --- what a user sees -----------------------------------------------------------------------
    def core(self) -> Any:
        from kubernetes import client

        return client.CoreV1Api(self.api)

    def custom(self) -> Any:
        from kubernetes import client

        return client.CustomObjectsApi(self.api)

    def agent_pods(self) -> list[Any]:
        return list(self.core().list_namespaced_pod(AGENT_NS, label_selector="app.kubernetes.io/name=bindy-agent").items)

    def agent_url(self) -> str:
        svc = self.core().read_namespaced_service("bindy-agent", AGENT_NS)
        return f"http://{svc.spec.cluster_ip}:8080"

    def webhook_endpoint(self, timeout: float = 60) -> str:
        """The pod behind the webhook Service: the Lease holder's (deploy/service.yaml selects the pod
        with the leader label). Waits for one, as a Git server's delivery has to (a leader that just died
        is replaced within the lease duration)."""
        deadline = time.monotonic() + timeout
        while True:
            eps = self.core().read_namespaced_endpoints("bindy-agent", AGENT_NS)
            pods = [a.target_ref.name for sub in eps.subsets or [] for a in (sub.addresses or []) + (
                sub.not_ready_addresses or []) if a.target_ref is not None]
            if pods:
                return str(pods[0]) if len(pods) == 1 else ",".join(sorted(pods))
            if time.monotonic() > deadline:
                raise AssertionError(f"no agent pod behind the webhook Service after {timeout:.0f} s: " + "; ".join(
                    f"{p.metadata.name} {p.status.phase} labels={p.metadata.labels}" for p in self.agent_pods()))
            time.sleep(0.5)

    def webhook(self) -> int:
        self.webhook_endpoint()
        body = b'{"ref": "refs/heads/main"}'
        signature = "sha256=" + hmac.new(self.webhook_secret.encode(), body, hashlib.sha256).hexdigest()
        req = urllib.request.Request(f"{self.agent_url()}/hooks/git", data=body, method="POST", headers={
            "X-Hub-Signature-256": signature, "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return int(resp.status)

    def desired(self) -> hierarchy.Desired:
        tree = self.tmp / "tree"
        shutil.rmtree(tree, ignore_errors=True)
        for rel, text in self.files.items():
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            (tree / rel).write_text(text)
        manifest = load_dir(tree, default_namespace=DNS_NS)
        assert manifest.ok, [str(p) for p in manifest.problems]
        return hierarchy.build(manifest)

    def pods(self, instance: str, namespace: str = DNS_NS, *, ready_only: bool = True) -> list[Pod]:
        found = self.core().list_namespaced_pod(namespace, label_selector=f"app.kubernetes.io/instance={instance},"
                                                "app.kubernetes.io/name=bind9").items
        out = []
        for pod in found:
            conds = {c.type: c.status for c in pod.status.conditions or []}
            if pod.metadata.deletion_timestamp or not pod.status.pod_ip or (
                    ready_only and conds.get("Ready") != "True"):
                continue
            out.append(Pod(pod.metadata.name, pod.status.pod_ip, instance,
                           pod.metadata.labels.get("bindy.firestoned.io/role", "")))
        return out

    def served(self, desired: hierarchy.Desired, *, pods: Callable[[str], list[Pod]] | None = None,
               want_pods: dict[str, int] | None = None) -> list[str]:
        """What differs from the revision on any pod: `pod-ip zone name type: wanted X, got Y` lines;
        [] when every pod of every instance of each zone answers every RRset as the revision says.
        `want_pods`: instance name -> how many ready pods it must have (default: its replicas)."""
        pods = pods or self.pods
        problems: list[str] = []
        for zone in desired.zones:
            for inst in zone.instances:
                listed = pods(inst.name)
                wanted = (want_pods or {}).get(inst.name, desired.instances[inst].spec.replicas or 1)
                if len(listed) < wanted:
                    problems.append(f"{inst}: {len(listed)} ready pods, {wanted} wanted")
                for pod in listed:
                    problems += _served_on(pod, zone)
        return problems

    def zones_missing(self, desired: hierarchy.Desired, *, roles: tuple[str, ...] = ("primary", "secondary")) -> list[str]:
        """Zones whose SOA a ready pod of one of its instances (of these roles) does not answer."""
        out = []
        for zone in desired.zones:
            instances = [i for i in zone.primaries if "primary" in roles] + \
                [i for i in zone.secondaries if "secondary" in roles]
            for inst in instances:
                listed = self.pods(inst.name)
                if not listed:
                    out.append(f"{inst}: no ready pod")
                for pod in listed:
                    try:
                        reply = query(pod.ip, zone.name, "SOA")
                    except (dns.exception.DNSException, OSError) as exc:
                        out.append(f"{pod.ip} ({pod.name}) {zone.name} SOA: no answer ({exc})")
                        continue
                    if not reply.answer or not reply.flags & dns.flags.AA:
                        out.append(f"{pod.ip} ({pod.name}) {zone.name} SOA: {dns.rcode.to_text(reply.rcode())}")
        return out

    def wait(self, check: Callable[[], Any], timeout: float, what: str, *, pause: float = 1) -> Any:
        """`check()`'s first truthy answer within `timeout` seconds; else a failure naming `what`, the last
        answer and what the cluster says (`diagnose`)."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = check()
            if last:
                return last
            time.sleep(pause)
        raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {last!r})\n{self.diagnose()}")

    def wait_zones(self, desired: hierarchy.Desired, timeout: float, *,
                   roles: tuple[str, ...] = ("primary", "secondary")) -> float:
        start = time.monotonic()
        missing: list[str] = ["not asked yet"]
        while time.monotonic() - start < timeout:
            missing = self.zones_missing(desired, roles=roles)
            if not missing:
                return time.monotonic() - start
            time.sleep(1)
        raise AssertionError(f"zones not there after {timeout:.0f} s:\n" + "\n".join(missing[:30]) + "\n"
                             + self.diagnose())

    def extra(self, desired: hierarchy.Desired) -> list[str]:
        """RRsets a pod serves that the revision does not want (AXFR of every zone from every ready
        pod of its instances; the SOA aside)."""
        out = []
        for zone in desired.zones:
            wanted = {key for key in zone.rrsets} | {(zone.name, "SOA")}
            for inst in zone.instances:
                for pod in self.pods(inst.name):
                    try:
                        xfr = dns.zone.from_xfr(dns.query.xfr(pod.ip, zone.name, port=workloads.DNS_CONTAINER_PORT,
                                                              lifetime=10, relativize=False), relativize=False)
                    except (dns.exception.DNSException, OSError) as exc:
                        out.append(f"{pod.ip} ({pod.name}) {zone.name}: no transfer ({exc})")
                        continue
                    for name, node in xfr.nodes.items():
                        for rdataset in node.rdatasets:
                            key = (name.to_text().lower(), dns.rdatatype.to_text(rdataset.rdtype))
                            if key not in wanted:
                                out.append(f"{pod.ip} ({pod.name}) {key[0]} {key[1]}: not in the revision")
        return out

    def wait_served(self, desired: hierarchy.Desired, timeout: float, **kwargs: Any) -> float:
        start = time.monotonic()
        problems: list[str] = ["not asked yet"]
        while time.monotonic() - start < timeout:
            problems = self.served(desired, **kwargs)
            if not problems:
                return time.monotonic() - start
            time.sleep(0.5)
        raise AssertionError(f"not served after {timeout:.0f} s ({len(problems)} differences):\n"
                             + "\n".join(problems[:30]) + "\n" + self.diagnose())

    def diagnose(self) -> str:
        """What a user would look at: pods, the agent's last log lines, events."""
        core = self.core()
        lines = []
        for ns in (AGENT_NS, DNS_NS):
            for pod in core.list_namespaced_pod(ns).items:
                states = [(c.name, c.ready, _state(c)) for c in pod.status.container_statuses or []]
                lines.append(f"pod {ns}/{pod.metadata.name} {pod.status.phase} {pod.status.pod_ip} {states}")
        for pod in self.agent_pods():
            try:
                log = core.read_namespaced_pod_log(pod.metadata.name, AGENT_NS, tail_lines=25)
            except Exception as exc:
                log = f"(no log: {exc})"
            lines.append(f"--- log of {pod.metadata.name}:\n{log}")
        events = core.list_namespaced_event(DNS_NS).items[-15:]
        lines += [f"event {e.involved_object.kind}/{e.involved_object.name} {e.reason}: {e.message}" for e in events]
        return "\n".join(lines)

    def instance_conditions(self, name: str, namespace: str = DNS_NS) -> dict[str, tuple[str, str, str]]:
        obj = self.custom().get_namespaced_custom_object("bindy.firestoned.io", "v1beta1", namespace,
                                                         "bind9instances", name)
        return {c["type"]: (c["status"], c.get("reason", ""), c.get("message", ""))
                for c in (obj.get("status") or {}).get("conditions") or []}


def _state(container: Any) -> str:
    state = container.state
    if state.waiting:
        return f"waiting {state.waiting.reason}: {state.waiting.message or ''}"[:200]
    if state.terminated:
        return f"terminated {state.terminated.reason} ({state.terminated.exit_code})"
    return "running"


def query(ip: str, name: str, rtype: str, *, port: int = workloads.DNS_CONTAINER_PORT) -> dns.message.Message:
    q = dns.message.make_query(name, rtype)
    q.flags &= ~dns.flags.RD
    try:
        reply = dns.query.udp(q, ip, port=port, timeout=2)
        if reply.flags & dns.flags.TC:
            reply = dns.query.tcp(q, ip, port=port, timeout=3)
    except (dns.exception.Timeout, OSError):
        reply = dns.query.tcp(q, ip, port=port, timeout=3)
    return reply


def _served_on(pod: Pod, zone: placement.Zone) -> list[str]:
    out = []
    for rrset in zone.rrsets.values():
        where = f"{pod.ip} ({pod.name}) {rrset.name} {rrset.rtype}"
        try:
            reply = query(pod.ip, rrset.name, rrset.rtype)
        except (dns.exception.DNSException, OSError) as exc:
            out.append(f"{where}: no answer ({exc})")
            continue
        name, rtype = dns.name.from_text(rrset.name), dns.rdatatype.from_text(rrset.rtype)
        got = reply.get_rrset(reply.answer, name, dns.rdataclass.IN, rtype)
        # a delegation (NS below the apex) and its glue are answered as a referral: in the authority
        # and additional sections, not authoritatively
        referral = None if got is not None else (reply.get_rrset(reply.authority, name, dns.rdataclass.IN, rtype)
                                                 or reply.get_rrset(reply.additional, name, dns.rdataclass.IN, rtype))
        wanted = {dns.rdata.from_text(dns.rdataclass.IN, rtype, r) for r in rrset.rdatas}
        have = set(got if got is not None else referral or ())
        if have != wanted or not (reply.flags & dns.flags.AA or referral is not None):
            rcode = dns.rcode.to_text(reply.rcode())
            out.append(f"{where}: wanted {sorted(map(str, wanted))}, got {sorted(map(str, have))} ({rcode}"
                       f"{'' if reply.flags & dns.flags.AA else ', not authoritative'})")
    return out
