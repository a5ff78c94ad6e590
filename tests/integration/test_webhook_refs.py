"""Webhooks start runs for the followed branch only, whatever forge sends them: `bindy-agent run` as a
real process, a real Git remote and the real named pair. Each forge's push payload (GitHub, GitLab,
Gitea, a generic one) for a notes ref, a tag and another branch is answered 202 "ignored: ref X is
not followed" and starts no run; the same forge's push of the branch starts one. A Git server that
sends a delivery for every ref it receives (as the forge in a real install did) sends one for the
agent's own report push too: that one starts nothing."""

from __future__ import annotations

import hashlib
import hmac
import json
import pathlib
import stat
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support import bind as bind_support
from tests.support import dnsrepo
from tests.support.agentproc import AgentProcess
from tests.support.gitremote import GitRemote
from tests.support.procs import wait_for

SECRET = b"7c1e0f9a2b4d6e8f0a1c3e5f7b9d1f3a5c7e9b0d2f4a6c8e"
OTHER_REFS = ("refs/notes/bindy-agent", "refs/notes/bindy-agent-full", "refs/tags/v1.0", "refs/heads/feature")


def _github(ref: str, after: str) -> tuple[bytes, dict[str, str]]:
    body = json.dumps({"ref": ref, "before": "0" * 40, "after": after, "repository": {"full_name": "dns/zones"},
                       "pusher": {"name": "ada"}}).encode()
    return body, {"X-GitHub-Event": "push", "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
                  "X-Hub-Signature-256": "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()}


def _gitlab(ref: str, after: str) -> tuple[bytes, dict[str, str]]:
    tag = ref.startswith("refs/tags/")
    body = json.dumps({"object_kind": "tag_push" if tag else "push", "event_name": "tag_push" if tag else "push",
                       "ref": ref, "before": "0" * 40, "after": after, "project": {"path_with_namespace": "dns/zones"},
                       "commits": []}).encode()
    return body, {"X-Gitlab-Event": "Tag Push Hook" if tag else "Push Hook", "X-Gitlab-Token": SECRET.decode()}


def _gitea(ref: str, after: str) -> tuple[bytes, dict[str, str]]:
    body = json.dumps({"ref": ref, "before": "0" * 40, "after": after, "repository": {"full_name": "dns/zones"},
                       "pusher": {"login": "ada"}}).encode()
    signature = hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    return body, {"X-Gitea-Event": "push", "X-Gitea-Signature": signature, "X-GitHub-Event": "push",
                  "X-Gogs-Event": "push"}


def _generic(ref: str, after: str) -> tuple[bytes, dict[str, str]]:
    body = json.dumps({"ref": ref, "after": after}).encode()
    return body, {"X-Signature-256": "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()}


FORGES: dict[str, Callable[[str, str], tuple[bytes, dict[str, str]]]] = {
    "github": _github, "gitlab": _gitlab, "gitea": _gitea, "generic": _generic}


@pytest.fixture
def world(tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any) -> dict[str, Any]:
    sample, tag = dnsrepo.unique_sample(tmp_path / "sample")
    files = {str(p.relative_to(sample)): p.read_text() for p in sample.rglob("*.yaml")}
    git_remote.commit("Initial DNS", files)
    git_remote.push()
    (tmp_path / "webhook").write_bytes(SECRET + b"\n")
    return {"work": tmp_path, "remote": git_remote, "tag": tag, "secret": tmp_path / "webhook",
            "endpoints": dnsrepo.endpoint_map(tmp_path, bind, zone_api)}


def _deliver(agent: AgentProcess, forge: str, ref: str, after: str = "1" * 40) -> httpx.Response:
    body, headers = FORGES[forge](ref, after)
    return httpx.post(agent.url + "/hooks/git", content=body, headers={**headers, "Content-Type": "application/json"},
                      timeout=5)


def _runs(agent: AgentProcess) -> float:
    return agent.metric("bindy_agent_runs_total")


def _record(world: dict[str, Any], name: str) -> dict[str, str]:
    return {f"records/{name}.yaml": f"""
        apiVersion: bindy.firestoned.io/v1beta1
        kind: ARecord
        metadata: {{name: {name}, namespace: dns-system, labels: {{zone: example-com}}}}
        spec: {{name: {name}, ipv4Addresses: ["192.0.2.77"]}}
        """}


@pytest.mark.parametrize("forge", sorted(FORGES))
def test_a_push_of_another_ref_starts_no_run_and_a_push_of_the_branch_does(world: dict[str, Any], forge: str) -> None:
    agent = AgentProcess(world["work"], repo=world["remote"].url, endpoints=world["endpoints"],
                         secret_file=world["secret"])
    try:
        wait_for(lambda: _runs(agent) >= 1, 30)  # the start-up run
        wait_for(lambda: "run ended" in agent.log.read_text() or "sync applied" in agent.log.read_text(), 30)
        runs = _runs(agent)
        for ref in OTHER_REFS:
            reply = _deliver(agent, forge, ref)
            assert reply.status_code == 202, (ref, reply.text)
            assert reply.text.startswith(f"ignored: ref {ref} is not followed"), reply.text
            assert "refs/heads/main" in reply.text, reply.text
        assert agent.metric("bindy_agent_webhook_deliveries_total", result="ignored") == len(OTHER_REFS)
        assert agent.metric("bindy_agent_webhook_deliveries_total", result="accepted") == 0
        time.sleep(2)  # a run would have started at once (the webhook throttle lets the first through)
        assert _runs(agent) == runs, "a delivery for a ref that is not followed started a run"

        sha = world["remote"].commit("a record", _record(world, f"hook-{forge}"))
        world["remote"].push()
        reply = _deliver(agent, forge, "refs/heads/main", sha)
        assert (reply.status_code, reply.text) == (202, "sync requested\n")
        wait_for(lambda: _runs(agent) > runs, 30)
        assert agent.metric("bindy_agent_webhook_deliveries_total", result="accepted") == 1
    finally:
        assert agent.stop() == 0
    assert "Traceback" not in agent.log.read_text()


def test_a_github_ping_is_answered_and_starts_no_run(world: dict[str, Any]) -> None:
    agent = AgentProcess(world["work"], repo=world["remote"].url, endpoints=world["endpoints"],
                         secret_file=world["secret"])
    try:
        wait_for(lambda: _runs(agent) >= 1, 30)
        runs = _runs(agent)
        body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1}).encode()
        reply = httpx.post(agent.url + "/hooks/git", content=body, timeout=5, headers={
            "X-GitHub-Event": "ping", "X-Hub-Signature-256": "sha256=" + hmac.new(SECRET, body,
                                                                                  hashlib.sha256).hexdigest()})
        assert reply.status_code == 200 and reply.text.startswith("pong"), reply.text
        time.sleep(2)
        assert _runs(agent) == runs
    finally:
        assert agent.stop() == 0


