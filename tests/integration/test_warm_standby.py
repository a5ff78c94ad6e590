"""Issue 28, a warm standby: the replica that does not hold the Lease follows the source and the world
read-only, so that taking over costs what a push costs - and what the old leader wrote after the
standby last looked is found by the zones' serials, not trusted away.

Two `bindy-agent run` replicas (a real API server for the Lease, real named, one shared state). The
standby follows once (at its start); the leader then applies a change the standby never saw; the leader
is killed; a push that reverts that change is served by the new leader, which transferred only the
zone whose serial moved - not every zone, as a cold start does."""

from __future__ import annotations

import pathlib
import signal
from typing import Any

from agent.clients import endpoints as config
from agent.clients import rfc2136 as records
from tests.support import bind as bind_support
from tests.support import dnsrepo
from tests.support.agentproc import AgentProcess
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster
from tests.support.procs import wait_for

SECRET = b"9c1e7b5d2048e6c1a9f3b7d5e2c8aa3f"
WWW_OLD, WWW_NEW = "    - 192.0.2.12\n", "    - 192.0.2.42\n"


def test_a_standby_takes_over_without_a_full_reconcile_and_misses_nothing_the_old_leader_wrote(
        tmp_path: pathlib.Path, git_remote: GitRemote, kube: KubeCluster, kube_client: Any, namespace: str,
        bind: bind_support.BindPair, zone_api: Any) -> None:
    sample, tag = dnsrepo.unique_sample(tmp_path / "sample", namespace)
    files = {str(p.relative_to(sample)): p.read_text() for p in sample.rglob("*.yaml")}
    zones = sum(text.count("kind: DNSZone") for text in files.values())
    endpoints = dnsrepo.endpoint_map(tmp_path, bind, zone_api, namespace)
    primary = config.load_endpoints(endpoints)[f"{namespace}/dns-primary-0"]
    www = f"www.example-{tag}.com."
    (tmp_path / "webhook").write_bytes(SECRET + b"\n")
    git_remote.commit("Initial DNS", files)
    git_remote.push()

    def replica(name: str) -> AgentProcess:
        return AgentProcess(tmp_path, repo=git_remote.url, endpoints=endpoints, secret_file=tmp_path / "webhook",
                            state=tmp_path / "state", env={"POD_NAME": f"agent-{name}"},
                            extra=["--kubeconfig", str(kube.kubeconfig), "--agent-namespace", namespace,
                                   "--allowed-namespaces", namespace, "--lease-duration", "3"])

    leader = replica("a")  # alone: it takes the Lease and applies the revision
    standby = replica("b")
    try:
        assert leader.metric("bindy_agent_leader") == 1 and standby.metric("bindy_agent_leader") == 0
        wait_for(lambda: standby.metric("bindy_agent_standby_follows_total", result="ok") >= 1, 60)
        assert standby.metric("bindy_agent_runs_total") == 0  # following is not a run: it wrote nothing
        followed_axfr = standby.metric("bindy_agent_external_calls_total", target="axfr")
        assert followed_axfr >= zones  # its one follow read every zone (it had seen none)

        # the leader applies a change the standby never sees (it follows once an hour here)
        web = files["records/example-com/web.yaml"]
        git_remote.commit("www moves", {"records/example-com/web.yaml": web.replace(WWW_OLD, WWW_NEW)})
        git_remote.push()
        assert leader.poke(SECRET) == 202
        wait_for(lambda: "192.0.2.42" in records.query(primary, www, "A"), 30)

        leader.proc.send_signal(signal.SIGKILL)
        leader.proc.wait(10)
        wait_for(lambda: standby.metric("bindy_agent_leader") == 1, 20)

        # a push reverting it: the standby's memory says www is what the push wants, the server does not
        git_remote.commit("www back", {"records/example-com/web.yaml": web})
        git_remote.push()
        runs = standby.metric("bindy_agent_runs_total")
        assert standby.poke(SECRET) == 202
        wait_for(lambda: standby.metric("bindy_agent_runs_total") > runs
                 and records.query(primary, www, "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.12"), 30)
        transferred = standby.metric("bindy_agent_external_calls_total", target="axfr") - followed_axfr
        print(f"\ntaking over and serving a push: {transferred:.0f} zone transfers ({zones} zones; a cold "
              f"start transfers them all)")
        assert 1 <= transferred < zones  # the zone the old leader wrote to, not every zone
    finally:
        leader.stop()
        standby.stop()
