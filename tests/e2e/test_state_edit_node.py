"""The agent's state ConfigMaps edited by hand into nonsense while the agent runs on the real node
(installed from deploy/, as its own ServiceAccount): its next run quarantines them - a copy aside, a
Warning Event, the metric - reads the world again and serves on; no record is deleted, no pod
restarts, and the state is written afresh. Before, every run of the agent failed from then on."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import install
from tests.support.install import AGENT_NS, Installation
from tests.support.node import Node

FIRST_SYNC_TIMEOUT = int(os.environ.get("BINDY_E2E_FIRST_SYNC", "420"))
AGENT_ENV = {"BINDY_AGENT_INTERVAL": "5", "BINDY_AGENT_JITTER": "1", "BINDY_AGENT_RESYNC_AFTER": "20"}
STATE_LABEL = "bindy.firestoned.io/state"


@pytest.fixture(scope="module")
def installed(node: Node, api: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installation]:
    inst = Installation(node, api, tmp_path_factory.mktemp("state-edit"))
    inst.clean()
    inst.sha = inst.push(install.sample_repo_files(node), "sample-repo")
    inst.install(agent_env=AGENT_ENV)
    try:
        inst.wait_zones(inst.desired(), FIRST_SYNC_TIMEOUT, roles=("primary",))
        yield inst
    finally:
        if not os.environ.get("BINDY_E2E_KEEP"):
            inst.uninstall()


def _maps(inst: Installation) -> dict[str, Any]:
    return {m.metadata.name: m for m in inst.core().list_namespaced_config_map(AGENT_NS).items}


def _metric(inst: Installation, line: str) -> float | None:
    for pod in inst.agent_pods():
        try:
            with urllib.request.urlopen(f"http://{pod.status.pod_ip}:8080/metrics", timeout=5) as resp:
                text = resp.read().decode()
        except OSError:
            continue
        for row in text.splitlines():
            if row.startswith(line + " "):
                value = float(row.split()[-1])
                if value:
                    return value
    return None


def test_state_configmaps_edited_into_nonsense_are_quarantined_and_the_agent_serves_on(
        installed: Installation) -> None:
    inst = installed
    desired = inst.desired()
    inst.wait_served(desired, 180)
    maps = _maps(inst)
    zones = sorted(n for n, m in maps.items() if (m.metadata.labels or {}).get(STATE_LABEL) == "zone")
    assert json.loads(maps["bindy-agent-state"].data["run"])["applied"] == inst.sha and zones
    restarts = {p.metadata.name: sum(c.restart_count for c in p.status.container_statuses or []) for p in
                inst.agent_pods()}

    # `kubectl edit` gone wrong: the run's record and a zone's record no longer have their shape
    install.kubectl(inst.node, "-n", AGENT_NS, "patch", "configmap", "bindy-agent-state", "--type", "merge",
                    "-p", json.dumps({"data": {"run": '["not", "a", "record"]'}}))
    install.kubectl(inst.node, "-n", AGENT_NS, "patch", "configmap", zones[0], "--type", "merge",
                    "-p", json.dumps({"data": {"state": "null"}}))

    def quarantined() -> list[str] | None:
        found = sorted(n for n in _maps(inst) if n.startswith("bindy-agent-state-quarantined-"))
        return found if len(found) == 2 else None

    started = time.monotonic()
    aside = inst.wait(quarantined, 120, "both edited records quarantined")
    print(f"\n[e2e] hand-edited state quarantined in {time.monotonic() - started:.1f} s")
    held = _maps(inst)
    assert sorted(held[n].data.get("run") or held[n].data.get("state") for n in aside) == [
        '["not", "a", "record"]', "null"]
    events = inst.wait(lambda: [e for e in inst.core().list_namespaced_event(AGENT_NS).items
                                if e.reason == "StateQuarantined"] or None, 60, "the StateQuarantined Events")
    assert {e.involved_object.name for e in events} == set(aside) and {e.type for e in events} == {"Warning"}
    assert inst.wait(lambda: _metric(inst, 'bindy_agent_state_quarantined_total{record="run"}'), 60,
                     "the metric") == 1.0

    # the state is written afresh from what the run read, every record still served, nothing deleted
    def rewritten() -> bool:
        now = _maps(inst)
        run = json.loads(now["bindy-agent-state"].data["run"])
        rebuilt = sorted(n for n, m in now.items() if (m.metadata.labels or {}).get(STATE_LABEL) == "zone")
        return isinstance(run, dict) and run.get("applied") == inst.sha and rebuilt == zones

    inst.wait(rewritten, 120, "the state written afresh")
    assert inst.served(desired) == [] and inst.extra(desired) == []
    assert {p.metadata.name: sum(c.restart_count for c in p.status.container_statuses or []) for p in
            inst.agent_pods()} == restarts
