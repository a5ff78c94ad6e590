"""A revision applies whole or not at all, at any size, under faults, one run at a time (issue 14).

Every scenario runs the agent as a user does (`bindy-agent sync` as a process, or the orchestrator
in-process where a fault must land at an exact step) against real named, zone API, kube-apiserver
and Git, and asserts the END STATE by reading the servers back: an AXFR of the primary and of the
secondary compared with what the newest revision wants (missing / extra / duplicated / wrong RRsets,
out-of-band records kept), and the cluster's objects listed. Tests that kill, stop or restart a
server own it (`own_dns`, a private control plane), so the shared ones stay healthy.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import pytest
from kubernetes import client

from agent.cli import sync as sync_cli
from agent.clients import endpoints as config
from agent.clients import rfc2136
from agent.outcome import report
from tests.conftest import ROOT
from tests.support import agentrun, dnsworld, stallpeer
from tests.support import bind as bind_support
from tests.support.githttp import GitHttpServer
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster
from tests.support.procs import wait_for

GROUP, VERSION = "bindy.firestoned.io", "v1beta1"
PLURALS = ("bind9clusters", "bind9instances", "dnszones", "arecords", "txtrecords", "cnamerecords")


def _agent(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, check=False)


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "agent", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)


def _note(remote: GitRemote, tmp: pathlib.Path, sha: str) -> str:
    """The report on `sha`, read with plain git from a fresh clone (as a user would)."""
    clone = tmp / f"fresh-{sha[:8]}-{time.monotonic_ns()}"
    subprocess.run(["git", "clone", "-q", remote.url, str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "fetch", "-q", "origin", "refs/notes/*:refs/notes/*"], check=True)
    shown = subprocess.run(["git", "-C", str(clone), "notes", "--ref=bindy-agent", "show", sha],
                           capture_output=True, text=True, check=False)
    return shown.stdout if shown.returncode == 0 else ""


def _assert_converged(world: dnsworld.Dns, rev: dnsworld.Revision, label: str, *, foreign_in: Sequence[str] = (),
                      gone: Sequence[str] = ()) -> None:
    found = dnsworld.converged(world, rev, foreign_in=foreign_in, gone=gone)
    print(f"\nEND STATE {label}: {dnsworld.summary(found)}")
    assert all(d.clean for d in found), [(d.server, {k: v for k, v in vars(d).items() if v and k != "server"})
                                         for d in found]


def _shared_dns(tmp: pathlib.Path, bind: bind_support.BindPair, zone_api: Any, namespace: str) -> dnsworld.Dns:
    return dnsworld.Dns(bind, zone_api, dnsworld.endpoint_map(tmp / "endpoints", bind, zone_api, namespace=namespace))


def _crs(kube: KubeCluster, namespace: str) -> dict[tuple[str, str], dict[str, Any]]:
    api_client = kube.api_client()
    try:
        return _crs_of(api_client, namespace)
    finally:
        api_client.close()


def _without_progressing(status: dict[str, Any]) -> dict[str, Any]:
    return {**status, "conditions": [c for c in status.get("conditions", []) if c["type"] != "Progressing"]}


def _cluster_sync(tmp_path: pathlib.Path, git_remote: GitRemote, kube: KubeCluster, namespace: str,
                  world: dnsworld.Dns) -> list[str]:
    """`bindy-agent sync` of the remote into the test's namespace of the real cluster and its DNS."""
    return ["sync", "--repo", git_remote.url, "--cache", str(tmp_path / "cache"), "--kubeconfig",
            str(kube.kubeconfig), "--agent-namespace", namespace, "--endpoints", str(world.endpoints),
            "--allowed-namespaces", namespace]


# -- 2. a refused revision is not half-applied -------------------------------------------------------
def test_a_refused_revision_writes_nothing_but_the_refusal_mark_and_force_applies_it(
        tmp_path: pathlib.Path, git_remote: GitRemote, kube: KubeCluster, namespace: str,
        bind: bind_support.BindPair, zone_api: Any) -> None:
    world = _shared_dns(tmp_path, bind, zone_api, namespace)
    big, small = dnsworld.zone_names(2)
    rev = {**dnsworld.revision([big], 20), **dnsworld.revision([small], 10)}
    cli = _cluster_sync(tmp_path, git_remote, kube, namespace, world)
    dnsworld.push_revision(git_remote, rev, "Two zones", namespace=namespace)
    first = _agent(*cli)
    assert first.returncode == 0, first.stderr
    dnsworld.add_foreign(world, [big])
    before = _crs(kube, namespace)
    assert len(before) == 1 + 2 + 2 + 30

    cut = {big: dict(sorted(rev[big].items())[10:]), small: rev[small]}  # 10 of the 20 records of `big` go
    sha = dnsworld.push_revision(git_remote, cut, "Drop half of big", namespace=namespace)
    refused = _agent(*cli)
    assert refused.returncode == 2, refused.stderr
    reason = f"zone {big}.: refusing to delete 10 of 20 managed RRsets (50%)"
    assert reason in refused.stderr
    note = _note(git_remote, tmp_path, sha)
    assert note.startswith(f"bindy-agent: rejected {sha[:12]}") and f"refused: {reason}" in note
    _assert_converged(world, rev, "2 refused", foreign_in=[big])
    after = _crs(kube, namespace)
    assert sorted(after) == sorted(before)  # no CR deleted
    for key, obj in after.items():
        progressing = next(c for c in obj["status"]["conditions"] if c["type"] == "Progressing")
        assert (progressing["status"], progressing["reason"]) == ("False", "PlanRefused"), key
        assert sha[:12] in progressing["message"] and "refusing to delete 10 of 20" in progressing["message"]
        assert _without_progressing(obj["status"]) == _without_progressing(before[key]["status"]), key

    forced = _agent(*cli, "--force")
    assert forced.returncode == 0, forced.stderr
    _assert_converged(world, cut, "2 forced", foreign_in=[big])
    assert len(_crs(kube, namespace)) == len(before) - 10
    assert report.parse(_note(git_remote, tmp_path, sha))["outcome"] == "applied"


