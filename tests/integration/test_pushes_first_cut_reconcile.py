"""The reconcile a push cut ("pushes first") is owed, not lost: a bad push does not swallow it, a stream of
pushes does not starve it, and the resume after a partial push run is the whole reconcile. Against the real
components (named pair, zone API, kube-apiserver, a Git remote), with the harness of
tests/integration/test_pushes_first.py; each test's docstring says what a user would lose."""

from __future__ import annotations

import pathlib
from typing import Any

import dns.query
import dns.rcode
import dns.tsigkeyring
import dns.update
import pytest
from kubernetes import client

from agent.clients import rfc2136 as records
from agent.gate import safety
from agent.run import orchestrator
from agent.run.memory import Memory
from tests.support import bind as bind_support
from tests.support import sampleworld
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster

pytestmark = pytest.mark.integration
WEB = "records/example-com/web.yaml"
NO_DELETES = safety.Policy(delete_threshold=0.0, min_managed=1)  # an operator who allows no record deletion


@pytest.fixture
def world(tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any,
          kube: KubeCluster, namespace: str) -> dict[str, Any]:
    return sampleworld.sample_world(tmp_path, git_remote, bind, zone_api, kube, namespace)


def _run(world: dict[str, Any], memory: Memory, **kwargs: Any) -> orchestrator.RunOutcome:
    kwargs.setdefault("policy", NO_DELETES)
    return sampleworld.run(world, memory, **kwargs)


def _out_of_band(bind: bind_support.BindPair, zone: str, name: str, value: str) -> None:
    keyring = dns.tsigkeyring.from_text({bind_support.TSIG_NAME: ("hmac-sha256", bind.keys.tsig)})
    update = dns.update.UpdateMessage(zone, keyring=keyring, keyalgorithm="hmac-sha256")
    update.replace(name, 300, "A", value)
    assert dns.query.tcp(update, bind.primary.address, port=bind.primary.port, timeout=5).rcode() == dns.rcode.NOERROR


class _PushDuring:
    """A commit pushed (and its webhook waiting) the first time the reconcile asks."""

    def __init__(self, world: dict[str, Any], text: str) -> None:
        self.world, self.text, self.sha = world, text, ""

    def __call__(self) -> bool:
        if not self.sha:
            self.sha = self.world["remote"].commit("drop www", {WEB: self.text})
            self.world["remote"].push()
        return True


def _without_www(text: str) -> str:
    docs = text.split("\n---\n")
    return "\n---\n".join(d for d in docs if "name: www\n  namespace" not in d)


@pytest.mark.parametrize("bad", ["refused", "invalid"])
def test_a_bad_push_does_not_swallow_the_start_up_reconcile_it_cut(world: dict[str, Any], bad: str) -> None:
    """HOLE: a restarted agent's start-up reconcile is there to repair what changed while it was down
    (docs/syncing.md: "drift made while it was down is repaired"). Cut for a push that turns out bad, it never
    happens, though before "pushes first" the start-up run put the record back before the push was
    looked at:
    - refused by the safety gate: the push's run is refused, `reconcile_pending` stays set, and the
      "resume" the scheduler triggers at once is again the push's run (`first`: the head is not
      `state.applied`), refused again - back to back, with no pause, for as long as that commit is
      the head (a rejected report and commit status each time; tests/run/test_agent_resume.py);
    - invalid: validation fails before `planned.first` is set, so the run clears `reconcile_pending`:
      the reconcile it cut is dropped, and the next runs are "unchanged" (the rejected head) until the
      resync.
    Fix: when the push's run is refused or invalid, the resume reconciles the revision the cut run
    was reconciling (`state.applied`, from `source.at`) whole, then clears the flag."""
    tag, primary = world["tag"], world["endpoints"][f"{world['namespace']}/dns-primary-0"]
    applied = _run(world, Memory())  # the agent's last life
    assert applied.outcome == "applied", (applied.failures, applied.message)
    assert records.query(primary, f"www.example-{tag}.org.", "A") == ("198.51.100.80",)
    _out_of_band(world["bind"], f"example-{tag}.org", "www", "203.0.113.9")  # while the agent is down

    memory = Memory()  # restarted: its start-up reconcile, cut by a push that deletes a record
    web = world["files"][WEB]
    push = _PushDuring(world, _without_www(web) if bad == "refused" else web.replace("192.0.2.12", "192.0.2.999"))
    cut = _run(world, memory, yield_to=push)
    assert cut.outcome == "preempted", (cut.outcome, cut.message)

    refused = _run(world, memory)  # the webhook's run
    assert refused.outcome == "rejected" and refused.revision == push.sha, (refused.outcome, refused.message)
    assert bad == "invalid" or any("refusing to delete" in r for r in refused.refusals), refused.refusals

    resumed = [_run(world, memory) for _ in range(2)]  # the "resume" the scheduler triggers, or its next runs
    outcomes = [(r.outcome, (r.revision or "")[:12]) for r in resumed]
    assert records.query(primary, f"www.example-{tag}.org.", "A") == ("198.51.100.80",), (
        f"the drift the cut start-up reconcile was to repair stays; the resumes were {outcomes}")
    assert not memory.reconcile_pending, f"the scheduler resumes forever: {outcomes}"


