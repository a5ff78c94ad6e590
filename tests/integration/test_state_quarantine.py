"""The agent's state ConfigMaps edited by hand into nonsense, on a real API server with real named: the
next sync quarantines them (a copy aside, a Warning Event), reads the world again and applies; every
record is still served, nothing is deleted, and the state is written afresh. Before, every run failed."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from kubernetes import client

from agent.clients import endpoints as config
from agent.clients import statestore
from agent.clients.kubeapi import KubeApi
from agent.sources.git import GitSource
from tests.support import agentrun, dnsrepo, dnsworld
from tests.support import bind as bind_support
from tests.support.gitremote import GitRemote
from tests.support.kube import KubeCluster

pytestmark = pytest.mark.integration


def test_state_configmaps_edited_into_nonsense_are_quarantined_and_the_sync_serves_on(
        tmp_path: pathlib.Path, git_remote: GitRemote, kube: KubeCluster, namespace: str,
        bind: bind_support.BindPair, zone_api: Any) -> None:
    sample, tag = dnsrepo.unique_sample(tmp_path / "sample", namespace)
    world = dnsworld.Dns(bind, zone_api, dnsrepo.endpoint_map(tmp_path, bind, zone_api, namespace))
    endpoints = config.load_endpoints(world.endpoints)
    zones = [f"example-{tag}.{tld}" for tld in ("com", "org", "net")]
    sha = git_remote.commit("Initial DNS", {str(p.relative_to(sample)): p.read_text() for p in sample.rglob("*.yaml")})
    git_remote.push()

    def sync() -> Any:
        api = KubeApi.from_kubeconfig(str(kube.kubeconfig))
        return agentrun.sync_git(GitSource(git_remote.url, tmp_path / "cache"), store=statestore.ConfigMapStore(
            api, namespace), kube_api=api, endpoints=endpoints, agent_namespace=namespace)

    assert sync().outcome == "applied"
    served = {zone: world.axfr(bind.primary, zone) for zone in zones}
    core = client.CoreV1Api(kube.api_client())
    state = {m.metadata.name: m for m in core.list_namespaced_config_map(
        namespace, label_selector=f"{statestore.STATE_LABEL}").items}
    zone_maps = [n for n, m in state.items() if m.metadata.labels[statestore.STATE_LABEL] == "zone"]
    assert len(zone_maps) == 3 and "bindy-agent-state" in state

    # `kubectl edit`: the run's record becomes a list, a zone's record loses its shape, another is not JSON
    core.patch_namespaced_config_map("bindy-agent-state", namespace, {"data": {"run": "[]"}})
    core.patch_namespaced_config_map(zone_maps[0], namespace, {"data": {"state": '{"zone": 5}'}})
    core.patch_namespaced_config_map(zone_maps[1], namespace, {"data": {"state": "not json"}})

    run = sync()
    assert run.outcome == "applied", (run.outcome, run.message)
    assert {zone: world.axfr(bind.primary, zone) for zone in zones} == served  # nothing deleted, nothing changed
    after = {m.metadata.name: m for m in core.list_namespaced_config_map(namespace).items}
    aside = sorted(n for n in after if n.startswith("bindy-agent-state-quarantined-"))
    assert sorted(after[n].data.get("run") or after[n].data.get("state") for n in aside) == [
        "[]", "not json", '{"zone": 5}']
    assert all(after[n].metadata.labels[statestore.STATE_LABEL] == "quarantined" for n in aside)
    assert json.loads(after["bindy-agent-state"].data["run"])["applied"] == sha  # written afresh by the run
    rebuilt = [n for n, m in after.items() if (m.metadata.labels or {}).get(statestore.STATE_LABEL) == "zone"]
    assert sorted(rebuilt) == sorted(zone_maps)  # the zones' records made again from what the run read
    events = [e for e in core.list_namespaced_event(namespace).items if e.reason == "StateQuarantined"]
    assert sorted(e.involved_object.name for e in events) == aside and all(e.type == "Warning" for e in events)
    assert sync().outcome == "unchanged"  # and it stays readable
