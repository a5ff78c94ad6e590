"""Rollouts with no serving gap, on the real node (issue 26: "key rotation without a gap").

A pod of a generated instance keeps its zones in an emptyDir: a new pod starts with none. Without
a readiness gate it would be Ready as soon as named answers, join the Service and let the old pod go,
and queries to the Service would get REFUSED until the agent's next run wrote its zones. With the
zones-loaded gate (agent/desired/workloads.py, agent/model/podreadiness.py, agent/podready/watch.py,
agent/podready/condition.py) the new pod joins only once it serves every zone.

One installation for the module: sample-repo with a two-pod primary instance `dns-roll`
(`rndcKey.autoRotate`), the agent with a long interval (60 s: a new pod must not wait for a
scheduled run; the resync after 20 s, so that the push's run reads the Secret's backdated
annotations, as in test_bindy_fields_node.py). A querier thread asks the instance's Service address (its ClusterIP, from
the node: kube-proxy routes it) for a few RRsets every ~50 ms, throughout:
  * dns-roll's key rotated (its Secret's rotate-at backdated, then a push): the pods roll to the new
    key; no query fails, and a push after the rollout is served by both new pods;
  * `kubectl rollout restart` of the secondary dns-secondary-0: its new pod transfers every zone
    before it serves; no query to its Service fails.
"No query fails" as a resolver sees it: a question whose datagram got no answer is asked once more;
REFUSED, a wrong answer or a second timeout fails the test, and so do more than MAX_LOST lost datagrams.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Iterator
from typing import Any, Self

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import pytest

from agent.desired import hierarchy, workloads
from agent.plan import rotation
from tests.support import install
from tests.support.install import DNS_NS, Installation, kubectl
from tests.support.node import Node

FIRST_SYNC_TIMEOUT = int(os.environ.get("BINDY_E2E_FIRST_SYNC", "420"))
PUSH_TIMEOUT = 120
ROLLOUT_TIMEOUT = 240
AGENT_ENV = {"BINDY_AGENT_INTERVAL": "60", "BINDY_AGENT_JITTER": "1", "BINDY_AGENT_RESYNC_AFTER": "20",
             "BINDY_AGENT_WEBHOOK_MIN_INTERVAL": "1"}
EVERY = 0.05  # seconds between two rounds of queries
MAX_LOST = 3  # UDP datagrams a rollout may lose (each asked again, as a resolver does; see Querier._one)
ROLL = """apiVersion: bindy.firestoned.io/v1beta1
kind: Bind9Instance
metadata:
  name: dns-roll
  namespace: dns-system
spec:
  clusterRef: dns
  role: primary
  replicas: 2
  rndcKey: {autoRotate: true, rotateAfter: 1h}
"""


@pytest.fixture(scope="module")
def installed(node: Node, api: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installation]:
    inst = Installation(node, api, tmp_path_factory.mktemp("rollout"))
    inst.clean()
    files = install.sample_repo_files(node)
    files["infrastructure/roll.yaml"] = ROLL
    inst.sha = inst.push(files, "sample-repo with a two-pod instance whose key rotates")
    started = time.monotonic()
    inst.install(agent_env=AGENT_ENV)
    try:
        inst.wait_zones(inst.desired(), FIRST_SYNC_TIMEOUT)
        inst.wait_served(inst.desired(), PUSH_TIMEOUT)
        print(f"\n[e2e] kubectl apply -k -> every zone served on every pod: {time.monotonic() - started:.1f} s")
        for name in ("dns-roll", "dns-secondary-0"):  # kube-proxy has the Services' rules (or: EPERM)
            _wait(Querier(_service_ip(inst, name), _probes(inst.desired(), name)).answers, PUSH_TIMEOUT,
                  f"{name}'s Service answering", inst)
        yield inst
    finally:
        if not os.environ.get("BINDY_E2E_KEEP"):
            inst.uninstall()


@dataclasses.dataclass(frozen=True)
class Probe:
    name: str
    rtype: str
    wanted: frozenset[dns.rdata.Rdata]


def _probes(desired: hierarchy.Desired, instance: str, count: int = 4) -> list[Probe]:
    """Each zone's SOA-less A/MX/TXT RRsets placed on `instance`, a few per zone."""
    out = []
    for zone in desired.zones:
        if not any(k.name == instance for k in zone.instances):
            continue
        for rrset in list(r for r in zone.rrsets.values() if r.rtype in ("A", "MX", "TXT") and r.name != zone.name)[:2]:
            wanted = frozenset(dns.rdata.from_text(dns.rdataclass.IN, rrset.rtype, r) for r in rrset.rdatas)
            out.append(Probe(rrset.name, rrset.rtype, wanted))
    assert out, f"no RRset placed on {instance}"
    return out[:count]