HOOK = """#!{python}
# post-receive: one GitHub-shaped delivery per ref received, as a forge hook on every push does
import hashlib, hmac, json, sys, urllib.request
for line in sys.stdin:
    old, new, ref = line.split()
    body = json.dumps({{"ref": ref, "before": old, "after": new}}).encode()
    sig = "sha256=" + hmac.new({secret!r}, body, hashlib.sha256).hexdigest()
    req = urllib.request.Request({url!r}, data=body, method="POST", headers={{
        "X-GitHub-Event": "push", "X-Hub-Signature-256": sig, "Content-Type": "application/json"}})
    with urllib.request.urlopen(req, timeout=5) as reply:
        with open({log!r}, "a") as out:
            out.write(f"{{ref}} {{reply.status}} {{reply.read().decode().strip()}}\\n")
"""


def test_the_agents_own_report_push_starts_no_run(world: dict[str, Any]) -> None:
    """The Git server posts a delivery for each ref it receives: the branch (a run), then the agent's
    reports (refs/notes/bindy-agent, pushed by that run): ignored, so one push makes one run."""
    agent = AgentProcess(world["work"], repo=world["remote"].url, endpoints=world["endpoints"],
                         secret_file=world["secret"], push_notes=True)
    deliveries = world["work"] / "deliveries.log"
    try:
        wait_for(lambda: _runs(agent) >= 1, 30)
        wait_for(lambda: "refs/notes/bindy-agent" in world["remote"].cmd("ls-remote", "origin"), 30)
        hook = world["remote"].bare / "hooks" / "post-receive"
        hook.write_text(HOOK.format(python=sys.executable, secret=SECRET, url=agent.url + "/hooks/git",
                                    log=str(deliveries)))
        hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
        before = agent.metric("bindy_agent_runs_total", trigger="webhook")
        sha = world["remote"].commit("a record", _record(world, "own-notes"))
        world["remote"].push()
        # the run for the push, then its report pushed to refs/notes/bindy-agent: delivered and ignored
        wait_for(lambda: deliveries.exists() and "refs/notes/bindy-agent 202 ignored" in deliveries.read_text(), 60)
        time.sleep(3)  # a run the notes delivery started would show by now
        lines = deliveries.read_text().splitlines()
        assert lines[0] == "refs/heads/main 202 sync requested", lines
        assert all("ignored: ref refs/notes/" in line for line in lines[1:]), lines
        assert agent.metric("bindy_agent_runs_total", trigger="webhook") == before + 1, lines
        note = world["remote"].note_seen_by_a_fresh_clone(world["work"] / "clone", sha)
        assert sha[:12] in note or "applied" in note, note
    finally:
        assert agent.stop() == 0
    assert "Traceback" not in agent.log.read_text()
