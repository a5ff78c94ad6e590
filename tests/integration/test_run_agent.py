"""`bindy-agent run` as a real process: first sync on start, scheduled syncs, signed webhooks,
health/readiness/metrics, JSON logs with run id and revision, clean SIGTERM."""

from __future__ import annotations

import hashlib
import hmac
import json
import pathlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent.clients import endpoints as config
from agent.clients import rfc2136 as records
from tests.conftest import ROOT
from tests.support import bind as bind_support
from tests.support import dnsrepo
from tests.support.gitremote import GitRemote
from tests.support.procs import free_port, wait_for

SECRET = b"s3cret-webhook-0123456789abcdef-0123"  # the agent refuses fewer than 32 characters


@pytest.fixture
def agent(tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair,
          zone_api: Any, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    sample, tag = dnsrepo.unique_sample(tmp_path / "sample")
    files = {str(p.relative_to(sample)): p.read_text() for p in sample.rglob("*.yaml")}
    git_remote.commit("Initial DNS", files)
    git_remote.push()
    endpoints_file = dnsrepo.endpoint_map(tmp_path, bind, zone_api)
    (tmp_path / "webhook").write_bytes(SECRET + b"\n")
    port = free_port()
    interval = getattr(request, "param", 60)
    log_path = tmp_path / "agent.log"
    log_file = open(log_path, "w")  # noqa: SIM115 - closed in teardown
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent", "run", "--repo", git_remote.url, "--endpoints", str(endpoints_file),
         "--state", str(tmp_path / "state.json"), "--cache", str(tmp_path / "cache"), "--interval", str(interval),
         "--jitter", "0", "--listen", f"127.0.0.1:{port}", "--webhook-secret-file", str(tmp_path / "webhook")],
        cwd=ROOT, stderr=log_file, text=True)
    world = {"proc": proc, "log": log_path, "url": f"http://127.0.0.1:{port}", "remote": git_remote, "files": files, "tag": tag,
             "primary": config.load_endpoints(endpoints_file)["dns-system/dns-primary-0"]}
    try:
        wait_for(lambda: _get(world, "/readyz") == 200, 30)
        yield world
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        log_file.close()


def _get(world: dict[str, Any], path: str) -> int:
    try:
        return httpx.get(world["url"] + path, timeout=2).status_code
    except httpx.TransportError:
        return 0


def _runs(world: dict[str, Any]) -> dict[str, float]:
    text = httpx.get(world["url"] + "/metrics", timeout=2).text
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "bindy_agent_runs_total":
                out[sample.labels["outcome"]] = out.get(sample.labels["outcome"], 0) + sample.value  # all triggers
    return out


def _post(world: dict[str, Any], body: bytes, headers: dict[str, str]) -> int:
    return httpx.post(world["url"] + "/hooks/git", content=body, headers=headers, timeout=5).status_code


def test_first_sync_health_metrics_webhook_and_clean_shutdown(agent: dict[str, Any]) -> None:
    tag, primary = agent["tag"], agent["primary"]
    assert records.query(primary, f"www.example-{tag}.com.", "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.12")
    assert _get(agent, "/healthz") == 200
    assert _runs(agent) == {"applied": 1.0}

    body = b'{"ref": "refs/heads/main"}'
    assert _post(agent, body, {"X-Hub-Signature-256": "sha256=" + "0" * 64}) == 401
    assert _post(agent, body, {}) == 401
    time.sleep(1.0)
    assert _runs(agent) == {"applied": 1.0}  # refused calls triggered nothing

    web = "records/example-com/web.yaml"
    agent["remote"].commit("New front end", {web: agent["files"][web].replace("192.0.2.12", "192.0.2.42")})
    agent["remote"].push()
    signature = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    assert _post(agent, body, {"X-Hub-Signature-256": signature}) == 202
    took = wait_for(lambda: records.query(primary, f"www.example-{tag}.com.", "A")
                 == ("192.0.2.10", "192.0.2.11", "192.0.2.42"), 30)
    print(f"webhook to served: {took:.2f} s")
    assert _post(agent, body, {"X-Gitlab-Token": SECRET.decode()}) == 202
    wait_for(lambda: _runs(agent).get("unchanged", 0) >= 1, 30)
    assert _runs(agent)["applied"] == 2.0

    proc = agent["proc"]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    lines = [json.loads(line) for line in agent["log"].read_text().splitlines() if line.startswith("{")]
    syncs = [line for line in lines if line["msg"].startswith("sync ")]
    assert [s["msg"].split(":")[0] for s in syncs] == ["sync applied", "sync applied", "sync unchanged"]
    assert all(s["runId"] and len(s["revision"]) == 40 for s in syncs)
    assert SECRET.decode() not in "\n".join(json.dumps(line) for line in lines)


@pytest.mark.parametrize("agent", [1], indirect=True)
def test_syncs_run_on_the_interval(agent: dict[str, Any]) -> None:
    wait_for(lambda: _runs(agent).get("unchanged", 0) >= 2, 30)