class Poller:
    """Calls `_tick` every `period` seconds on a thread, from `with` to its end."""

    period = 0.1

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _tick(self) -> None:
        raise NotImplementedError

    def _loop(self) -> None:
        while not self.stopping.is_set():
            self._tick()
            self.stopping.wait(self.period)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)


class Querier(Poller):
    """Asks `address:53` for every probe every EVERY seconds on a thread; keeps every failure."""

    period = EVERY

    def __init__(self, address: str, probes: list[Probe]) -> None:
        super().__init__()
        self.address, self.probes = address, probes
        self.ok = 0
        self.failures: list[tuple[float, str]] = []  # (seconds since start, what)
        self.lost: list[float] = []  # when a first datagram got no answer (its retry did or failed)
        self.started = time.monotonic()

    def _one(self, probe: Probe) -> str:
        """What was wrong with the answer ("" if nothing). A question whose datagram got no answer is
        asked once more at once, as a resolver does (`options attempts:2`) and counted in `lost` (one was
        seen in a CI run, as the Service's endpoints changed under load); a second timeout is a failure.
        A datagram from another address than the Service's (a reply kube-proxy did not translate back, once
        the Service's UDP conntrack entries were flushed as its endpoints changed) is dropped, as a resolver
        drops it: the question then waits for its answer or times out."""
        q = dns.message.make_query(probe.name, probe.rtype)
        q.flags &= ~dns.flags.RD
        try:
            try:
                reply = dns.query.udp(q, self.address, port=53, timeout=1, ignore_unexpected=True)
            except dns.exception.Timeout:
                self.lost.append(time.monotonic() - self.started)
                reply = dns.query.udp(q, self.address, port=53, timeout=1, ignore_unexpected=True)
        except dns.exception.Timeout:
            return "timeout"
        except OSError as exc:
            return f"error {exc}"
        got = reply.get_rrset(reply.answer, dns.name.from_text(probe.name), dns.rdataclass.IN,
                              dns.rdatatype.from_text(probe.rtype))
        if reply.rcode() != dns.rcode.NOERROR:
            return dns.rcode.to_text(reply.rcode())
        if got is None or frozenset(got) != probe.wanted:
            return f"wrong answer {sorted(map(str, got or []))}"
        return ""

    def answers(self) -> bool:
        """Every probe answered right, once."""
        return not any(self._one(probe) for probe in self.probes)

    def _tick(self) -> None:
        for probe in self.probes:
            what = self._one(probe)
            if what:
                self.failures.append((time.monotonic() - self.started, f"{probe.name} {probe.rtype}: {what}"))
            else:
                self.ok += 1

    def __enter__(self) -> Self:
        self.started = time.monotonic()
        return super().__enter__()

    def summary(self) -> str:
        kinds: dict[str, int] = {}
        for _, what in self.failures:
            kind = what.rsplit(": ", 1)[1].split(" ")[0]
            kinds[kind] = kinds.get(kind, 0) + 1
        span = (f", first at {self.failures[0][0]:.1f} s, last at {self.failures[-1][0]:.1f} s"
                if self.failures else "")
        lost = f", {len(self.lost)} datagram(s) lost and asked again at {[round(t, 1) for t in self.lost]} s" if self.lost else ""
        return f"{self.ok} answers right, {len(self.failures)} failed {kinds}{span}{lost}"


