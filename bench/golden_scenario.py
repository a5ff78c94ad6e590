"""The golden harness's scripted Git scenario: one checkout's public CLI (`sync`, `plan`, `report`)
driven through a series of commits of sample-repo against a real kube-apiserver + etcd and a real
named pair (with the zone API test server), everything it leaves captured and normalised per step.

    .venv/bin/python bench/golden.py --checkout DIR --out OUT --scenario [--no-offline]

Steps (OUT/scenario/<nn-step>/, STEPS): the sample (first sync); a record added, one changed, one
removed; a zone removed (it held only the agent's data), the same commit again with --force; an
invalid commit; a commit deleting most records of a zone (refused: above the delete threshold), again
with --allow-prune (still refused: only the Kubernetes prune is allowed); a good commit; a change shown
by `sync --dry-run`, the same planned by `plan DIR --kubeconfig -o json`, then applied; a sync with
nothing new; out-of-band drift (a record changed and a foreign one added in DNS, a CR's spec edited)
shown by `plan DIR --kubeconfig`, not seen by a plain sync, repaired by `sync --resync-after 0`; a zone
added while the secondary's zone API is down (partial), then with it back; a zone holding a foreign
record removed from Git (partial: a conflict), then with --force.

After each: the CLI's argv, stdout, stderr and exit status; `report` of the commit (text and JSON);
the CRs' .status and the names of the objects in their namespace; an AXFR of every zone on every
server (sorted; the secondary waited for until it serves the primary's serial); the agent's state
ConfigMaps. One golden_world.Normal for the whole scenario: commit ids, run ids, serials
and key material get placeholders in order of first appearance, so two runs of the same code write
the same files. Commits have fixed authors and dates (golden.GIT_ENV): the same ids on every run.

Only flags that `bindy-agent` had at 632bd81 are used, so old code runs the same scenario.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

import golden
import golden_world

ROOT = golden.ROOT
NAMESPACE, AGENT_NAMESPACE = "dns-system", "bindy-agent"
GROUP, VERSION = "bindy.firestoned.io", "v1beta1"
PLURALS = ("bind9clusters", "bind9instances", "dnszones", "arecords", "aaaarecords", "cnamerecords", "mxrecords",
           "txtrecords", "nsrecords", "srvrecords", "caarecords")
ZONES = ("example.com", "example.org", "example.net", "internal.example.net")
REPORT_KEY = "golden-scenario-report-key-0123456789abcdef\n"
# TSIG / DNSSEC / RNDC key material: base64 of 40 characters or more, an upper-case letter in it (not a path)
BASE64 = re.compile(r"(?<![A-Za-z0-9+/])(?=[A-Za-z0-9+/]*[A-Z])[A-Za-z0-9+/]{40,}={0,2}")
SERVICE_IP = re.compile(r"\b10\.96\.0\.\d{1,3}\b")  # a Service's cluster IP (kube.py's range), allocated at random

EXTRA_TXT = ("apiVersion: bindy.firestoned.io/v1beta1\nkind: TXTRecord\nmetadata:\n  name: verify\n"
             "  namespace: dns-system\n  labels: {zone: example-com}\nspec:\n  name: _verify\n  ttl: 300\n"
             "  text: [\"golden-scenario\"]\n")
BROKEN = ("apiVersion: bindy.firestoned.io/v1beta1\nkind: ARecord\nmetadata:\n  name: broken\n"
          "  namespace: dns-system\n  labels: {zone: example-org}\nspec:\n  name: broken\n  ttl: -5\n"
          "  ipv4Addresses: [300.1.1.1]\n")

EXAMPLE_NET = ("apiVersion: bindy.firestoned.io/v1beta1\nkind: DNSZone\nmetadata:\n  name: example-net\n"
               "  namespace: dns-system\n  labels:\n    dns.example.com/serve: \"true\"\nspec:\n"
               "  zoneName: example.net\n  ttl: 300\n  soaRecord:\n    primaryNs: ns1.example.com.\n"
               "    adminEmail: hostmaster.example.com.\n    serial: 1\n    refresh: 900\n    retry: 300\n"
               "    expire: 86400\n    negativeTtl: 60\n  nameServers:\n    - hostname: ns1.example.com.\n")
EXAMPLE_NET_RECORDS = ("apiVersion: bindy.firestoned.io/v1beta1\nkind: ARecord\nmetadata:\n  name: net-www\n"
                       "  namespace: dns-system\nspec:\n  name: www.example.net.\n  ipv4Addresses: [203.0.113.80]\n"
                       "---\napiVersion: bindy.firestoned.io/v1beta1\nkind: TXTRecord\nmetadata:\n"
                       "  name: net-spf\n  namespace: dns-system\nspec:\n  name: example.net.\n"
                       "  text: [\"v=spf1 -all\"]\n")


# -- the world ------------------------------------------------------------------------------------
class World:
    """kube-apiserver + etcd + kube-controller-manager, a named pair, their zone APIs, a Git remote."""

    def __init__(self, work: pathlib.Path) -> None:
        self.work = work
        self.stops: list[Callable[[], None]] = []

    def start(self) -> World:
        from tests.support import bind, dnsrepo, kube, zone_api

        self.kube = kube.KubeCluster(self.work / "kube")
        self.stops.append(self.kube.stop)
        self.kube.start()
        self.bind = bind.start_pair(self.work / "bind")
        self.stops.append(self.bind.stop)
        self.token = uuid.uuid4().hex
        self.apis = {"primary": zone_api.ZoneApi(self.bind.primary, self.token).start(),
                     "secondary": zone_api.ZoneApi(self.bind.secondary, self.token).start()}
        self.stops.append(lambda: [api.stop() for api in self.apis.values()])  # the ones of the moment
        (self.work / "endpoints").mkdir()
        self.endpoints = dnsrepo.endpoint_map(self.work / "endpoints", self.bind, self.apis)
        self.client = self.kube.api_client()
        self.stops.append(self.client.close)
        from kubernetes import client

        for name in (NAMESPACE, AGENT_NAMESPACE):
            client.CoreV1Api(self.client).create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        return self

    def secondary_api_down(self) -> None:
        self.apis["secondary"].stop()

    def secondary_api_back(self) -> None:
        """A new zone API of the secondary on the port of the one stopped (the endpoints name it)."""
        from tests.support import zone_api

        port = self.apis["secondary"].port
        chosen = zone_api.free_port
        zone_api.free_port = lambda *args: port  # type: ignore[assignment]
        try:
            self.apis["secondary"] = zone_api.ZoneApi(self.bind.secondary, self.token).start()
        finally:
            zone_api.free_port = chosen  # type: ignore[assignment]

    def stop(self) -> None:
        for stop in reversed(self.stops):
            try:
                stop()
            except Exception as exc:  # stop the rest whatever one says
                print(f"golden scenario: stopping: {type(exc).__name__}: {exc}", file=sys.stderr)


class Repo:
    """A bare remote and a working clone of it; commits with golden.GIT_ENV's fixed names and dates."""

    def __init__(self, work: pathlib.Path) -> None:
        self.bare, self.tree = work / "remote.git", work / "tree"
        self.env = {**os.environ, **golden.GIT_ENV}
        self._git("init", "-q", "--bare", "-b", "main", str(self.bare), cwd=work)
        self._git("init", "-q", "-b", "main", str(self.tree), cwd=work)
        self.git("remote", "add", "origin", str(self.bare))

    @property
    def url(self) -> str:
        return self.bare.as_uri()

    def _git(self, *args: str, cwd: pathlib.Path) -> str:
        return subprocess.run(["git", *args], cwd=cwd, env=self.env, check=True, capture_output=True,
                              text=True).stdout.strip()

    def git(self, *args: str) -> str:
        return self._git(*args, cwd=self.tree)

    def commit(self, message: str, edit: Callable[[pathlib.Path], None]) -> str:
        edit(self.tree)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        self.git("push", "-q", "origin", "HEAD:main")
        return self.git("rev-parse", "HEAD")