# -- 3. whole-zone deletion is gated -----------------------------------------------------------------
def test_removing_a_zone_with_managed_records_is_refused_until_forced(
        tmp_path: pathlib.Path, own_dns: dnsworld.Dns) -> None:
    doomed, kept = dnsworld.zone_names(2)
    rev = {**dnsworld.revision([doomed], 15), **dnsworld.revision([kept], 3)}
    repo = dnsworld.write_repo(tmp_path / "repo", rev)
    cli = ["sync", str(repo), "--endpoints", str(own_dns.endpoints), "--state", str(tmp_path / "state")]
    assert _agent(*cli).returncode == 0
    dnsworld.add_foreign(own_dns, [doomed, kept])

    rest = {kept: rev[kept]}
    dnsworld.write_repo(repo, rest)
    refused = _agent(*cli)
    assert refused.returncode == 2, refused.stderr
    # the zone holds foreign RRsets: it would stay, but deleting all 15 of the agent's RRsets is refused
    assert f"refused: zone {doomed}.: refusing to delete 15 of 15 managed RRsets (100%)" in refused.stderr
    _assert_converged(own_dns, rev, "3 refused", foreign_in=[doomed, kept])

    forced = _agent(*cli, "--force")
    assert forced.returncode == 0, forced.stderr
    _assert_converged(own_dns, rest, "3 forced", foreign_in=[kept], gone=[doomed])


# -- 4. the agent SIGKILLed while it writes --------------------------------------------------------
def _serials(world: dnsworld.Dns, zones: Sequence[str]) -> dict[str, int]:
    """Each zone's serial on the primary; a zone that does not answer fails the test (a wait on a
    serial that moved must not end because the server went silent)."""
    serials = {zone: world.serial(world.pair.primary, zone) for zone in zones}
    assert all(s is not None for s in serials.values()), f"the primary did not answer: {serials}"
    return {zone: s for zone, s in serials.items() if s is not None}


def _pending(state: pathlib.Path) -> int:
    """Zone records in the agent's state that hold an intent (a run was writing that zone)."""
    found = 0
    for path in (state / "zones").glob("*.json") if (state / "zones").is_dir() else []:
        with contextlib.suppress(OSError):  # replaced while read
            found += '"pending"' in path.read_text()
    return found


def _kill_when(proc: subprocess.Popen[str], ready: Any, timeout: float = 30) -> float:
    """Polls `ready()` and SIGKILLs the agent the moment it holds; returns when, in seconds."""
    start = time.monotonic()
    while not ready():
        assert proc.poll() is None, f"the run ended before the kill point:\n{proc.communicate()[1]}"
        assert time.monotonic() - start < timeout, "kill point never reached"
        time.sleep(0.002)
    proc.kill()
    proc.communicate()
    assert proc.returncode == -9
    return time.monotonic() - start


def test_a_run_killed_while_writing_converges_exactly_on_the_next_revision(
        tmp_path: pathlib.Path, own_dns: dnsworld.Dns) -> None:
    zones = dnsworld.zone_names(4)
    added, dropped = dnsworld.zone_names(2)  # zones that only revision B creates; C keeps one, drops the other
    repo, state = tmp_path / "repo", tmp_path / "state"
    cli = ["sync", str(repo), "--endpoints", str(own_dns.endpoints), "--state", str(state)]
    served = dnsworld.revision(zones, 70, generation=0)
    dnsworld.write_repo(repo, served)
    assert _agent(*cli).returncode == 0
    dnsworld.add_foreign(own_dns, zones)

    def updates() -> int:  # UPDATEs served since the kill point was armed: each one raises a serial by 1
        now = _serials(own_dns, zones)
        return sum(now[z] - base[z] for z in zones)

    # B's writes: 4 zones x 16 UPDATEs (80 changes each, --batch 5)
    kill_points = [("the first intent is stored", [lambda: _pending(state) > 0]),
                   ("the first UPDATE is served", [lambda: updates() >= 1]),
                   ("half the UPDATEs are served", [lambda: updates() >= 32]),
                   ("twice: at the first UPDATE, then 20 UPDATEs later", [lambda: updates() >= 1,
                                                                          lambda: updates() >= 20])]
    for round_no, (label, points) in enumerate(kill_points, start=1):
        b = {**dnsworld.revision(zones, 80, generation=2 * round_no - 1),
             **dnsworld.revision([added, dropped], 5, generation=round_no)}
        c = {**dnsworld.revision(zones, 70, generation=2 * round_no), **dnsworld.revision([added], 4)}
        dnsworld.write_repo(repo, b)
        for ready in points:
            base = _serials(own_dns, zones)
            when = _kill_when(_start(*cli, "--batch", "5"), ready)
            mid = dnsworld.converged(own_dns, b, foreign_in=zones, timeout=0)
            print(f"\nround {round_no}: killed {when:.2f} s in, when {label}; vs B: {dnsworld.summary(mid)}")
        dnsworld.write_repo(repo, c)
        after = _agent(*cli)
        assert after.returncode == 0 and "conflict" not in after.stderr, after.stderr
        _assert_converged(own_dns, c, f"4 round {round_no} (killed when {label})", foreign_in=zones, gone=[dropped])
        assert _pending(state) == 0
        served = c
    assert served


# -- 8. kube-apiserver SIGKILLed mid-sync ----------------------------------------------------------
INSTANCES = ("dns-primary-0", "dns-secondary-0")
KIND_OF = {"A": "ARecord", "TXT": "TXTRecord", "CNAME": "CNAMERecord"}
MANAGED = "app.kubernetes.io/managed-by=bindy-agent,bindy.firestoned.io/agent={agent}"