CLUSTER = "infrastructure/cluster.yaml"


class _Push:
    """A commit of `files` pushed (and its webhook waiting) the first time the run asks."""

    def __init__(self, world: dict[str, Any], files: dict[str, str]) -> None:
        self.world, self.files, self.sha = world, files, ""

    def __call__(self) -> bool:
        if not self.sha:
            self.sha = self.world["remote"].commit("a push", self.files)
            self.world["remote"].push()
        return True


def test_a_stream_of_pushes_does_not_starve_the_reconcile_they_cut(world: dict[str, Any]) -> None:
    """HOLE: the run that resumes a cut reconcile is itself a reconcile of "what was applied cleanly"
    (the push's run saved its revision as applied), so it is given `yield_to` and is cut again by the
    next push; the next push's run again writes only its zones. With pushes landing once per webhook
    interval (a busy repository, or a writer who pushes on purpose) and a whole observe longer than that
    interval (27 s at 100,000 records), the whole revision is never reconciled: a push's Kubernetes
    changes (here: the cluster's allowTransfer, i.e. every instance's named.conf) never reach the
    cluster, no CR status is written, drift is never repaired - while every run reports "applied".
    Fix: a reconcile that was already cut once (`reconcile_pending` at its start) does not yield again
    (or yields at most N times / for at most T seconds), so the whole revision follows in bounded time."""
    tag = world["tag"]
    applied = _run(world, Memory(), policy=safety.Policy())
    assert applied.outcome == "applied", (applied.failures, applied.message)
    web, cluster = world["files"][WEB], world["files"][CLUSTER]
    assert 'allowTransfer: ["10.0.0.0/8"]' in cluster

    memory = Memory()  # restarted; a push that also changes every instance's named.conf lands during start-up
    pushes = [_Push(world, {WEB: web.replace("192.0.2.12", "192.0.2.60"),
                            CLUSTER: cluster.replace('allowTransfer: ["10.0.0.0/8"]',
                                                     'allowTransfer: ["10.0.0.0/8", "192.0.2.0/24"]')})]
    pushes += [_Push(world, {WEB: web.replace("192.0.2.12", f"192.0.2.{61 + i}")}) for i in range(3)]
    runs = [_run(world, memory, yield_to=pushes[0], policy=safety.Policy())]  # the start-up reconcile, cut
    for nxt in pushes[1:]:
        runs.append(_run(world, memory, policy=safety.Policy()))  # the webhook's run: its zones only
        runs.append(_run(world, memory, yield_to=nxt, policy=safety.Policy()))  # the "resume": the next push lands
        nxt()  # it lands all the same, whether the resume asked or not
    runs.append(_run(world, memory, policy=safety.Policy()))  # the last push's run (or the resume, if it was not cut)
    outcomes = [(r.outcome, (r.revision or "")[:8], r.plan is not None and r.plan.kube is not None) for r in runs]
    for server in world["endpoints"].values():  # every push's record is served
        assert records.query(server, f"www.example-{tag}.com.", "A")[-1] == "192.0.2.63"
    core = client.CoreV1Api(world["api"].client)
    conf = core.read_namespaced_config_map("dns-primary-0-config", world["namespace"]).data["named.conf"]
    assert "192.0.2.0/24" in conf, f"three pushes later the first push's named.conf is still not applied: {outcomes}"


def test_the_resume_after_a_partial_push_run_is_the_whole_reconcile(world: dict[str, Any]) -> None:
    """HOLE: the push's run (`first`) came back "partial" (a server did not take the zone in time: a
    pod restarting). The scheduler triggers "resume" at once - but `again` needs `state.outcome ==
    "applied"`, so the "resume" is the push's zones-only run once more, never the whole reconcile: no
    Kubernetes, no statuses, no other zone, for as long as the server lags; and as each such run is
    again partial with `reconcile_pending` set, it is triggered back to back with no back-off (a report,
    a commit status and a failure alert each time), instead of the retry back-off a partial run gets.
    Fix: the run after a cut reconcile's push run is whole whatever that run's outcome (`first` only
    for the first run after the cut), and the scheduler's "resume" respects the retry back-off."""
    tag = world["tag"]
    applied = _run(world, Memory(), policy=safety.Policy())
    assert applied.outcome == "applied", (applied.failures, applied.message)
    memory = Memory()
    push = _PushDuring(world, world["files"][WEB].replace("192.0.2.12", "192.0.2.70"))
    cut = _run(world, memory, yield_to=push, policy=safety.Policy())
    assert cut.outcome == "preempted", (cut.outcome, cut.message)
    world["bind"].secondary.pause()  # the secondary cannot take the push for now
    try:
        first = _run(world, memory, policy=safety.Policy(), verify_wait=1)
        assert first.outcome == "partial", (first.outcome, first.message)
        assert first.plan is not None and first.plan.kube is None  # the push's zones only, as designed
        resume = _run(world, memory, policy=safety.Policy(), verify_wait=1)  # what "resume" runs at once
    finally:
        world["bind"].secondary.resume()
    assert resume.plan is not None and resume.plan.kube is not None, (
        f"the resume is the push's zones-only run again ({resume.outcome}, zones "
        f"{sorted(zp.name for zp in (resume.plan.zones or []))} of example-{tag}): the whole reconcile never runs")
