"""Ready means serving the newest good revision.

The running agent (`bindy-agent run`, a real Git remote, real named) on a one-second schedule:
while the newest commit is one it rejected (invalid, or refused by the safety gate), /readyz is not
200 and bindy_agent_consecutive_failures counts every run (1, 2, 3, ..., never back to 0), until a
good commit applies; an agent that never applied is never ready."""

from __future__ import annotations

import pathlib
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent.clients import endpoints as config
from agent.clients import rfc2136 as records
from tests.support import bind as bind_support
from tests.support import dnsrepo
from tests.support.agentproc import AgentProcess
from tests.support.gitremote import GitRemote
from tests.support.procs import wait_for

BAD = ("apiVersion: bindy.firestoned.io/v1beta1\nkind: ARecord\nmetadata: {name: bad, namespace: dns-system, "
       "labels: {zone: example-com}}\nspec: {name: bad}\n")  # no ipv4Addresses: invalid
SERVICES = "records/example-com/services.yaml"  # with MAIL: most of example.com's managed RRsets: the gate refuses
MAIL = "records/example-com/mail.yaml"


@pytest.fixture
def world(tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair,
          zone_api: Any) -> Iterator[dict[str, Any]]:
    sample, tag = dnsrepo.unique_sample(tmp_path / "sample")
    endpoints = dnsrepo.endpoint_map(tmp_path, bind, zone_api)
    files = {str(p.relative_to(sample)): p.read_text() for p in sample.rglob("*.yaml")}
    agents: list[AgentProcess] = []

    def start() -> AgentProcess:
        agent = AgentProcess(tmp_path, repo=git_remote.url, endpoints=endpoints, extra=["--interval", "1"],
                             until="/healthz")
        agents.append(agent)
        return agent

    yield {"remote": git_remote, "files": files, "tag": tag, "start": start,
           "primary": config.load_endpoints(endpoints)["dns-system/dns-primary-0"]}
    for agent in agents:
        agent.stop()


def _sample(agent: AgentProcess) -> tuple[int, float, float]:
    """(/readyz status, runs so far, consecutive failures), the two numbers from one /metrics answer, read
    first: the agent sets its readiness before it counts a run."""
    text = httpx.get(agent.url + "/metrics", timeout=5).text
    ready = agent.get("/readyz")
    runs = failures = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "bindy_agent_runs_total":
                runs += s.value
            elif s.name == "bindy_agent_consecutive_failures":
                failures = s.value
    return ready, runs, failures


def _watch(agent: AgentProcess, runs_from: float, more: int) -> list[tuple[int, float, float]]:
    """Samples until `more` runs after `runs_from` have been counted (one run a second)."""
    seen: list[tuple[int, float, float]] = []
    deadline = time.monotonic() + 30 + 2 * more
    while time.monotonic() < deadline:
        seen.append(_sample(agent))
        if seen[-1][1] >= runs_from + more:
            return seen
        time.sleep(0.1)
    raise AssertionError(f"fewer than {more} runs in time: {seen[-5:]}")


def _assert_counting(seen: list[tuple[int, float, float]], runs_from: float | None = None) -> None:
    """Not ready, and every run counted as one more failure: from run `runs_from` + 1 on, or (None) from
    the first run that rejected (the runs before it, on the good head, may still be counted)."""
    if runs_from is None:
        first = next(i for i, (_, _, failures) in enumerate(seen) if failures >= 1)
        runs_from, seen = seen[first][1] - seen[first][2], seen[first:]
    after = [(ready, runs - runs_from, failures) for ready, runs, failures in seen if runs > runs_from]
    assert after and all(ready != 200 for ready, _, _ in after), after
    assert all(failures >= 1 for _, _, failures in after), after  # never back to 0
    counts = [failures for _, _, failures in after]
    assert counts == sorted(counts) and counts[-1] >= 3, after
    assert all(failures == n for _, n, failures in after), after  # one more for every run


@pytest.mark.parametrize("bad", ["invalid", "refused"])
def test_a_rejected_head_keeps_the_agent_unready_and_counting_until_a_good_commit(world: dict[str, Any],
                                                                                   bad: str) -> None:
    remote, tag = world["remote"], world["tag"]
    remote.commit("Initial DNS", world["files"])
    remote.push()
    agent = world["start"]()
    wait_for(lambda: _sample(agent)[0] == 200, 30)  # the first run (on start) applied it
    ready, good_runs, failures = _sample(agent)
    assert (ready, failures) == (200, 0) and good_runs >= 1
    www = f"www.example-{tag}.com."
    assert records.query(world["primary"], www, "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.12")

    change = {"records/example-com/bad.yaml": BAD} if bad == "invalid" else {SERVICES: None, MAIL: None}
    remote.commit(f"a {bad} commit", change)
    remote.push()
    seen = _watch(agent, good_runs, 6)
    assert all(failures == 0 for _, runs, failures in seen if runs <= good_runs), seen
    _assert_counting(seen)
    assert records.query(world["primary"], f"sip1.example-{tag}.com.", "A") == ("192.0.2.60",)  # still serving

    web = world["files"]["records/example-com/web.yaml"]
    undo = {"records/example-com/bad.yaml": None} if bad == "invalid" else {SERVICES: world["files"][SERVICES],
                                                                                  MAIL: world["files"][MAIL]}
    remote.commit("a good commit", {**undo, "records/example-com/web.yaml": web.replace(
        "    - 192.0.2.12\n", "    - 192.0.2.42\n")})
    remote.push()
    wait_for(lambda: _sample(agent)[0] == 200, 30)
    assert _sample(agent)[2] == 0
    assert records.query(world["primary"], www, "A") == ("192.0.2.10", "192.0.2.11", "192.0.2.42")


def test_an_agent_that_never_applied_is_never_ready(world: dict[str, Any]) -> None:
    remote = world["remote"]
    remote.commit("Initial DNS, with an invalid record", {**world["files"], "records/example-com/bad.yaml": BAD})
    remote.push()
    agent = world["start"]()
    seen = _watch(agent, 0, 5)  # the first run rejects it; the following ones find the same head
    _assert_counting(seen, 0)
    assert records.query(world["primary"], f"www.example-{world['tag']}.com.", "A") == ()  # answered: nothing
