"""Operations users expect: suspend and resume the agent, detect drift without writing, and one
status object that shows the agent's last revision and outcome - in one run, in `bindy-agent run`
as a real process (its /metrics), and in `bindy-agent sync` with a --state directory."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import dns.message
import dns.query
import dns.rcode
import dns.rdataset
import dns.tsigkeyring
import dns.update
import httpx
import pytest
from kubernetes import client

from agent.clients import dnsquery
from agent.clients import endpoints as config
from agent.clients import rfc2136 as records
from agent.clients.kubeapi import KubeApi
from agent.clients.statestore import ConfigMapStore
from agent.run import orchestrator
from agent.sources.git import GitSource
from tests.conftest import ROOT
from tests.support import agentrun, dnsrepo
from tests.support import bind as bind_support
from tests.support.agentproc import AgentProcess
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster
from tests.support.procs import wait_for

WEB = "records/example-com/web.yaml"
SECRET = b"a3f9c1e7b5d2048e6c1a9f3b7d5e2c8a"  # a webhook secret: 32 characters, the least the agent takes
ORIGINAL = ("192.0.2.10", "192.0.2.11", "192.0.2.12")  # www.example.com A in sample-repo


def test_suspend_detect_and_the_status_object(tmp_path: pathlib.Path, git_remote: GitRemote, kube: KubeCluster,
                                              namespace: str, bind: bind_support.BindPair, zone_api: Any) -> None:
    sample, tag = dnsrepo.unique_sample(tmp_path / "sample", namespace)
    files = {str(p.relative_to(sample)): p.read_text() for p in sample.rglob("*.yaml")}
    endpoints = config.load_endpoints(dnsrepo.endpoint_map(tmp_path, bind, zone_api, namespace))
    primary = endpoints[f"{namespace}/dns-primary-0"]

    def run(**kwargs: Any) -> Any:
        api = KubeApi.from_kubeconfig(str(kube.kubeconfig))
        return api, agentrun.sync_git(GitSource(git_remote.url, tmp_path / "cache"),
                                      store=ConfigMapStore(api, namespace), kube_api=api, endpoints=endpoints,
                                      agent_namespace=namespace, **kwargs)

    sha = git_remote.commit("Initial DNS", files)
    git_remote.push()
    assert run()[1].outcome == "applied"
    core = client.CoreV1Api(kube.api_client())
    shown = core.read_namespaced_config_map("bindy-agent-state", namespace).data
    assert (shown["revision"], shown["outcome"], shown["message"]) == (sha, "applied", f"applied {sha[:12]}")

    def cli(verb: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "agent", verb, "--kubeconfig", str(kube.kubeconfig),
                               "--agent-namespace", namespace], capture_output=True, text=True, cwd=ROOT)

    assert cli("suspend").returncode == 0
    git_remote.commit("New front end", {WEB: files[WEB].replace("192.0.2.12", "192.0.2.52")})
    git_remote.push()
    api, suspended = run()
    assert (suspended.outcome, api.write_count) == ("suspended", 0)
    assert records.query(primary, f"www.example-{tag}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.12")
    assert cli("resume").returncode == 0

    # detect mode: the new commit is drift; nothing is written but the agent's own status
    api, detected = run(mode="detect")
    assert detected.outcome == "drift" and detected.message.startswith("drift: 0 to create, 2 to update")
    assert set(api.writes) <= {"PATCH"} and api.write_count == 1
    assert records.query(primary, f"www.example-{tag}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.12")
    assert core.read_namespaced_config_map("bindy-agent-state", namespace).data["outcome"] == "drift"

    assert run()[1].outcome == "applied"
    assert run(mode="detect")[1].outcome == "in-sync"
    assert records.query(primary, f"www.example-{tag}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.52")


@pytest.fixture
def world(tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair,
          zone_api: Any) -> dict[str, Any]:
    """sample-repo (zones of its own) pushed to a Git remote, the endpoint map of the shared named
    pair, and a webhook secret file."""
    sample, tag = dnsrepo.unique_sample(tmp_path / "sample")
    git_remote.commit("Initial DNS", {str(p.relative_to(sample)): p.read_text() for p in sample.rglob("*.yaml")})
    git_remote.push()
    endpoints = dnsrepo.endpoint_map(tmp_path, bind, zone_api)
    (tmp_path / "webhook").write_bytes(SECRET + b"\n")
    return {"work": tmp_path, "sample": sample, "zone": f"example-{tag}.com.", "www": f"www.example-{tag}.com.",
            "repo": git_remote.url, "endpoints": endpoints, "secret": tmp_path / "webhook", "bind": bind,
            "primary": config.load_endpoints(endpoints)["dns-system/dns-primary-0"]}


def _agent(world: dict[str, Any], *extra: str, **kwargs: Any) -> AgentProcess:
    return AgentProcess(world["work"], repo=world["repo"], endpoints=world["endpoints"], secret_file=world["secret"],
                        extra=["--webhook-min-interval", "0", *extra], **kwargs)


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent", *argv], capture_output=True, text=True, cwd=ROOT)


def _runs(agent: AgentProcess, outcome: str) -> float:
    return agent.metric("bindy_agent_runs_total", outcome=outcome)


def _drift(agent: AgentProcess) -> dict[str, float]:
    """bindy_agent_drift_changes by layer, as /metrics shows it ({} before any detection)."""
    layers = ("kubernetes", "zones", "records")
    return {layer: agent.metric("bindy_agent_drift_changes", layer=layer) for layer in layers
            if f'bindy_agent_drift_changes{{layer="{layer}"}}' in httpx.get(agent.url + "/metrics", timeout=5).text}


def _by_hand(world: dict[str, Any], rdataset: dns.rdataset.Rdataset) -> int:
    """A person replaces www's A RRset on the primary with nsupdate; returns the zone's new serial."""
    bind: bind_support.BindPair = world["bind"]
    keyring = dns.tsigkeyring.from_text({bind_support.TSIG_NAME: ("hmac-sha256", bind.keys.tsig)})
    update = dns.update.UpdateMessage(world["zone"], keyring=keyring, keyalgorithm="hmac-sha256")
    update.replace(world["www"], rdataset)
    reply = dns.query.tcp(update, bind.primary.address, port=bind.primary.port, timeout=5)
    assert reply.rcode() == dns.rcode.NOERROR
    return _serial(world)


def _serial(world: dict[str, Any]) -> int:
    serial = dnsquery.serials(world["primary"], [world["zone"]])[world["zone"]]
    assert serial is not None
    return serial


def _www(world: dict[str, Any]) -> dns.rdataset.Rdataset:
    bind: bind_support.BindPair = world["bind"]
    reply = dns.query.tcp(dns.message.make_query(world["www"], "A"), bind.primary.address, port=bind.primary.port,
                          timeout=5)
    return reply.answer[0].to_rdataset()


def test_detect_mode_shows_a_hand_edit_on_metrics_and_in_status_and_writes_nothing(world: dict[str, Any]) -> None:
    state = world["work"] / "state"
    applier = _agent(world, state=state)  # the world made as Git says, once
    assert _runs(applier, "applied") == 1
    assert applier.stop() == 0
    assert records.query(world["primary"], world["www"], "A") == ORIGINAL

    agent = _agent(world, "--mode", "detect", state=state)
    wait_for(lambda: _runs(agent, "in-sync") == 1)
    assert _drift(agent) == {"kubernetes": 0, "zones": 0, "records": 0}

    original = _www(world)
    edited = _by_hand(world, dns.rdataset.from_text("IN", "A", 300, "203.0.113.9"))
    assert agent.poke(SECRET) == 202
    wait_for(lambda: _runs(agent, "drift") == 1)
    assert _drift(agent) == {"kubernetes": 0, "zones": 0, "records": 1}  # one RRset differs from Git
    run = json.loads((state / "run.json").read_text())
    assert (run["outcome"], run["message"]) == ("drift", "drift: 0 to create, 1 to update, 0 to delete, 0 conflicts "
                                                "(detect mode: nothing written)")
    # the hand edit stands: the agent sent no UPDATE (the serial did not move) and repaired nothing
    assert records.query(world["primary"], world["www"], "A") == ("203.0.113.9",)
    assert _serial(world) == edited

    restored = _by_hand(world, original)  # the person undoes it: the world matches Git again
    assert agent.poke(SECRET) == 202
    wait_for(lambda: _runs(agent, "in-sync") == 2)
    assert _drift(agent) == {"kubernetes": 0, "zones": 0, "records": 0}
    assert json.loads((state / "run.json").read_text())["outcome"] == "in-sync"
    assert _serial(world) == restored
    assert _runs(agent, "applied") == 0
    assert agent.stop() == 0


@pytest.mark.parametrize("how", ["config file", "environment"])
def test_the_suspend_setting_stops_a_running_agent_before_it_reads_anything(world: dict[str, Any], how: str) -> None:
    (world["work"] / "agent.yaml").write_text("suspend: true\n")
    if how == "config file":
        agent = _agent(world, "--config", str(world["work"] / "agent.yaml"), until="/healthz")
    else:
        agent = _agent(world, env={"BINDY_AGENT_SUSPEND": "true"}, until="/healthz")
    wait_for(lambda: _runs(agent, "suspended") == 1)
    assert agent.metric("bindy_agent_suspended") == 1
    assert agent.poke(SECRET) == 202
    wait_for(lambda: _runs(agent, "suspended") == 2)  # every run, not only the first
    assert records.query(world["primary"], world["www"], "A") == ()  # the zone was never made
    assert not agent.state.exists()  # not even the agent's own state
    assert agent.stop() == 0
    said = [json.loads(line)["msg"] for line in agent.log_lines() if line.startswith("{")]
    assert said.count("sync suspended: " + orchestrator.SUSPENDED_BY_SETTING) == 2, said
    assert "set it to false to continue" in orchestrator.SUSPENDED_BY_SETTING  # not `resume`, which cannot help


def test_suspend_and_resume_a_running_agent_through_its_state_directory(world: dict[str, Any]) -> None:
    state = world["work"] / "state"
    done = _cli("suspend", "--state", str(state))
    assert (done.returncode, done.stderr) == (0, f"suspended: {state}; runs read and write nothing until "
                                                 "`bindy-agent resume`\n")
    agent = _agent(world, state=state, until="/healthz")
    wait_for(lambda: _runs(agent, "suspended") == 1)
    assert agent.metric("bindy_agent_suspended") == 1
    assert agent.get("/readyz") != 200  # nothing was ever applied
    assert records.query(world["primary"], world["www"], "A") == ()

    done = _cli("resume", "--state", str(state))
    assert (done.returncode, done.stderr) == (0, f"resumed: {state}\n")
    assert agent.poke(SECRET) == 202
    wait_for(lambda: _runs(agent, "applied") == 1)
    assert agent.metric("bindy_agent_suspended") == 0
    assert records.query(world["primary"], world["www"], "A") == ORIGINAL
    assert agent.get("/readyz") == 200
    assert agent.stop() == 0
    said = [json.loads(line)["msg"] for line in agent.log_lines() if line.startswith("{")]
    assert [m.split(":")[0] for m in said if m.startswith("sync ")] == ["sync suspended", "sync applied"]
    assert "`bindy-agent resume` to continue" in said[[m.startswith("sync ") for m in said].index(True)]


def test_sync_of_a_suspended_state_directory_does_nothing_and_says_so(world: dict[str, Any]) -> None:
    state = world["work"] / "state"
    sync = ("sync", str(world["sample"]), "--state", str(state), "--endpoints", str(world["endpoints"]))
    assert _cli("suspend", "--state", str(state)).returncode == 0

    suspended = _cli(*sync)
    assert (suspended.returncode, suspended.stdout) == (0, "")  # no plan: nothing was read
    assert suspended.stderr.startswith("run ") and suspended.stderr.endswith(f": {orchestrator.SUSPENDED_BY_MARK}\n")
    assert "rejected" not in suspended.stderr
    assert records.query(world["primary"], world["www"], "A") == ()
    assert not (state / "run.json").exists()

    assert _cli("resume", "--state", str(state)).returncode == 0
    resumed = _cli(*sync)
    assert resumed.returncode == 0, resumed.stderr
    assert f"  + {world['zone']} on dns-system/dns-primary-0 (primary)\n" in resumed.stdout
    assert ": applied; DNS: 21 RRset changes in 3 UPDATE messages" in resumed.stderr
    assert records.query(world["primary"], world["www"], "A") == ORIGINAL
    assert json.loads((state / "run.json").read_text())["outcome"] == "applied"