# -- the commits ----------------------------------------------------------------------------------
def _replace(path: pathlib.Path, old: str, new: str) -> None:
    text = path.read_text()
    if old not in text:
        raise SystemExit(f"golden scenario: {old!r} not in {path}: sample-repo changed, adapt the scenario")
    path.write_text(text.replace(old, new, 1))


def _first(tree: pathlib.Path) -> None:
    shutil.copytree(ROOT / "sample-repo", tree, dirs_exist_ok=True)


def _records(tree: pathlib.Path) -> None:
    (tree / "records" / "example-com" / "verify.yaml").write_text(EXTRA_TXT)  # added
    web = tree / "records" / "example-com" / "web.yaml"
    _replace(web, "    - 192.0.2.12\n", "    - 192.0.2.13\n")  # changed
    docs = web.read_text().split("---\n")
    web.write_text("---\n".join(d for d in docs if "kind: CNAMERecord" not in d))  # removed (shop)


def _zone_removed(tree: pathlib.Path) -> None:
    (tree / "zones" / "internal.yaml").unlink()
    shutil.rmtree(tree / "records" / "internal")


def _invalid(tree: pathlib.Path) -> None:
    (tree / "records" / "example-org" / "broken.yaml").write_text(BROKEN)


def _mass_delete(tree: pathlib.Path) -> None:
    (tree / "records" / "example-org" / "broken.yaml").unlink()
    for name in ("mail.yaml", "services.yaml"):
        (tree / "records" / "example-com" / name).unlink()


