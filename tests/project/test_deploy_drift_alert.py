"""The shipped drift alert (deploy/monitoring/prometheusrule.yaml, BindyAgentDriftRepairedRepeatedly)
under `promtool test rules`, on the series the agent's own metrics make in three stories, each run's
plan made by the real plan builder: a deploy (the first commit applied while the servers start, then
the runs that give the new pods their zones), a bind9 pod restart (a replaced pod given its zones),
and a hand edit (an RRset changed by nsupdate on a server, written back). Only the last fires."""

from __future__ import annotations

import pathlib
import subprocess
from collections.abc import Callable
from typing import Any

import yaml

from agent.model.observed import ZoneObserved
from agent.plan import changes
from agent.run import metrics, orchestrator
from tests.support.monitoring import _value, promtool, rules
from tests.support.podworld import POD_A, POD_B, PRIMARY, SECONDARY, _desired, _world, _zone_changes

REVISION = "c" * 40
MINUTES = 60  # samples, one a minute
ALERT = "BindyAgentDriftRepairedRepeatedly"
Run = tuple[int, str | None, list[changes.Change]]  # (minute, the revision applied before it, its plan)


def _deploy(desired: Any, name: str) -> list[Run]:
    waiting = {PRIMARY: "waiting for dns-primary-0 to start", SECONDARY: "waiting for dns-secondary-0 to start"}
    first = _zone_changes(desired, _world(desired, starting=waiting)[1], name)
    zone = desired.zones[0]
    filled = _zone_changes(desired, _world(desired, starting={}, fresh=frozenset({POD_A, POD_B}), placed=True, seen={
        POD_A: ZoneObserved(None), POD_B: ZoneObserved(None)})[1], name)
    assert filled and {c.target.layer for c in filled} >= {"zones", "records"}
    assert zone is not None
    return [(1, None, first), (3, REVISION, filled), (4, REVISION, [])]


def _pod_restart(desired: Any, name: str) -> list[Run]:
    served = ZoneObserved(dict(desired.zones[0].rrsets), serial=7)
    replaced = _zone_changes(desired, _world(desired, starting={}, fresh=frozenset({POD_B}), placed=True, seen={
        POD_A: served, POD_B: ZoneObserved(None)})[1], name)
    assert replaced
    return [(10, REVISION, replaced), (11, REVISION, [])]


def _hand_edit(desired: Any, name: str) -> list[Run]:
    zone = desired.zones[0]
    edited = dict(zone.rrsets)
    edited.pop(next(k for k in edited if k[1] == "A" and k[0].startswith("www")))  # nsupdate: delete www A
    repaired = _zone_changes(desired, _world(desired, starting={}, placed=True, seen={
        POD_A: ZoneObserved(edited, serial=8), POD_B: ZoneObserved(dict(zone.rrsets), serial=7)})[1], name)
    assert repaired
    return [(20, REVISION, repaired)]


def _series(story: list[Run]) -> str:
    """bindy_agent_drift_repaired_total (every layer) one sample a minute, as the agent's /metrics says."""
    m = metrics.Metrics()
    try:
        values, runs = [], dict((minute, (before, plan)) for minute, before, plan in story)
        for minute in range(MINUTES):
            if minute in runs:
                before, plan = runs[minute]
                run = orchestrator.RunOutcome("r", REVISION, "applied", plan=changes.Plan(plan))
                m.record(run, 1.0, {}, trigger="pods", applied_before=before)
            values.append(sum(_value(m, "bindy_agent_drift_repaired_total", layer=layer)
                              for layer in ("kubernetes", "zones", "records")))
    finally:
        m.stop_listening()
    return " ".join(str(int(v)) for v in values)


def _promtool(tmp_path: pathlib.Path, stories: dict[str, Callable[[Any, str], list[Run]]]) -> str:
    desired = _desired(tmp_path)
    name = desired.zones[0].name
    rule = rules()
    for group in rule["groups"]:
        for r in group["rules"]:
            r.pop("annotations", None)  # their text holds the value; the test is about when it fires
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule))
    tests = []
    for story, make in stories.items():
        series = _series(make(desired, name))
        fires = story == "hand edit"
        tests.append({"interval": "1m", "name": story,
                      "input_series": [{"series": 'bindy_agent_drift_repaired_total{layer="records",'
                                                  'namespace="bindy-agent"}', "values": series}],
                      "alert_rule_test": [{"eval_time": "50m", "alertname": ALERT, "exp_alerts": [
                          {"exp_labels": {"namespace": "bindy-agent", "severity": "info"}}] if fires else []}]})
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m",
                                                         "tests": tests}))
    done = subprocess.run([promtool(), "test", "rules", str(tmp_path / "tests.yaml")], capture_output=True,
                          text=True, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    return str(tests)


def test_a_deploy_and_a_pod_restart_do_not_fire_the_drift_alert_and_a_hand_edit_does(tmp_path: pathlib.Path) -> None:
    shown = _promtool(tmp_path, {"deploy": _deploy, "pod restart": _pod_restart, "hand edit": _hand_edit})
    assert "'values': '0 0 0" in shown  # the deploy's series stays flat (and the hand edit's rises: it fires)
