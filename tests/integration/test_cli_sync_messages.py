"""What `bindy-agent sync` tells a person when part of the world cannot be reached, and its progress
on a terminal, against real named and the zone API server."""

from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.support import bind as bind_support
from tests.support import dnsrepo, procs, tty


@pytest.fixture
def sample(tmp_path: pathlib.Path, bind: bind_support.BindPair, zone_api: Any) -> dict[str, Any]:
    root, tag = dnsrepo.unique_sample(tmp_path / "repo")
    return {"root": root, "endpoints": dnsrepo.endpoint_map(tmp_path, bind, zone_api), "state": tmp_path / "state",
            "tmp": tmp_path}


def _sync(sample: dict[str, Any], endpoints: pathlib.Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent", "sync", str(sample["root"]), "--endpoints",
                           str(endpoints or sample["endpoints"]), "--state", str(sample["state"])],
                          capture_output=True, text=True, cwd=ROOT)


def _broken(sample: dict[str, Any], field: str) -> pathlib.Path:
    """The endpoint map with every `field` ("dns" or "api") pointing at a port nobody listens on."""
    doc = yaml.safe_load(sample["endpoints"].read_text())
    for entry in doc["instances"].values():
        host = entry[field].rsplit(":", 1)[0]
        entry[field] = f"{host}:{procs.free_port()}"
    path = sample["tmp"] / f"endpoints-no-{field}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_with_the_zone_api_down_sync_says_what_failed_and_never_that_the_world_matches(
        sample: dict[str, Any]) -> None:
    down = _sync(sample, _broken(sample, "api"))
    assert down.returncode == 1, down.stderr
    assert "the world matches" not in down.stdout
    assert "Plan: 27 to create" in down.stdout
    assert "failed: example-" in down.stderr and "cannot reach the zone API" in down.stderr
    assert ": partial (3 failures and conflicts above); DNS: 0 RRset changes" in down.stderr

    assert _sync(sample).returncode == 0  # the API is back: everything is created
    # nothing left to do, so the zone API is not needed: that the world matches is true, and said
    idle = _sync(sample, _broken(sample, "api"))
    assert (idle.returncode, idle.stdout.splitlines()[-1]) == (0, "No changes: the world matches the revision.")


def test_with_dns_down_nothing_is_planned_and_the_plan_says_why(sample: dict[str, Any]) -> None:
    assert _sync(sample).returncode == 0
    down = _sync(sample, _broken(sample, "dns"))
    assert down.returncode == 1
    assert "the world matches" not in down.stdout
    assert "Not observed (3), so nothing is planned there:" in down.stdout
    assert "  ? example-" in down.stdout and "AXFR of example-" in down.stdout
    assert down.stdout.endswith("No changes planned, but 3 zones could not be observed on their servers (above): "
                                "the world may still differ from the revision.\n")
    assert ": partial (3 failures and conflicts above)" in down.stderr


def test_sync_shows_its_progress_on_a_terminal_only(sample: dict[str, Any]) -> None:
    argv = [sys.executable, "-m", "agent", "sync", str(sample["root"]), "--endpoints", str(sample["endpoints"]),
            "--state", str(sample["state"])]
    seen = tty.run(argv, cwd=ROOT)
    assert seen.returncode == 0, seen.terminal
    for count in ("loaded 9/9 files", "observed 3/3 zones", "applied 3/3 zones"):
        assert count in seen.terminal, seen.terminal
    assert "applied" not in seen.stdout.split("Plan:")[0]  # the plan on stdout carries no progress
    piped = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    assert piped.returncode == 0
    assert "observed" not in piped.stderr and "\x1b[" not in piped.stderr