def _cluster_state(kube: KubeCluster, namespace: str, rev: dnsworld.Revision, revision: str, *,
                   agent: str = "bindy-agent") -> dict[str, list[str]]:
    """What the cluster holds against what `rev` wants: missing / extra CRs and generated objects,
    objects without the labels of the agent (named by its --agent-namespace), and CRs not Ready at
    `revision`."""
    api_client = kube.api_client()
    try:
        crs = _crs_of(api_client, namespace)
        wanted = {("Bind9Cluster", "dns"), *(("Bind9Instance", i) for i in INSTANCES)}
        for index, (zone, rrsets) in enumerate(sorted(rev.items())):
            wanted.add(("DNSZone", zone.replace(".", "-")))
            wanted |= {(KIND_OF[t], f"r{index}-{n}-{t.lower()}") for n, t in rrsets}
        core, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
        listed = {"ServiceAccount": core.list_namespaced_service_account, "Secret": core.list_namespaced_secret,
                  "ConfigMap": core.list_namespaced_config_map, "Service": core.list_namespaced_service,
                  "Deployment": apps.list_namespaced_deployment}
        objects = {(kind, o.metadata.name): o.metadata.labels for kind, call in listed.items()
                   for o in call(namespace).items if o.metadata.name.startswith("dns-") or o.metadata.name == "bind9"}
        generated = {("ServiceAccount", "bind9"), *((k, f"{i}{s}") for i in INSTANCES for k, s in
                                                     (("Secret", "-rndc-key"), ("ConfigMap", "-config"),
                                                      ("Service", ""), ("Deployment", "")))}
        have = {**{k: o["metadata"].get("labels") for k, o in crs.items()}, **objects}
        return {"missing": sorted(f"{k}/{n}" for k, n in (wanted | generated) - set(have)),
                "extra": sorted(f"{k}/{n}" for k, n in set(have) - wanted - generated),
                "unlabelled": sorted(f"{k}/{n}" for (k, n), labels in have.items() if not _labelled(labels, agent)),
                "not ready": sorted(f"{k}/{n}" for (k, n), o in crs.items() if not _ready_at(o, revision))}
    finally:
        api_client.close()


def _crs_of(api_client: Any, namespace: str) -> dict[tuple[str, str], dict[str, Any]]:
    api = client.CustomObjectsApi(api_client)
    return {(item["kind"], item["metadata"]["name"]): item for plural in PLURALS
            for item in api.list_namespaced_custom_object(GROUP, VERSION, namespace, plural)["items"]}


def _labelled(labels: dict[str, str] | None, agent: str) -> bool:
    return dict(p.split("=") for p in MANAGED.format(agent=agent).split(",")).items() <= (labels or {}).items()


def _ready_at(obj: dict[str, Any], revision: str) -> bool:
    """Ready, and where a kind shows the revision (the cluster, the zones it changed), showing this one."""
    status = obj.get("status") or {}
    ready = next((c for c in status.get("conditions", []) if c["type"] == "Ready"), {})
    if obj.get("kind") == "Bind9Instance":  # no kubelet in this control plane: its pods never run, it waits
        return (ready.get("status"), ready.get("reason")) == ("False", "NotReady")
    shows = obj.get("kind") in ("Bind9Cluster", "DNSZone")
    return ready.get("status") == "True" and (not shows or status.get("lastAppliedRevision") == revision)


def test_kube_apiserver_killed_mid_sync_then_restarted_converges(
        tmp_path: pathlib.Path, own_kube: KubeCluster, bind: bind_support.BindPair, zone_api: Any) -> None:
    world = _shared_dns(tmp_path, bind, zone_api, "dns-system")
    zones = dnsworld.zone_names(3)
    repo = tmp_path / "repo"
    cli = ["sync", str(repo), "--kubeconfig", str(own_kube.kubeconfig), "--endpoints", str(world.endpoints),
           "--create-namespaces", "--batch", "5"]

    def records_applied() -> int:
        try:
            return len(_crs(own_kube, "dns-system"))
        except client.ApiException:  # the CRDs are being installed
            return 0

    a = dnsworld.revision(zones, 30)
    dnsworld.write_repo(repo, a)
    run = _start(*cli)
    wait_for(lambda: records_applied() >= 45 or run.poll() is not None, 60, every=0.01)  # half of them
    own_kube.apiserver.kill()
    _, err = run.communicate(timeout=120)
    assert run.returncode in (1, 3), err  # partial, or could not run
    print(f"\nkilled while applying CRs: exit {run.returncode}, {err.strip().splitlines()[-1]}")
    own_kube.restart_apiserver()
    first = _agent(*cli)
    assert first.returncode == 0, first.stderr
    _assert_converged(world, a, "8 after a kill while applying CRs")
    found = _cluster_state(own_kube, "dns-system", a, _revision(first.stderr))
    print(f"END STATE 8 cluster: { {k: len(v) for k, v in found.items()} }")
    assert found == {"missing": [], "extra": [], "unlabelled": [], "not ready": []}

    dnsworld.add_foreign(world, zones)
    b = dnsworld.revision(zones, 27, generation=1)  # every record changes, 9 go
    dnsworld.write_repo(repo, b)
    base = _serials(world, zones)
    run = _start(*cli)
    wait_for(lambda: any(s != base[z] for z, s in _serials(world, zones).items()) or run.poll() is not None, 60,
             every=0.002)
    own_kube.apiserver.kill()
    _, err = run.communicate(timeout=120)
    assert run.returncode in (1, 3), err
    print(f"\nkilled while writing DNS: exit {run.returncode}, {err.strip().splitlines()[-1]}")
    own_kube.restart_apiserver()
    second = _agent(*cli)
    assert second.returncode == 0 and "conflict" not in second.stderr, second.stderr
    _assert_converged(world, b, "8 after a kill while writing DNS", foreign_in=zones)
    found = _cluster_state(own_kube, "dns-system", b, _revision(second.stderr))
    print(f"END STATE 8 cluster: { {k: len(v) for k, v in found.items()} }")
    assert found == {"missing": [], "extra": [], "unlabelled": [], "not ready": []}