def _good(tree: pathlib.Path) -> None:
    records = tree / "records" / "example-com"
    for name in ("mail.yaml", "services.yaml"):
        shutil.copy(ROOT / "sample-repo" / "records" / "example-com" / name, records / name)
    _replace(records / "web.yaml", "ipv4Addresses: [192.0.2.10]", "ipv4Addresses: [192.0.2.20]")


def _zone_added(tree: pathlib.Path) -> None:
    """example.net: a zone the cluster selects by label (as internal.example.net), with two records."""
    (tree / "zones" / "example-net.yaml").write_text(EXAMPLE_NET)
    (tree / "records" / "example-net").mkdir()
    (tree / "records" / "example-net" / "hosts.yaml").write_text(EXAMPLE_NET_RECORDS)


def _org_removed(tree: pathlib.Path) -> None:
    (tree / "zones" / "example-org.yaml").unlink()
    shutil.rmtree(tree / "records" / "example-org")


def _planned(tree: pathlib.Path) -> None:
    _replace(tree / "records" / "example-com" / "verify.yaml", '"golden-scenario"', '"golden-scenario-2"')


def _drift(world: World) -> None:
    """Out of band: www.example.com's A records replaced on the primary and a TXT record of someone else
    added (an UPDATE, as an operator or cert-manager would send), and the ARecord www's TTL edited in
    the cluster (as `kubectl edit` would)."""
    import dns.rdatatype
    from kubernetes import client

    from tests.support import dnsworld

    dns_world = dnsworld.Dns(world.bind, world.apis, world.endpoints)
    dns_world.update("example.com", lambda u: (u.replace("www", 300, dns.rdatatype.A, "192.0.2.99"),
                                               u.add("foreign", 60, dns.rdatatype.TXT, '"not the agent\'s"')))
    client.CustomObjectsApi(world.client).patch_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, "arecords", "www", {"spec": {"ttl": 900}})


def _org_foreign(world: World) -> None:
    """A TXT record of someone else's in example.org (an UPDATE on the primary), before the zone leaves Git."""
    import dns.rdatatype

    from tests.support import dnsworld

    dnsworld.Dns(world.bind, world.apis, world.endpoints).update(
        "example.org", lambda u: u.add("_acme-challenge", 60, dns.rdatatype.TXT, '"cert-manager token"'))


@dataclasses.dataclass(frozen=True)
class Step:
    name: str
    verb: tuple[str, ...]  # the CLI's verb and flags, {repo} and {dir} (the working tree) filled in
    message: str | None = None  # a new commit of `edit` (else the same commit as the step before)
    edit: Callable[[pathlib.Path], None] | None = None
    before: Callable[[World], None] | None = None  # what happens to the world before the CLI runs


