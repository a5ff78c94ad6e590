"""Push to served: a signed webhook to a running `bindy-agent run`, against a one-shot CLI sync.

    .venv/bin/python bench/webhook_bench.py [--rounds 5]

Starts named (primary + secondary), the zone API test server and a Git remote (tests/support;
run scripts/install-test-deps first). Each round pushes a commit changing one record; the time
measured runs from the webhook POST until both primary and secondary answer the new value.
The rounds follow each other closer than real pushes do, so the agent runs with
--webhook-min-interval 0: each round measures one push, never the throttle that spaces bursts.
The baseline runs `bindy-agent sync --repo ...` as a fresh process for a similar commit.
Prints min/median/max of each and the ratio (target: served within 2 s of the webhook).
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import httpx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from agent.clients import endpoints as config
from agent.clients import rfc2136 as records
from tests.support import bind as bind_support
from tests.support import dnsrepo
from tests.support import zone_api as zone_api_support
from tests.support.gitremote import GitRemote
from tests.support.procs import free_port

ROOT = pathlib.Path(__file__).resolve().parent.parent
SECRET = b"bench-secret-0123456789abcdef-0123"  # the agent refuses fewer than 32 characters


def _served(servers: list[config.Endpoint], name: str, value: str) -> bool:
    return all(value in (records.query(s, name, "A") or ()) for s in servers)


def _rounds(remote: GitRemote, files: dict[str, str], tag: str, servers: list[config.Endpoint], rounds: int,
            kick: object, base: int) -> list[float]:
    web = "records/example-com/web.yaml"
    times = []
    for i in range(rounds):
        value = f"192.0.2.{base + i}"
        remote.commit(f"round {i}", {web: files[web].replace("192.0.2.12", value)})
        remote.push()
        start = time.perf_counter()
        kick()  # type: ignore[operator]
        while not _served(servers, f"www.example-{tag}.com.", value):
            if time.perf_counter() - start > 60:
                raise SystemExit("not served within 60 s")
            time.sleep(0.01)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        pair = bind_support.start_pair(work / "bind")
        token = uuid.uuid4().hex
        apis = {"primary": zone_api_support.ZoneApi(pair.primary, token).start(),
                "secondary": zone_api_support.ZoneApi(pair.secondary, token).start()}
        agent = None
        try:
            sample, tag = dnsrepo.unique_sample(work / "sample")
            files = {str(p.relative_to(sample)): p.read_text() for p in sample.rglob("*.yaml")}
            remote = GitRemote(work / "git")
            remote.commit("initial", files)
            remote.push()
            endpoints_file = dnsrepo.endpoint_map(work, pair, apis)
            servers = list(config.load_endpoints(endpoints_file).values())
            cli = [sys.executable, "-m", "agent", "sync", "--repo", remote.url, "--endpoints", str(endpoints_file),
                   "--state", str(work / "cli-state.json"), "--cache", str(work / "cli-cache"), "--no-push-notes"]
            subprocess.run(cli, cwd=ROOT, capture_output=True, check=True)
            baseline = _rounds(remote, files, tag, servers, args.rounds,
                               lambda: subprocess.run(cli, cwd=ROOT, capture_output=True, check=True), 100)

            (work / "secret").write_bytes(SECRET)
            port = free_port()
            log = open(work / "agent.log", "w")  # noqa: SIM115
            agent = subprocess.Popen(
                [sys.executable, "-m", "agent", "run", "--repo", remote.url, "--endpoints", str(endpoints_file),
                 "--state", str(work / "run-state.json"), "--cache", str(work / "run-cache"), "--interval", "3600",
                 "--listen", f"127.0.0.1:{port}", "--webhook-secret-file", str(work / "secret"), "--no-push-notes",
                 "--webhook-min-interval", "0"],
                cwd=ROOT, stderr=log)
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise SystemExit("agent never became ready")
                time.sleep(0.05)
            body = b'{"ref": "refs/heads/main"}'
            signature = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()

            def hook() -> None:
                httpx.post(f"{url}/hooks/git", content=body, headers={"X-Hub-Signature-256": signature}, timeout=5)

            webhook = _rounds(remote, files, tag, servers, args.rounds, hook, 150)
        finally:
            if agent is not None:
                agent.send_signal(signal.SIGTERM)
                agent.wait(30)
            for api in apis.values():
                api.stop()
            pair.stop()

    def show(label: str, values: list[float]) -> str:
        return (f"{label}: min {min(values):.2f} s, median {statistics.median(values):.2f} s, "
                f"max {max(values):.2f} s ({len(values)} rounds)")

    print("push -> served on primary and secondary (sample-repo, 3 zones, 21 RRsets)")
    print(show("webhook to a running agent       ", webhook))
    print(show("baseline: one-shot CLI sync      ", baseline))
    print(f"ratio (baseline / webhook, median): {statistics.median(baseline) / statistics.median(webhook):.1f}x; "
          f"target: served within 2 s of the webhook -> {'met' if max(webhook) < 2 else 'NOT met'}")


if __name__ == "__main__":
    main()