def _revision(stderr: str) -> str:
    return stderr.split("Sync of revision ", 1)[1].split(":", 2)[0] + ":" + \
        stderr.split("Sync of revision ", 1)[1].split(":", 2)[1]


# -- 7 and 10. named SIGKILLed, or SIGSTOPped, mid-sync ----------------------------------------------
def _fail_primary_mid_sync(tmp: pathlib.Path, world: dnsworld.Dns, fault: str, deadline: int = 6,
                           ) -> tuple[list[str], list[str], subprocess.CompletedProcess[str], float]:
    """Syncs A, adds foreign records, starts syncing B and, once its first UPDATE is served, applies
    `fault` to the primary named. Returns the zones, the CLI, and how the interrupted run ended."""
    zones = dnsworld.zone_names(6)
    repo = tmp / "repo"
    cli = ["sync", str(repo), "--endpoints", str(world.endpoints), "--state", str(tmp / "state"),
           "--deadline", str(deadline)]
    dnsworld.write_repo(repo, dnsworld.revision(zones, 60))
    assert _agent(*cli).returncode == 0
    dnsworld.add_foreign(world, zones)
    b = dnsworld.revision(zones, 80, generation=1)
    dnsworld.write_repo(repo, b)
    base = _serials(world, zones)
    run = _start(*cli, "--batch", "5")
    wait_for(lambda: any(s != base[z] for z, s in _serials(world, zones).items()) or run.poll() is not None, 30,
             every=0.002)
    world.pair.primary.kill() if fault == "SIGKILL" else world.pair.primary.pause()
    faulted = time.monotonic()  # the run's deadline started before this: it must end within it from here
    out, err = run.communicate(timeout=60)
    took = time.monotonic() - faulted
    print(f"\n{fault}: the run ended {took:.1f} s after it, exit {run.returncode}: {err.strip().splitlines()[-1]}")
    return zones, cli, subprocess.CompletedProcess(run.args, run.returncode, out, err), took


def _converge_after(tmp: pathlib.Path, world: dnsworld.Dns, zones: list[str], cli: list[str], label: str) -> None:
    b = dnsworld.revision(zones, 80, generation=1)
    mid = dnsworld.converged(world, b, foreign_in=zones, timeout=0)
    assert not all(d.clean for d in mid), "the fault came too late to interrupt anything"
    c = dnsworld.revision(zones, 70, generation=2)  # changes and removes what B wrote
    dnsworld.write_repo(tmp / "repo", c)
    after = _agent(*cli)
    assert after.returncode == 0 and "conflict" not in after.stderr, after.stderr
    _assert_converged(world, c, label, foreign_in=zones)


def test_primary_named_killed_mid_sync_then_restarted_converges_exactly(
        tmp_path: pathlib.Path, own_dns: dnsworld.Dns) -> None:
    zones, cli, run, _ = _fail_primary_mid_sync(tmp_path, own_dns, "SIGKILL")
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert "partial: " in run.stderr and "UPDATE not delivered" in run.stderr
    own_dns.pair.primary.restart()  # same config and directory: its zones (NZD) and journals come back
    _converge_after(tmp_path, own_dns, zones, cli, "7 (primary SIGKILLed, restarted)")


def test_primary_named_stopped_mid_sync_ends_the_run_within_its_deadline_then_converges(
        tmp_path: pathlib.Path, own_dns: dnsworld.Dns) -> None:
    zones, cli, run, took = _fail_primary_mid_sync(tmp_path, own_dns, "SIGSTOP", deadline=6)
    assert run.returncode == 1, run.stderr
    assert took < 6 + 1, run.stderr  # from the stop: within the deadline (plus writing the state)
    assert "partial: " in run.stderr and "(the run's deadline passed)" in run.stderr
    assert "failed: the run's deadline (6 s) passed before it finished" in run.stderr
    own_dns.pair.primary.resume()
    _converge_after(tmp_path, own_dns, zones, cli, "10 (primary SIGSTOPped, SIGCONTed)")


def test_a_secondary_that_is_down_makes_the_run_partial_and_is_caught_up_later(
        tmp_path: pathlib.Path, own_dns: dnsworld.Dns) -> None:
    zones = dnsworld.zone_names(2)
    repo = tmp_path / "repo"
    cli = ["sync", str(repo), "--endpoints", str(own_dns.endpoints), "--state", str(tmp_path / "state"),
           "--deadline", "4"]
    dnsworld.write_repo(repo, dnsworld.revision(zones, 10))
    assert _agent(*cli).returncode == 0
    own_dns.pair.secondary.kill()
    b = dnsworld.revision(zones, 12, generation=1)
    dnsworld.write_repo(repo, b)
    down = _agent(*cli)
    assert down.returncode == 1, down.stderr
    assert f"failed: {zones[0]}.: dns-system/dns-secondary-0 does not answer the new h0.{zones[0]}. A" in down.stderr
    assert "partial: 25 failed (the run's deadline passed)" in down.stderr  # 24 checks and the deadline
    assert "Traceback" not in down.stderr
    assert dnsworld.divergence(own_dns, own_dns.pair.primary, b).clean  # the primary took it all

    own_dns.pair.secondary.restart()
    again = _agent(*cli)  # nothing left to write: the primary already has B
    assert again.returncode == 0, again.stderr
    assert "DNS: 0 RRset changes in 0 UPDATE messages, 0 zone deletions, verified 2/2" in again.stderr
    _assert_converged(own_dns, b, "secondary down, then back")


