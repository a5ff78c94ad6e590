"""The agent's HTTP side under hostile clients, against `bindy-agent run` as a real process: bad
secrets refused at start, oversized bodies, idle and slow connections, malformed requests, no
version banner, and a burst of valid deliveries (issue 15, point 7)."""

from __future__ import annotations

import hashlib
import hmac
import json
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support import bind as bind_support
from tests.support import dnsrepo
from tests.support.agentproc import ROOT, AgentProcess
from tests.support.gitremote import GitRemote
from tests.support.procs import free_port, wait_for

SECRET = b"0f5b1c7e4d2a9c8b6e3f1a0d5c7b9e2f4a6c8d0e1f3b5a7c"
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, bind: bind_support.BindPair, zone_api: Any) -> dict[str, Any]:
    """A Git remote holding sample-repo, the endpoint map of the real named pair, the secret file."""
    work = tmp_path_factory.mktemp("hardening")
    sample, _ = dnsrepo.unique_sample(work / "sample")
    remote = GitRemote(work / "git")
    remote.commit("DNS", {str(p.relative_to(sample)): p.read_text() for p in sample.rglob("*.yaml")})
    remote.push()
    (work / "secret").write_bytes(SECRET + b"\n")
    return {"work": work, "repo": remote.url, "endpoints": dnsrepo.endpoint_map(work, bind, zone_api),
            "secret": work / "secret"}


def _agent(world: dict[str, Any], *extra: str) -> AgentProcess:
    return AgentProcess(world["work"], repo=world["repo"], endpoints=world["endpoints"], secret_file=world["secret"],
                        extra=extra)


@pytest.fixture(scope="module")
def agent(world: dict[str, Any]) -> Iterator[AgentProcess]:
    """One agent with the default HTTP settings, shared by the tests that trigger no run."""
    proc = _agent(world)
    yield proc
    assert proc.stop() == 0
    assert "Traceback" not in proc.log.read_text()


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _exchange(port: int, request: bytes) -> tuple[bytes, bool]:
    """Sends `request` raw; returns what came back and whether the server closed the connection."""
    with _connect(port) as sock:
        sock.sendall(request)
        reply = b""
        try:
            while chunk := sock.recv(65536):
                reply += chunk
        except TimeoutError:
            return reply, False
        return reply, True


def _stream(port: int, head: bytes, chunk: bytes, total: int) -> tuple[bytes, int, float]:
    """Sends `head`, then `chunk` repeatedly up to `total` bytes for as long as the server reads; returns
    the whole reply, the bytes of body sent, and the seconds until the reply began."""
    sock, sent, reply, start = _connect(port), 0, b"", time.monotonic()
    sock.sendall(head)
    sock.setblocking(False)
    try:
        while not reply and time.monotonic() - start < 30:
            readable, writable, _ = select.select([sock], [sock] if sent < total else [], [], 1)
            if readable:
                reply = sock.recv(65536) or b"<closed>"
            elif writable:
                sent += sock.send(chunk)
        took = time.monotonic() - start
        sock.settimeout(5)
        while data := sock.recv(65536):
            reply += data
    except OSError:  # reset once the server closed with our unread body in its buffer
        took = time.monotonic() - start
    finally:
        sock.close()
    return reply, sent, took


