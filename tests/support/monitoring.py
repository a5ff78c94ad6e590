"""What deploy/monitoring/ queries and what the agent's metrics serve: the metric names the dashboard and the
rules query, the rules, the names a /metrics text serves, one sample's value, and promtool (the unit
tests of the alerts and the integration test of a real agent share them)."""

from __future__ import annotations

import json
import re
import shutil
from typing import Any

import prometheus_client
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from agent.run import metrics
from tests.conftest import ROOT

MONITORING = ROOT / "deploy" / "monitoring"


def _samples(m: metrics.Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = prometheus_client.generate_latest(m.registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _value(m: metrics.Metrics, name: str, **labels: str) -> float:
    """The sum of the samples of `name` with these labels (and any others)."""
    return sum(v for (n, have), v in _samples(m).items() if n == name and labels.items() <= dict(have).items())


NAME = re.compile(r"\b((?:bindy_agent|process|python)_[a-z_]+)")


def queried_names() -> set[str]:
    """Every metric name the dashboard and the rules query."""
    exprs = [t["expr"] for p in json.loads((MONITORING / "dashboard.json").read_text())["panels"]
             for t in p["targets"]]
    exprs += [t["query"] for t in json.loads((MONITORING / "dashboard.json").read_text())["templating"]["list"]
              if t["type"] == "query"]
    exprs += [r["expr"] for g in rules()["groups"] for r in g["rules"]]
    return {m.group(1) for e in exprs for m in NAME.finditer(e)}


def rules() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())["spec"]
    return spec


def served_names(text: str) -> set[str]:
    return {s.name for f in text_string_to_metric_families(text) for s in f.samples}


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail("promtool is missing: scripts/install-test-deps installs it (Debian's prometheus package)")
    return found