# -- 5. a stalled zone API peer ----------------------------------------------------------------------
def test_a_stalled_zone_api_ends_the_run_as_partial_within_its_deadline_then_converges(
        tmp_path: pathlib.Path, bind: bind_support.BindPair, zone_api: Any) -> None:
    world = _shared_dns(tmp_path, bind, zone_api, "dns-system")
    zones = dnsworld.zone_names(3)
    rev = dnsworld.revision(zones, 20)
    repo = dnsworld.write_repo(tmp_path / "repo", rev)
    cli = ["sync", str(repo), "--state", str(tmp_path / "state"), "--deadline", "5"]
    peer = stallpeer.StallingPeer(every=3).start()  # accepts, then one byte every 3 s
    try:
        stalled = dnsworld.endpoint_map(tmp_path / "stalled", bind, zone_api, primary_api=peer.url)
        run = _agent(*cli, "--endpoints", str(stalled))
        ended = time.monotonic()
    finally:
        peer.stop()
    assert peer.first_accept is not None
    took = ended - peer.first_accept  # the run's deadline started before its first call to the peer
    print(f"\nstalled zone API: exit {run.returncode}, {took:.1f} s after the peer accepted: "
          f"{run.stderr.strip().splitlines()[-1]}")
    assert run.returncode == 1, run.stderr
    assert took < 5 + 1, run.stderr  # within the deadline (plus writing the state)
    assert "partial: 4 failed (the run's deadline passed)" in run.stderr  # 3 zones and the deadline
    assert re.search(rf"failed: {zones[0]}.: dns-system/dns-primary-0: POST /zones: no complete answer within [45] s "
                     r"\(all the run's deadline left\); the zone API accepted but stalled", run.stderr), run.stderr
    assert all(d.missing == [f"{n}.{z}. {t} (zone not served)" for z in zones for n, t in rev[z]]
               for d in dnsworld.converged(world, rev, timeout=0))  # nothing was written

    healthy = _agent(*cli, "--endpoints", str(world.endpoints))
    assert healthy.returncode == 0, healthy.stderr
    _assert_converged(world, rev, "5 (stalled zone API, then healthy)")


# -- 6. two syncs at once on the same cache ----------------------------------------------------------
def test_two_syncs_started_together_never_collide(tmp_path: pathlib.Path, git_remote: GitRemote,
                                                  bind: bind_support.BindPair, zone_api: Any) -> None:
    world = _shared_dns(tmp_path, bind, zone_api, "dns-system")
    zones = dnsworld.zone_names(2)  # enough work that a run holds the lock while the other starts
    cache = str(tmp_path / "cache")
    cli = ["sync", "--repo", git_remote.url, "--cache", cache, "--state", str(tmp_path / "state"),
           "--endpoints", str(world.endpoints)]
    git_lock_error = re.compile(r"Unable to create|File exists|cannot lock ref|(shallow|index|HEAD)\.lock|Traceback")
    outcomes = []
    for pair in range(10):
        rev = dnsworld.revision(zones, 10, generation=pair)
        sha = dnsworld.push_revision(git_remote, rev, f"revision {pair}")
        wait = ["--lock-wait", "0"] if pair % 2 else []  # odd pairs: give up at once instead of waiting
        report_run = _start("report", sha, "--repo", git_remote.url, "--cache", cache)  # the same cache
        runs = [_start(*cli, *wait), _start(*cli, *wait), report_run]
        done = [(r.pid, *r.communicate(timeout=120), r.returncode) for r in runs]
        for _, _, err, _ in done:
            assert not git_lock_error.search(err), err
        for pid, _, err, code in done[:2]:
            other = next(p for p, *_ in done[:2] if p != pid)
            if code == 3:
                assert wait and f"another sync is running (pid {other})" in err, err
            else:
                assert code == 0, err
        assert done[2][3] in (1, 4), done[2][2]  # the report: shown (unverified: no report key), or not written yet
        outcomes.append(sorted(code for *_, code in done[:2]))
        if not wait:  # the one that waited found the revision applied by the other
            assert sum("nothing to do" in err for _, _, err, _ in done[:2]) == 1, [err for _, _, err, _ in done]
        _assert_converged(world, rev, f"6 pair {pair + 1}")
    print(f"\n6: exit codes of the 10 pairs: {outcomes}")
    assert [0, 3] in outcomes[1::2], "no pair ever overlapped: the test proves nothing"
    assert all(o == [0, 0] for o in outcomes[0::2])