@pytest.mark.parametrize("content", [b"", b"\n \n", b"short-secret\n", b"x" * 31])
def test_an_empty_or_short_secret_is_refused_at_start(world: dict[str, Any], content: bytes) -> None:
    secret = world["work"] / "weak-secret"
    secret.write_bytes(content)
    result = subprocess.run(
        [sys.executable, "-m", "agent", "run", "--repo", world["repo"], "--endpoints", str(world["endpoints"]),
         "--cache", str(world["work"] / "weak-cache"), "--listen", f"127.0.0.1:{free_port()}",
         "--webhook-secret-file", str(secret)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert f"webhook secret file {secret}" in result.stderr
    assert "at least 32 characters" in result.stderr and "openssl rand -hex 32" in result.stderr
    assert "Traceback" not in result.stderr
    if content.strip():
        assert content.strip().decode() not in result.stderr


def test_an_oversized_body_gets_413_before_it_is_read_and_memory_stays_flat(agent: AgentProcess) -> None:
    before, seen = agent.status("VmRSS"), len(agent.log_lines())
    head = (b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nContent-Length: %d\r\n"
            b"X-Hub-Signature-256: sha256=%s\r\n\r\n" % (100 * MIB, b"0" * 64))
    for _ in range(4):
        reply, sent, took = _stream(agent.port, head, b"x" * 65536, 100 * MIB)
        print(f"100 MB body: {reply[:37].decode()} after {took:.2f} s and {sent / MIB:.1f} MiB sent")
        assert reply.startswith(b"HTTP/1.1 413 ") and b"the limit is 1048576 bytes" in reply
        assert took < 2 and sent < 20 * MIB  # what the socket buffers took, not the body
    chunked = b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nTransfer-Encoding: chunked\r\n\r\n"
    reply, sent, took = _stream(agent.port, chunked, b"10000\r\n" + b"x" * 65536 + b"\r\n", 100 * MIB)
    assert reply.startswith(b"HTTP/1.1 413 ") and sent < 20 * MIB
    after = agent.status("VmRSS")
    print(f"RSS before {before / 1024:.0f} MiB, after five 100 MB bodies {after / 1024:.0f} MiB")
    assert after - before < 8 * 1024  # KiB
    assert sum("413 Request Entity Too Large" in line for line in agent.log_lines()[seen:]) == 5


def test_health_answers_at_once_under_200_idle_connections_that_hold_no_thread(agent: AgentProcess) -> None:
    threads, fds = agent.status("Threads"), agent.metric("process_open_fds")
    idle = [_connect(agent.port) for _ in range(200)]
    try:
        wait_for(lambda: agent.metric("process_open_fds") >= fds + 200, 10)  # accepted, not left in the backlog
        start = time.monotonic()
        assert httpx.get(agent.url + "/healthz", timeout=5).status_code == 200
        took = time.monotonic() - start
        print(f"/healthz under 200 idle connections: {took * 1000:.0f} ms; threads {threads} -> "
              f"{agent.status('Threads')}")
        assert took < 0.5
        assert agent.status("Threads") <= threads + 1
    finally:
        for sock in idle:
            sock.close()


MALFORMED = {
    "negative Content-Length": b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nContent-Length: -1\r\n\r\n{}",
    "non-numeric Content-Length": b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nContent-Length: 12abc\r\n\r\n",
    "two Content-Lengths": b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
    "garbage request line": b"GARBAGE\r\n\r\n",
    "binary junk": bytes(range(1, 256)) + b"\r\n\r\n",
    "lower-case method": b"get /healthz HTTP/1.1\r\nHost: agent\r\n\r\n",
    "bare CR in a token header": b"GET /healthz HTTP/1.1\r\nHost: agent\r\nX-Gitlab-Token: tok\ren-value\r\n\r\n",
    "bad chunk size": b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
}


@pytest.mark.parametrize("request_bytes", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_request_gets_400_and_one_json_log_line(agent: AgentProcess, request_bytes: bytes) -> None:
    seen = len(agent.log_lines())
    reply, closed = _exchange(agent.port, request_bytes)
    assert reply.split(b"\r\n")[0] in (b"HTTP/1.0 400 Bad Request", b"HTTP/1.1 400 Bad Request")
    assert closed
    new = agent.log_lines()[seen:]
    assert len(new) == 1, new
    line = json.loads(new[0])
    assert line["level"] == "warning" and "400 Bad Request" in line["msg"] and "error" not in line
    assert "en-value" not in new[0]  # a header's value is never logged
    assert "Traceback" not in agent.log.read_text()


def test_no_response_names_the_server_or_a_version(agent: AgentProcess) -> None:
    close = b"Host: agent\r\nConnection: close\r\n"
    requests = [b"GET /healthz HTTP/1.1\r\n" + close + b"\r\n", b"GET /readyz HTTP/1.1\r\n" + close + b"\r\n",
                b"GET /metrics HTTP/1.1\r\n" + close + b"\r\n", b"GET /nothing HTTP/1.1\r\n" + close + b"\r\n",
                b"GET /hooks/git HTTP/1.1\r\n" + close + b"\r\n",
                b"POST /hooks/git HTTP/1.1\r\n" + close + b"Content-Length: 2\r\n\r\n{}",
                b"POST /hooks/git HTTP/1.1\r\n" + close + b"Content-Length: 99999999\r\n\r\n",
                b"GARBAGE\r\n\r\n"]
    statuses = []
    for request in requests:
        reply, _ = _exchange(agent.port, request)
        head, _, body = reply.partition(b"\r\n\r\n")
        statuses.append(int(head.split(b" ")[1]))
        assert not any(line.lower().startswith(b"server:") for line in head.split(b"\r\n")), head
        assert b"waitress" not in reply.lower() and b"python" not in head.lower()
        if not request.startswith(b"GET /metrics"):
            assert b"python" not in body.lower(), body
    assert statuses == [200, 200, 200, 404, 405, 401, 413, 400]


def test_process_metrics_are_served(agent: AgentProcess) -> None:
    assert agent.metric("process_resident_memory_bytes") > 10 * MIB
    assert agent.metric("process_open_fds") > 3
    assert agent.metric("process_cpu_seconds_total") > 0
    assert agent.metric("python_gc_collections_total") > 0


def test_idle_and_slow_connections_are_closed_after_their_timeouts(world: dict[str, Any]) -> None:
    proc = _agent(world, "--http-header-timeout", "2", "--http-body-timeout", "3")
    try:
        seen = len(proc.log_lines())
        kept = _connect(proc.port)  # a keep-alive connection after a response
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: agent\r\n\r\n")
        assert kept.recv(4096).startswith(b"HTTP/1.1 200 ")
        socks = {"idle": _connect(proc.port), "keep-alive": kept, "slow headers": _connect(proc.port),
                 "slow body": _connect(proc.port)}
        socks["slow headers"].sendall(b"GET /healthz HTTP/1.1\r\n")
        socks["slow body"].sendall(b"POST /hooks/git HTTP/1.1\r\nHost: agent\r\nContent-Length: 1000\r\n\r\n")
        closed = _watch(socks, trickle={"slow headers": b"X", "slow body": b"{"}, limit=10)
        print({name: f"{at:.1f} s" for name, at in closed.items()})
        assert 1.5 < closed["idle"] < 4 and 1.5 < closed["keep-alive"] < 4
        assert 1.5 < closed["slow headers"] < 4  # although it sends a byte every 0.25 s
        assert 2.5 < closed["slow body"] < 5
        new = "\n".join(proc.log_lines()[seen:])
        assert "request headers not complete within 2 s" in new and "request body not complete within 3 s" in new
    finally:
        assert proc.stop() == 0


def _watch(socks: dict[str, socket.socket], *, trickle: dict[str, bytes], limit: float) -> dict[str, float]:
    """Seconds until the server closed each connection, sending `trickle` bytes every 0.25 s meanwhile."""
    start, closed = time.monotonic(), {}
    while len(closed) < len(socks) and time.monotonic() - start < limit:
        for name, sock in socks.items():
            if name in closed:
                continue
            try:
                if name in trickle:
                    sock.sendall(trickle[name])
                if select.select([sock], [], [], 0)[0] and not sock.recv(4096):
                    closed[name] = time.monotonic() - start
            except OSError:
                closed[name] = time.monotonic() - start
        time.sleep(0.25)
    for sock in socks.values():
        sock.close()
    return closed


def test_a_burst_of_1000_valid_deliveries_starts_at_most_two_runs(world: dict[str, Any]) -> None:
    proc = _agent(world)  # default --webhook-min-interval
    try:
        body = b'{"ref": "refs/heads/main", "after": "0000000000000000000000000000000000000000"}'
        headers = {"X-Hub-Signature-256": "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()}
        before = proc.metric("bindy_agent_runs_total")
        with httpx.Client(base_url=proc.url, timeout=10) as client:
            assert client.post("/hooks/git", content=body, headers=headers).status_code == 202
            took = wait_for(lambda: proc.metric("bindy_agent_runs_total") == before + 1, 5, every=0.02)
            print(f"a single delivery: its run done {took:.2f} s later")
            start = time.monotonic()
            codes = [client.post("/hooks/git", content=body, headers=headers).status_code for _ in range(999)]
            burst = time.monotonic() - start
        assert codes == [202] * 999
        wait_for(lambda: proc.metric("bindy_agent_runs_total") == before + 2, 30)
        time.sleep(2)
        runs = proc.metric("bindy_agent_runs_total") - before
        print(f"1,000 deliveries ({burst:.1f} s for the last 999): {runs:.0f} runs")
        assert runs == 2  # one at once, one trailing run for the deliveries that came during the first
        assert proc.metric("bindy_agent_webhook_deliveries_total", result="accepted") == 1000
    finally:
        assert proc.stop() == 0