class EndpointsLog(Poller):
    """Polls the Service's Endpoints every 0.1 s on a thread; keeps each change (seconds since the
    querier's start, ready addresses, not-ready addresses) to show beside a failed query."""

    def __init__(self, inst: Installation, name: str, querier: Querier) -> None:
        super().__init__()
        self.inst, self.name, self.querier = inst, name, querier
        self.changes: list[tuple[float, list[str], list[str]]] = []

    def _now(self) -> tuple[list[str], list[str]]:
        ep = self.inst.core().read_namespaced_endpoints(self.name, DNS_NS)
        ready = sorted(a.ip for s in ep.subsets or [] for a in s.addresses or [])
        unready = sorted(a.ip for s in ep.subsets or [] for a in s.not_ready_addresses or [])
        return ready, unready

    def _tick(self) -> None:
        try:
            ready, unready = self._now()
        except Exception as exc:  # a diagnostic: keep polling
            ready, unready = [f"error {exc}"], []
        if not self.changes or self.changes[-1][1:] != (ready, unready):
            self.changes.append((time.monotonic() - self.querier.started, ready, unready))

    def summary(self) -> str:
        return "; ".join(f"{t:.2f} s ready {r} not ready {u}" for t, r, u in self.changes)


def _assert_answered(querier: Querier, endpoints: EndpointsLog, least: int) -> None:
    """Every question answered right, at worst on its second datagram; few datagrams lost at all."""
    said = f"{querier.summary()}; the Service's endpoints: {endpoints.summary()}"
    assert querier.ok > least, said
    assert not querier.failures, f"{said}:\n" + "\n".join(f"{t:.2f} s {w}" for t, w in querier.failures[:40])
    assert len(querier.lost) <= MAX_LOST, said


def _service_ip(inst: Installation, name: str) -> str:
    return str(inst.core().read_namespaced_service(name, DNS_NS).spec.cluster_ip)


def _deployment(inst: Installation, name: str) -> Any:
    from kubernetes import client

    return client.AppsV1Api(inst.api).read_namespaced_deployment(name, DNS_NS)


def _rolled_out(inst: Installation, name: str, old: set[str]) -> bool:
    """Every replica updated and available, and no pod of before left (not even terminating)."""
    d = _deployment(inst, name)
    st, want = d.status, d.spec.replicas
    every = {p.name for p in inst.pods(name, ready_only=False)}
    listed = {p.metadata.name for p in inst.core().list_namespaced_pod(
        DNS_NS, label_selector=f"app.kubernetes.io/instance={name}").items}
    return ((st.observed_generation or 0) >= d.metadata.generation and st.updated_replicas == want
            and st.replicas == want and st.available_replicas == want and not st.unavailable_replicas
            and not (listed & old) and len(every) == want)


def _wait(check: Any, timeout: float, what: str, inst: Installation, pause: float = 0.5) -> Any:
    return inst.wait(check, timeout, what, pause=pause)


def _record(name: str, address: str) -> str:
    return f"""apiVersion: bindy.firestoned.io/v1beta1
kind: ARecord
metadata: {{name: {name}, namespace: dns-system, labels: {{zone: example-com}}}}
spec: {{name: "{name}", ipv4Addresses: ["{address}"]}}
"""


def _gate_open(inst: Installation, name: str) -> list[str]:
    """The pods of `name` whose zones-loaded condition is True."""
    pods = inst.core().list_namespaced_pod(DNS_NS, label_selector=f"app.kubernetes.io/instance={name}").items
    return [p.metadata.name for p in pods if any(c.type == "bindy.firestoned.io/zones-loaded" and c.status == "True"
                                                 for c in p.status.conditions or [])]


def _waited(inst: Installation, name: str) -> list[float]:
    """For each pod of `name`: seconds from its containers ready to its zones-loaded condition True
    (the conditions' lastTransitionTime: whole seconds)."""
    out = []
    for pod in inst.core().list_namespaced_pod(DNS_NS, label_selector=f"app.kubernetes.io/instance={name}").items:
        times = {c.type: c.last_transition_time for c in pod.status.conditions or []}
        if times.get("ContainersReady") and times.get("bindy.firestoned.io/zones-loaded"):
            out.append((times["bindy.firestoned.io/zones-loaded"] - times["ContainersReady"]).total_seconds())
    return sorted(out)