# -- 9. the Git remote gone before, and during, a run ------------------------------------------------
def _tree(root: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_git_remote_gone_writes_nothing_and_a_report_it_missed_is_pushed_later(
        tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any) -> None:
    world = _shared_dns(tmp_path, bind, zone_api, "dns-system")
    zones = dnsworld.zone_names(3)
    cache, state = tmp_path / "cache", tmp_path / "state"
    cli = ["sync", "--repo", git_remote.url, "--cache", str(cache), "--state", str(state),
           "--endpoints", str(world.endpoints)]
    a = dnsworld.revision(zones, 100)
    dnsworld.push_revision(git_remote, a, "A")
    assert _agent(*cli).returncode == 0
    away = git_remote.bare.with_name("remote-away.git")

    b = dnsworld.revision(zones, 100, generation=1)
    sha_b = dnsworld.push_revision(git_remote, b, "B")
    before = _tree(state)
    git_remote.bare.rename(away)  # gone before the run
    gone = _agent(*cli)
    away.rename(git_remote.bare)
    assert gone.returncode == 3, gone.stderr
    assert "error: could not run: git ls-remote" in gone.stderr, gone.stderr
    assert _tree(state) == before  # nothing written: not the state ...
    _assert_converged(world, a, "9 (remote gone before the run)")  # ... nor DNS

    fetched = cache / next(p.name for p in cache.iterdir() if p.is_dir()) / ".git" / "FETCH_HEAD"
    run = _start(*cli)
    wait_for(lambda: sha_b in (fetched.read_text() if fetched.exists() else "") or run.poll() is not None, 30,
             every=0.002)  # B fetched (its files are read from the commit, no checkout)
    git_remote.bare.rename(away)  # gone during the run: after the fetch, before the report is pushed
    _, err = run.communicate(timeout=120)
    away.rename(git_remote.bare)
    assert run.returncode == 0, err
    assert "warning: the report could not be pushed (kept in the local clone; pushed on a later run)" in err, err
    _assert_converged(world, b, "9 (remote gone during the run)")
    assert _note(git_remote, tmp_path, sha_b) == ""  # not there yet

    assert '"notesPending": true' in (state / "run.json").read_text()
    later = _agent(*cli)  # nothing new to apply; the report it could not push goes out now
    assert later.returncode == 0, later.stderr
    assert "was already applied; nothing to do; pushed the reports an earlier run could not" in later.stderr
    assert "notesPending" not in (state / "run.json").read_text()
    note = _note(git_remote, tmp_path, sha_b)
    assert note.startswith(f'bindy-agent: applied {sha_b[:12]} "B"'), later.stderr
    assert report.parse(note)["summary"]["rrsetChanges"] == 300


# -- 1. reports of any size ----------------------------------------------------------------------------
def test_a_repository_of_3000_records_syncs_and_its_report_is_readable_and_complete(
        tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any) -> None:
    world = _shared_dns(tmp_path, bind, zone_api, "dns-system")
    zones = dnsworld.zone_names(30)
    rev = dnsworld.revision(zones, 101)
    sha = dnsworld.push_revision(git_remote, rev, "3030 records")
    started = time.monotonic()
    key = tmp_path / "report.key"
    key.write_text("a report key of more than 32 characters\n")
    run = _agent("sync", "--repo", git_remote.url, "--cache", str(tmp_path / "cache"), "--state",
                 str(tmp_path / "state"), "--endpoints", str(world.endpoints), "--report-key-file", str(key))
    took = time.monotonic() - started
    assert run.returncode == 0, run.stderr
    assert "DNS: 3030 RRset changes in 30 UPDATE messages, 0 zone deletions, verified 6060/6060" in run.stderr
    _assert_converged(world, rev, f"1 ({dnsworld.records(rev)} records, synced in {took:.1f} s)")

    note = _note(git_remote, tmp_path, sha)
    lines = note.splitlines()
    print(f"1: note of {len(note):,} bytes, {len(lines)} lines; first lines:\n" + "\n".join(lines[:4]))
    assert lines[0] == f'bindy-agent: applied {sha[:12]} "3030 records" (Test Author <author@example.com>)'
    assert re.match(r"run \w+, [\d.]+ s: Kubernetes 0 created, 0 updated, 0 deleted; DNS 3030 RRset changes, "
                    r"60 zone changes, verified 6060/6060$", lines[1])
    assert lines[2:22] == [f"  {report.change_line(c)}" for c in report.parse(note)["changes"][:20]]
    assert lines[22] == f"  ... and 3,070 more (`bindy-agent report {sha[:12]} -o json` lists every change)"
    assert len(note) < 100_000 and report.parse(note)["omitted"] == {"changes": 3090 - 200, "verification": 5860}
    shown = _agent("report", sha, "--repo", git_remote.url, "--cache", str(tmp_path / "report-cache"), "-o", "json",
                   "--report-key-file", str(key))
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert doc["verified"] is True  # the complete report (refs/notes/bindy-agent-full), signed as well
    records = [c for c in doc["changes"] if c["layer"] == "records"]
    assert (doc["outcome"], len(records), len(doc["changes"])) == ("applied", 3030, 3090)
    assert {(c["target"]["name"], c["target"]["type"]) for c in records} == {
        (f"{n}.{z}.", t) for z in zones for n, t in rev[z]}
    assert {c["result"] for c in doc["changes"]} == {"applied"} and "omitted" not in doc


# -- a zone changed by someone else twice while the agent writes it ----------------------------------
def test_rrsets_written_before_a_failed_replan_stay_the_agents(
        tmp_path: pathlib.Path, bind: bind_support.BindPair, zone_api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    world = _shared_dns(tmp_path, bind, zone_api, "dns-system")
    (zone,) = dnsworld.zone_names(1)
    repo, state = tmp_path / "repo", tmp_path / "state"
    endpoints = config.load_endpoints(world.endpoints)
    a = dnsworld.revision([zone], 40)
    dnsworld.write_repo(repo, a)
    assert agentrun.sync_dir(repo, state=state, endpoints=endpoints).outcome == "applied"

    # B: 10 new RRsets (a0..a9, the first UPDATEs) and h9 changed (the last one, sorted by name)
    b = {zone: {**a[zone], **{(f"a{i}", "A"): (f"192.0.2.{i + 1}",) for i in range(10)},
                ("h9", "A"): ("192.0.2.99",)}}
    dnsworld.write_repo(repo, b)
    real_send, races = rfc2136.send, iter(range(1, 100))

    def race_then_send(endpoint: Any, update: Any, **kw: Any) -> None:
        # someone edits h9 before every UPDATE but the run's first (which carries the prerequisites of
        # every change, h9's included, so a race before it would stop the zone before anything is written)
        if (n := next(races)) > 1:
            world.update(zone, lambda u: u.replace("h9", 300, "A", f"203.0.113.{n}"))
        real_send(endpoint, update, **kw)

    monkeypatch.setattr(rfc2136, "send", race_then_send)
    raced = agentrun.sync_dir(repo, state=state, endpoints=endpoints, batch=5)
    monkeypatch.undo()
    assert raced.outcome == "partial" and "the zone changed since it was observed" in " ".join(raced.failures)
    served = world.axfr(world.pair.primary, zone) or {}
    assert all((f"a{i}.{zone}.", "A") in served for i in range(10))  # the first UPDATEs went through

    dnsworld.write_repo(repo, a)  # C: back to A - a0..a9 were the agent's, so they go (20%: under the gate)
    after = agentrun.sync_dir(repo, state=state, endpoints=endpoints)
    assert after.outcome == "applied", (after.failures, after.conflicts, after.refusals)
    _assert_converged(world, a, "re-plan failed twice, then C")


# -- a foreign RRset where Git wants one: partial, said everywhere, the foreign data untouched ------
def test_a_foreign_rrset_git_wants_makes_the_run_partial_and_is_named_in_note_and_status(
        tmp_path: pathlib.Path, git_remote: GitRemote, kube: KubeCluster, namespace: str,
        bind: bind_support.BindPair, zone_api: Any) -> None:
    world = _shared_dns(tmp_path, bind, zone_api, namespace)
    (zone,) = dnsworld.zone_names(1)
    a = dnsworld.revision([zone], 6)
    cli = _cluster_sync(tmp_path, git_remote, kube, namespace, world)
    dnsworld.push_revision(git_remote, a, "Six records", namespace=namespace)
    first = _agent(*cli)
    assert first.returncode == 0, first.stderr
    dnsworld.add_foreign(world, [zone])  # legacy A 198.51.100.77, written by someone else with an UPDATE

    wanted = {**a[zone], ("legacy", "A"): ("192.0.2.50",), ("h6", "A"): ("192.0.2.60",)}  # legacy: Git wants it too
    sha = dnsworld.push_revision(git_remote, {zone: wanted}, "Take over legacy, add h6", namespace=namespace)
    run = _agent(*cli)
    conflict = (f"{zone}.: legacy.{zone}. A: exists with data the agent did not write (198.51.100.77); "
                "not overwritten")
    assert run.returncode == 1, run.stderr
    assert f"conflict: {conflict}" in run.stderr and "Traceback" not in run.stderr
    assert "partial: 1 conflicts; what was applied stays" in run.stderr
    served = {zone: {k: v for k, v in wanted.items() if k != ("legacy", "A")}}  # h6 applied, legacy left alone
    _assert_converged(world, served, "foreign conflict", foreign_in=[zone])

    note = _note(git_remote, tmp_path, sha)
    assert note.startswith(f"bindy-agent: partial {sha[:12]}"), note
    assert f"conflict: {conflict}" in note.splitlines()
    doc = report.parse(note)
    assert (doc["outcome"], doc["conflicts"], doc["summary"]["conflicts"]) == ("partial", [conflict], 1)

    crs = _crs(kube, namespace)
    taken = crs[("ARecord", "r0-legacy-a")]["status"]["conditions"]
    ready = next(c for c in taken if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "RecordFailed"), taken
    assert f"conflict: legacy.{zone}. A: exists with data the agent did not write" in ready["message"], ready
    others = {k: next(c for c in o["status"]["conditions"] if c["type"] == "Ready")["status"]
              for k, o in crs.items() if k != ("ARecord", "r0-legacy-a") and k[0] != "Bind9Instance"}
    assert set(others.values()) == {"True"}, others  # only the record in conflict is not Ready
    # (the instances wait for their pods, which never run here: no kubelet in this control plane)

    again = _agent(*cli)  # nothing else to do, and the conflict is still there: still partial, still untouched
    assert again.returncode == 1 and f"conflict: {conflict}" in again.stderr, again.stderr
    _assert_converged(world, served, "foreign conflict, second run", foreign_in=[zone])

    world.update(zone, lambda u: u.delete("legacy", "A"))  # its owner gives the name up: the next run takes it
    taken_over = _agent(*cli)
    assert taken_over.returncode == 0 and "conflict" not in taken_over.stderr, taken_over.stderr
    acme = (60, dnsworld.foreign(zone)[("_acme-challenge", "TXT")])

    def legacy_and_acme(server: bind_support.BindServer) -> tuple[Any, Any]:
        got = world.axfr(server, zone) or {}
        return got.get((f"legacy.{zone}.", "A")), got.get((f"_acme-challenge.{zone}.", "TXT"))

    wait_for(lambda: all(legacy_and_acme(s) == ((300, ("192.0.2.50",)), acme) for s in world.servers), 15)
    for d in dnsworld.converged(world, {zone: wanted}, timeout=0):  # all of Git's, and only the ACME TXT beside
        assert (d.counts()["extra"], sum(d.counts().values())) == (1, 1) and "_acme-challenge" in d.extra[0], d
    status = _crs(kube, namespace)[("ARecord", "r0-legacy-a")]["status"]
    assert next(c for c in status["conditions"] if c["type"] == "Ready")["status"] == "True", status


# -- 5b. a stalled Git remote --------------------------------------------------------------------------
GIT_STALLS = {"ls-remote": lambda method, path: "info/refs?service=git-upload-pack" in path,  # the first call
              "fetch": lambda method, path: method == "POST" and path.endswith("/git-upload-pack"),
              "push": lambda method, path: "git-receive-pack" in path}


@pytest.mark.parametrize("stalled", list(GIT_STALLS))
def test_a_stalled_git_remote_ends_the_run_within_its_deadline(
        stalled: str, tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair,
        zone_api: Any) -> None:
    """The remote accepts the request and never answers: the git command is killed when the run's
    deadline passes (not after git's own 60 s), nothing is written when the revision could not be read,
    and a report that could not be pushed goes out with the next run."""
    world = _shared_dns(tmp_path, bind, zone_api, "dns-system")
    zones = dnsworld.zone_names(2)
    a, b = dnsworld.revision(zones, 10), dnsworld.revision(zones, 10, generation=1)
    dnsworld.push_revision(git_remote, a, "A")
    subprocess.run(["git", "-C", str(git_remote.bare), "config", "http.receivepack", "true"], check=True)
    token = tmp_path / "git-token"
    token.write_text("tok-stall\n")
    server = GitHttpServer(git_remote.bare.parent, "tok-stall").start()
    state = tmp_path / "state"
    cli = ["sync", "--repo", server.url(git_remote.bare.name), "--token-file", str(token), "--cache",
           str(tmp_path / "cache"), "--state", str(state), "--endpoints", str(world.endpoints), "--deadline", "5"]
    try:
        first = _agent(*cli)
        assert first.returncode == 0, first.stderr
        sha_b = dnsworld.push_revision(git_remote, b, "B")
        before = _tree(state)
        server.stall = GIT_STALLS[stalled]
        run = _agent(*cli)
        ended = time.monotonic()
        server.stall = None
        assert server.first_stall is not None, f"the {stalled} was never sent: {run.stderr}"
        took = ended - server.first_stall  # the run's deadline started before the stalled call
        print(f"\nstalled git {stalled}: exit {run.returncode}, {took:.1f} s after the stall: "
              f"{run.stderr.strip().splitlines()[-1]}")
        assert took < 5 + 1, run.stderr  # within the deadline (plus writing the state), not git's own 60 s
        assert "Traceback" not in run.stderr
        if stalled == "push":  # B is applied; its report waits in the local clone
            assert run.returncode == 0, run.stderr
            assert f"warning: {sync_cli.UNPUSHED}" in run.stderr, run.stderr
            assert re.search(r"git push \S+: no answer within [1-5] s \(all the run's deadline left\); the Git remote "
                             "stalled", run.stderr), run.stderr
            _assert_converged(world, b, "stalled git push")
            assert _note(git_remote, tmp_path, sha_b) == ""
        else:  # the revision could not be read: nothing written anywhere
            assert run.returncode == 3, run.stderr
            assert re.search(rf"error: could not run: git {stalled} {re.escape(server.url(git_remote.bare.name))}: "
                             r"no answer within [45] s \(all the run's deadline left\); the Git remote stalled",
                             run.stderr), run.stderr
            assert _tree(state) == before
            _assert_converged(world, a, f"stalled git {stalled}")

        healthy = _agent(*cli)
        assert healthy.returncode == 0, healthy.stderr
    finally:
        server.stop()
    _assert_converged(world, b, f"stalled git {stalled}, then healthy")
    assert _note(git_remote, tmp_path, sha_b).startswith(f'bindy-agent: applied {sha_b[:12]} "B"')


# -- 4b. the agent SIGKILLed while it applies Kubernetes objects and statuses -------------------------
def test_a_run_killed_while_applying_kubernetes_objects_converges_exactly_and_then_writes_nothing(
        tmp_path: pathlib.Path, kube: KubeCluster, namespace: str, bind: bind_support.BindPair,
        zone_api: Any) -> None:
    world = _shared_dns(tmp_path, bind, zone_api, namespace)
    zones = dnsworld.zone_names(3)
    repo = tmp_path / "repo"
    cli = ["sync", str(repo), "--kubeconfig", str(kube.kubeconfig), "--agent-namespace", namespace,
           "--allowed-namespaces", namespace, "--endpoints", str(world.endpoints)]
    api_client = kube.api_client()

    def crs() -> dict[tuple[str, str], dict[str, Any]]:
        try:
            return _crs_of(api_client, namespace)
        except client.ApiException:  # the CRDs are not installed yet
            return {}

    def new(first: int, found: dict[tuple[str, str], dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """The record CRs of h{first}..h49 (in every zone), which only the revision being applied has."""
        objects = list((crs() if found is None else found).values())
        numbers = [re.fullmatch(r"r\d-h(\d+)-\w+", o["metadata"]["name"]) for o in objects]
        return [o for o, m in zip(objects, numbers, strict=True) if m and first <= int(m[1]) < 50]

    def b_half_applied() -> bool:  # some of what only B wants exist, among them some that C drops
        found = crs()
        return len(new(45, found)) > 0 and len(new(40, found)) < 30

    total_a = 1 + 2 + 3 + 3 * 40  # the cluster, its 2 instances, 3 zones, 120 records
    rounds = [  # (label, the revision killed, when, the revision synced next)
        ("some but not all of A's objects exist (first apply)", dnsworld.revision(zones, 40),
         lambda: 0 < len(crs()) < total_a, dnsworld.revision(zones, 40)),
        ("some but not all of B's 30 new records exist; C drops half of them", dnsworld.revision(zones, 50, generation=1),
         b_half_applied, dnsworld.revision(zones, 45, generation=2)),
        ("some but not all statuses of D's 15 new records are written", dnsworld.revision(zones, 50, generation=3),
         lambda: 0 < sum("status" in o for o in new(45)) < 15, dnsworld.revision(zones, 50, generation=3))]
    try:
        for number, (label, killed, ready, then) in enumerate(rounds, start=1):
            dnsworld.write_repo(repo, killed, namespace=namespace)
            when = _kill_when(_start(*cli), ready)
            mid = _cluster_state(kube, namespace, then, "", agent=namespace)
            print(f"\nround {number}: killed {when:.2f} s in, when {label}; cluster vs the next revision: "
                  f"{len(mid['missing'])} missing, {len(mid['extra'])} extra")
            dnsworld.write_repo(repo, then, namespace=namespace)
            again = _agent(*cli)
            assert again.returncode == 0 and "conflict" not in again.stderr, again.stderr
            foreign = zones if number > 1 else []
            _assert_converged(world, then, f"4b round {number} (killed when {label})", foreign_in=foreign)
            found = _cluster_state(kube, namespace, then, _revision(again.stderr), agent=namespace)
            print(f"END STATE 4b round {number} cluster: { {k: len(v) for k, v in found.items()} }")
            assert found == {"missing": [], "extra": [], "unlabelled": [], "not ready": []}
            third = _agent(*cli)
            assert third.returncode == 0, third.stderr
            assert ("Kubernetes: applied 0, deleted 0, statuses written 0; DNS: 0 RRset changes in 0 UPDATE messages"
                    in third.stderr and third.stderr.rstrip().endswith("; 0 API writes")), third.stderr
            if number == 1:
                dnsworld.add_foreign(world, zones)
    finally:
        api_client.close()