SYNC = ("sync", "--repo", "{repo}")
STEPS = (
    Step("first", SYNC, "the sample", _first),
    Step("records", SYNC, "a record added, one changed, one removed", _records),
    Step("zone-removed", SYNC, "internal.example.net removed", _zone_removed),
    Step("zone-removed-again-force", (*SYNC, "--force")),
    Step("invalid", SYNC, "an invalid record", _invalid),
    Step("refused", SYNC, "most records of example.com deleted", _mass_delete),
    Step("refused-allow-prune", (*SYNC, "--allow-prune")),
    Step("good", SYNC, "the records back, the apex moved", _good),
    Step("dry-run", (*SYNC, "--dry-run"), "the TXT record changed", _planned),
    Step("plan", ("plan", "{dir}", "-o", "json")),
    Step("applied", SYNC),
    Step("unchanged", SYNC),
    Step("drift-plan", ("plan", "{dir}"), before=_drift),
    Step("drift-sync", SYNC),
    Step("drift-resync", (*SYNC, "--resync-after", "0")),
    Step("secondary-api-down", SYNC, "example.net added", _zone_added, before=World.secondary_api_down),
    Step("secondary-api-back", SYNC, before=World.secondary_api_back),
    Step("zone-left-foreign-data", SYNC, "example.org removed", _org_removed, before=_org_foreign),
    Step("zone-left-force", (*SYNC, "--force")),
)


# -- capturing ------------------------------------------------------------------------------------
class Scenario:
    def __init__(self, checkout: pathlib.Path, out: pathlib.Path, work: pathlib.Path) -> None:
        self.checkout, self.out, self.work = checkout, out, work
        self.normal = golden_world.Normal()
        self.env = golden._env(checkout, work)
        self.env["HOME"] = str(work / "home")
        self.ips: dict[str, str] = {}

    def scrub(self, text: str) -> str:
        """What golden_world.Normal leaves: key material and Service IPs, placeholders as its own."""
        text = BASE64.sub(lambda m: self.normal._token(m.group(0)), text)
        return SERVICE_IP.sub(lambda m: self.ips.setdefault(m.group(0), f"<SVC-IP{len(self.ips) + 1}>"), text)

    def text(self, value: str) -> str:
        return self.scrub(str(self.normal(value)))

    def data(self, value: Any) -> Any:
        return _scrubbed(self.normal(json.loads(json.dumps(value, default=str))), self.scrub)

    def cli(self, *argv: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-c", golden.RUNNER, *argv], cwd=self.work, env=self.env,
                              capture_output=True, timeout=900, check=False)

    def write(self, dest: pathlib.Path, name: str, text: str) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text(text if text.endswith("\n") or not text else text + "\n")

    def record(self, dest: pathlib.Path, argv: tuple[str, ...], done: subprocess.CompletedProcess[bytes]) -> None:
        self.write(dest, "argv", self.text(" ".join(argv)))
        self.write(dest, "status", f"{done.returncode}")
        for name, stream in (("stdout", done.stdout), ("stderr", done.stderr)):
            raw = stream.decode("utf-8", "backslashreplace")
            try:
                shown = json.dumps(self.data(json.loads(raw)), indent=1, sort_keys=True) if name == "stdout" else None
            except ValueError:
                shown = None
            self.write(dest, name, shown if shown is not None else self.text(raw))


def _scrubbed(value: Any, scrub: Callable[[str], str]) -> Any:
    """`scrub` on every string of a JSON value."""
    if isinstance(value, dict):
        return {k: _scrubbed(v, scrub) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v, scrub) for v in value]
    return scrub(value) if isinstance(value, str) else value


def _statuses(world: World) -> dict[str, Any]:
    from kubernetes import client

    api = client.CustomObjectsApi(world.client)
    found: dict[str, Any] = {}
    for plural in PLURALS:
        for item in api.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, plural)["items"]:
            found[f"{item['kind']}/{item['metadata']['name']}"] = {
                "generation": item["metadata"].get("generation"), "status": item.get("status")}
    return dict(sorted(found.items()))


def _objects(world: World) -> list[str]:
    """The Kubernetes objects in the CRs' namespace (kind/name): what the hierarchy created or pruned."""
    from kubernetes import client

    core, apps = client.CoreV1Api(world.client), client.AppsV1Api(world.client)
    listed = [("ConfigMap", core.list_namespaced_config_map), ("Secret", core.list_namespaced_secret),
              ("Service", core.list_namespaced_service), ("ServiceAccount", core.list_namespaced_service_account),
              ("Deployment", apps.list_namespaced_deployment), ("StatefulSet", apps.list_namespaced_stateful_set)]
    return sorted(f"{kind}/{item.metadata.name}" for kind, lister in listed for item in lister(NAMESPACE).items
                  if getattr(item, "type", None) != "kubernetes.io/service-account-token")  # a random name, not ours