def test_a_key_rotation_rolls_the_pods_with_no_failed_query(installed: Installation) -> None:
    inst = installed
    name, secret_name = "dns-roll", workloads.rndc_key_name("dns-roll")
    old = {p.name for p in inst.pods(name, ready_only=False)}
    assert len(old) == 2, old
    probes = _probes(inst.desired(), name)
    with Querier(_service_ip(inst, name), probes) as querier, EndpointsLog(inst, name, querier) as endpoints:
        time.sleep(2)
        kubectl(inst.node, "-n", DNS_NS, "annotate", "secret", secret_name, "--overwrite",
                f"{rotation.CREATED_AT}=2026-01-01T00:00:00Z", f"{rotation.ROTATE_AT}=2026-01-01T01:00:00Z")
        inst.push({"records/example-com/before-rotation.yaml": _record("before-rotation", "192.0.2.220")},
                  "a record with the key's rotation")
        started = time.monotonic()
        assert inst.webhook() in (200, 202)
        _wait(lambda: (_deployment(inst, name).spec.template.metadata.annotations or {}).get(rotation.ROTATED_AT),
              PUSH_TIMEOUT, "the rotation stamped on dns-roll's pod template", inst)
        stamped = time.monotonic()
        _wait(lambda: _rolled_out(inst, name, old), ROLLOUT_TIMEOUT, "dns-roll rolled out to the new key", inst)
        rolled = time.monotonic()
        time.sleep(3)  # the Service after the last old pod left
    print(f"\n[e2e] key rotation of {name} (2 pods): stamped {stamped - started:.1f} s after the push, rolled out "
          f"{rolled - stamped:.1f} s later; its Service meanwhile: {querier.summary()}; each new pod's containers "
          f"ready -> its zones loaded: {_waited(inst, name)} s; its endpoints: {endpoints.summary()}")
    _assert_answered(querier, endpoints, 100)
    new = {p.name for p in inst.pods(name)}
    assert len(new) == 2 and not new & old, (old, new)
    # the pods are Ready through the agent's condition: the readiness gate of the generated template
    template = _deployment(inst, name).spec.template.spec
    assert [g.condition_type for g in template.readiness_gates or []] == ["bindy.firestoned.io/zones-loaded"]
    assert sorted(_gate_open(inst, name)) == sorted(new)
    inst.push({"records/example-com/after-rotation.yaml": _record("after-rotation", "192.0.2.221")},
              "a record after the rotation")
    assert inst.webhook() in (200, 202)
    inst.wait_served(inst.desired(), PUSH_TIMEOUT)
    for pod in inst.pods(name):
        assert install.query(pod.ip, "after-rotation.example.com.", "A").answer, pod


def test_a_restarted_secondary_serves_its_zones_before_it_joins_its_service(installed: Installation) -> None:
    inst = installed
    name = "dns-secondary-0"
    old = {p.name for p in inst.pods(name, ready_only=False)}
    assert old, "a pod of the secondary"
    probes = _probes(inst.desired(), name)
    with Querier(_service_ip(inst, name), probes) as querier, EndpointsLog(inst, name, querier) as endpoints:
        time.sleep(2)
        started = time.monotonic()
        kubectl(inst.node, "-n", DNS_NS, "rollout", "restart", f"deployment/{name}")
        _wait(lambda: _rolled_out(inst, name, old), ROLLOUT_TIMEOUT, f"{name} rolled out", inst)
        rolled = time.monotonic()
        time.sleep(3)
    print(f"\n[e2e] rollout restart of {name}: rolled out in {rolled - started:.1f} s; its Service meanwhile: "
          f"{querier.summary()}; the new pod's containers ready -> its zones loaded: {_waited(inst, name)} s; "
          f"its endpoints: {endpoints.summary()}")
    _assert_answered(querier, endpoints, 50)
    inst.wait_served(inst.desired(), PUSH_TIMEOUT)