def _state(world: World) -> dict[str, Any]:
    from kubernetes import client

    found: dict[str, Any] = {}
    for item in client.CoreV1Api(world.client).list_namespaced_config_map(AGENT_NAMESPACE).items:
        data: dict[str, Any] = {}
        for key, text in sorted((item.data or {}).items()):
            data[key] = _maybe_json(text)
        for key, blob in sorted((item.binary_data or {}).items()):
            raw = base64.b64decode(blob)
            data[key] = _maybe_json(gzip.decompress(raw).decode() if raw[:2] == b"\x1f\x8b" else raw.decode())
        found[item.metadata.name] = {"labels": item.metadata.labels, "annotations": item.metadata.annotations,
                                     "data": data}
    return dict(sorted(found.items()))


def _maybe_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _axfr(world: World) -> str:
    """Every zone on every server, sorted lines; the secondary waited for (10 s) until it serves the
    primary's serial, so that the transfer's timing is not read as a change."""
    lines = []
    for zone in ZONES:
        primary = _zone_lines(world.bind.primary, zone)
        deadline = time.monotonic() + 10
        secondary = _zone_lines(world.bind.secondary, zone)
        while _soa(secondary) != _soa(primary) and time.monotonic() < deadline:
            time.sleep(0.2)
            secondary = _zone_lines(world.bind.secondary, zone)
        for server, found in (("primary", primary), ("secondary", secondary)):
            lines.append(f"== {zone} on {server}")
            lines += found
    return "\n".join(lines) + "\n"


def _zone_lines(server: Any, zone: str) -> list[str]:
    import dns.exception
    import dns.query
    import dns.zone

    try:
        got = dns.zone.Zone(f"{zone}.", relativize=False)
        dns.query.inbound_xfr(server.address, got, port=server.port, timeout=5, lifetime=10)
    except (dns.exception.DNSException, OSError, ValueError) as exc:
        return [f"not served ({type(exc).__name__})"]
    return sorted(line for line in got.to_text(relativize=False).splitlines() if line.strip())


def _soa(lines: list[str]) -> str:
    return next((line for line in lines if " SOA " in line), "")


def run_scenario(checkout: pathlib.Path, out: pathlib.Path) -> None:
    """Every step of STEPS with `checkout`'s CLI, into `out` (OUT/scenario)."""
    started = time.monotonic()
    work = pathlib.Path(tempfile.mkdtemp(prefix="golden-scenario-"))
    world = World(work)
    try:
        world.start()
        repo = Repo(work)
        (work / "report.key").write_text(REPORT_KEY)
        scenario = Scenario(checkout, out, work)
        flags = ("--kubeconfig", str(world.kube.kubeconfig), "--endpoints", str(world.endpoints),
                 "--cache", str(work / "cache"), "--report-key-file", str(work / "report.key"))
        sha = ""
        for i, step in enumerate(STEPS):
            if step.message is not None and step.edit is not None:
                sha = repo.commit(step.message, step.edit)
            if step.before is not None:
                step.before(world)
            argv = tuple(a.format(repo=repo.url, dir=str(repo.tree)) for a in step.verb)
            argv += flags if step.verb[0] == "sync" else ("--kubeconfig", str(world.kube.kubeconfig))
            began = time.monotonic()
            done = scenario.cli(*argv)
            took = time.monotonic() - began
            dest = out / f"{i:02d}-{step.name}"
            scenario.record(dest, argv, done)
            scenario.write(dest, "commit", scenario.text(sha))
            for fmt in ("text", "json"):
                argv_r = ("report", sha, "--repo", repo.url, "--cache", str(work / "report-cache"), "-o", fmt,
                          "--report-key-file", str(work / "report.key"))
                scenario.record(dest / f"report-{fmt}", argv_r, scenario.cli(*argv_r))
            scenario.write(dest, "statuses.json", json.dumps(scenario.data(_statuses(world)), indent=1))
            scenario.write(dest, "objects", "\n".join(scenario.text(o) for o in _objects(world)))
            scenario.write(dest, "state.json", json.dumps(scenario.data(_state(world)), indent=1))
            scenario.write(dest, "axfr", scenario.text(_axfr(world)))
            print(f"golden scenario: {step.name}: exit {done.returncode} in {took:.1f} s", file=sys.stderr)
    finally:
        world.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"golden: scenario of {checkout} in {out} ({time.monotonic() - started:.0f} s)")
