"""How many hops a push takes from the webhook to the first DNS UPDATE: counted, not read off the code.

    .venv/bin/python bench/push_hops.py [--rounds 3] [--list] [--checkout DIR]

Starts named (primary + secondary), the zone API test server and a Git remote holding sample-repo
(tests/support), and the agent of `bindy-agent run` in this process (started: its HTTP server, its
worker), with the endpoint map (no Kubernetes). After the start-up run, each round pushes a commit
changing one record and POSTs the signed webhook. A profile function on every thread (threading.
setprofile, installed before the agent's threads start) is armed when the webhook handler
(`App._hook`) is entered and disarmed at the first `rfc2136.send`; in between it records every call
from a function of one agent module into a function of another (agent.* only; calls into agent.model.*,
agent.run.logs, agent.run.steps and dunder methods are not hops, and a call made from one of those, or
from outside agent/, is counted from the nearest agent frame below it).

Printed per round (the last round's, which is warm):
  calls       cross-module calls in order (loops count each time)
  hops        distinct (caller module.function -> callee module.function) edges, in first-call order
  module hops distinct (caller module -> callee module) edges
  flow        the pipeline stages the run's own modules (agent.run.*) call into, in order, repeats
              collapsed (sources = load < desired < observe < plan < gate < reconcile < podready < outcome)
  back-ups    where that flow steps back: a stage entered after a later one
  wire        external calls (agent.model.calls) from the webhook to the first dns_update
With --list, every hop (and back-up) of the last round. Counted the same way on old and new code, so
the numbers compare; they do not equal a count by hand (which skips calls nested below the spine).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import hmac
import pathlib
import sys
import tempfile
import threading
import time
import types
import uuid
from typing import Any

import httpx

ROOT = pathlib.Path(__file__).resolve().parent.parent
if "--checkout" in sys.argv[:-1]:  # the tree whose agent/ and tests/support run (before the imports below)
    sys.path.insert(0, str(pathlib.Path(sys.argv[sys.argv.index("--checkout") + 1]).resolve()))
else:
    sys.path.insert(0, str(ROOT))

SECRET = b"hops-secret-0123456789abcdef-01234"  # the agent refuses fewer than 32 characters
STAGES = ("sources", "load", "desired", "observe", "plan", "gate", "reconcile", "podready", "outcome")
RANK = {stage: i for i, stage in enumerate(STAGES)}
RANK["sources"] = RANK["load"]  # beside each other: neither knows the other
SKIPPED = ("agent.model", "agent.run.logs", "agent.run.steps")  # agent.run.steps: model/steps.py of old checkouts


def _hop_module(frame: types.FrameType | None) -> types.FrameType | None:
    """The nearest frame (this one or below) of an agent module that counts."""
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.startswith("agent.") and not name.startswith(SKIPPED) and not frame.f_code.co_name.startswith("__"):
            return frame
        frame = frame.f_back
    return None


def _stage(module: str) -> int | None:
    parts = module.split(".")
    return RANK.get(parts[1]) if len(parts) > 1 else None


@dataclasses.dataclass
class Count:
    calls: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (caller, callee) module.function
    wire: list[str] = dataclasses.field(default_factory=list)
    stack: list[str] = dataclasses.field(default_factory=list)

    def hops(self) -> list[tuple[str, str]]:
        return list(dict.fromkeys(self.calls))

    def module_hops(self) -> list[tuple[str, str]]:
        return list(dict.fromkeys((a.rsplit(".", 1)[0], b.rsplit(".", 1)[0]) for a, b in self.calls))

    def flow(self) -> list[tuple[str, str]]:
        """The stages the run's own code (agent.run.*) calls into, in order, repeats collapsed:
        (stage, the first call that entered it)."""
        out: list[tuple[str, str]] = []
        for caller, callee in self.calls:
            module = callee.rsplit(".", 1)[0]
            if not caller.startswith("agent.run.") or _stage(module) is None:
                continue
            stage = module.split(".")[1]
            if not out or out[-1][0] != stage:
                out.append((stage, f"{caller} -> {callee}"))
        return out

    def backups(self) -> list[str]:
        """Where the run's flow steps back: a stage entered after a later one."""
        flow = self.flow()
        return [f"{prev[0]} -> {cur[0]}: {cur[1]}" for prev, cur in zip(flow, flow[1:], strict=False)
                if RANK[cur[0]] < RANK[prev[0]]]


class Counter:
    """The profile function of every thread: idle until the webhook handler is entered."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.armed = False
        self.count = Count()
        self.sent = threading.Event()

    def arm(self) -> None:
        with self.lock:
            self.armed, self.count = False, Count()
            self.sent.clear()

    def __call__(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("agent."):
            return
        name = frame.f_code.co_name
        if not self.armed:
            if module == "agent.run.webhook" and name == "_hook" and not self.sent.is_set():
                self.armed = True
            return
        if module == "agent.clients.rfc2136" and name == "send":
            self._hop(frame, module, name)
            self.armed = False
            self.count.stack = self._stack(frame)
            self.sent.set()
            return
        if module.startswith(SKIPPED) or name.startswith("__"):
            return
        self._hop(frame, module, name)

    def _hop(self, frame: types.FrameType, module: str, name: str) -> None:
        caller = _hop_module(frame.f_back)
        if caller is None:
            return
        caller_module = caller.f_globals["__name__"]
        if caller_module != module:
            with self.lock:
                self.count.calls.append((f"{caller_module}.{caller.f_code.co_name}", f"{module}.{name}"))

    @staticmethod
    def _stack(frame: types.FrameType | None) -> list[str]:
        modules: list[str] = []
        while frame is not None:
            f = _hop_module(frame)
            if f is None:
                break
            name = f.f_globals["__name__"]
            if not modules or modules[-1] != name:
                modules.append(name)
            frame = f.f_back
        return modules[::-1]


def _agent_class() -> Any:
    """The Agent class, wherever this checkout keeps it."""
    import importlib

    for module in ("agent.run.agent", "agent.run.scheduler"):  # its name since, and before
        try:
            return importlib.import_module(module).Agent
        except (ImportError, AttributeError):
            continue
    raise SystemExit("no Agent class found")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--list", action="store_true", help="print every hop of the last round")
    parser.add_argument("--checkout", type=pathlib.Path, default=ROOT, help="the tree whose code runs")
    args = parser.parse_args()

    from agent.cli import _parser
    from agent.clients import endpoints as config
    from agent.clients import rfc2136 as records
    from agent.model import calls
    from agent.run import settings as settings_module
    from tests.support import bind as bind_support
    from tests.support import dnsrepo
    from tests.support import zone_api as zone_api_support
    from tests.support.gitremote import GitRemote
    from tests.support.procs import free_port

    counter = Counter()
    threading.setprofile(counter)  # every thread started from now on: the agent's HTTP server and worker
    with tempfile.TemporaryDirectory(prefix="bindy-hops-") as tmp:
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
            (work / "secret").write_bytes(SECRET)
            port = free_port()
            argv = ["run", "--repo", str(remote.url), "--endpoints", str(endpoints_file), "--state",
                    str(work / "state.json"), "--cache", str(work / "cache"), "--interval", "86400", "--jitter", "0",
                    "--listen", f"127.0.0.1:{port}", "--webhook-secret-file", str(work / "secret"),
                    "--no-push-notes", "--webhook-min-interval", "0"]
            ns = _parser(argv).parse_args(argv)
            flags = {name: getattr(ns, name) for name in settings_module.Settings.model_fields}
            agent = _agent_class()(settings_module.load_settings(flags, environ={}))
            agent.start()
            url = f"http://127.0.0.1:{port}"
            _wait(lambda: httpx.get(f"{url}/readyz", timeout=1).status_code == 200, "the agent never became ready")
            wire: list[str] = []
            stop = calls.listen(lambda target, op, result, s: wire.append(f"{target} {op}") if counter.armed else None)
            web = "records/example-com/web.yaml"
            body = b'{"ref": "refs/heads/main"}'
            signature = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
            for i in range(args.rounds):
                value = f"192.0.2.{150 + i}"
                remote.commit(f"round {i}", {web: files[web].replace("192.0.2.12", value)})
                remote.push()
                counter.arm()
                wire.clear()
                httpx.post(f"{url}/hooks/git", content=body, headers={"X-Hub-Signature-256": signature}, timeout=5)
                if not counter.sent.wait(60):
                    raise SystemExit("no DNS UPDATE sent within 60 s of the webhook")
                counter.count.wire = list(wire)
                _wait(lambda v=value: all(v in (records.query(s, f"www.example-{tag}.com.", "A") or ())
                                          for s in servers), "the pushed value was never served")
                _report(i, counter.count, args.list and i == args.rounds - 1)
            stop()
        finally:
            threading.setprofile(None)  # type: ignore[arg-type]
            if agent is not None:
                agent.stop()
            for api in apis.values():
                api.stop()
            pair.stop()
    return 0


def _wait(ok: Any, message: str, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while True:
        try:
            if ok():
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(message)
        time.sleep(0.05)


def _report(i: int, count: Count, listing: bool) -> None:
    print(f"round {i}: calls {len(count.calls)}, hops {len(count.hops())}, module hops {len(count.module_hops())}, "
          f"back-ups {len(count.backups())}, wire {len(count.wire)} ({', '.join(count.wire)})")
    if listing:
        print("stack at the first send (its thread): " + " > ".join(count.stack))
        for n, (caller, callee) in enumerate(count.hops(), 1):
            print(f"  {n:3d} {caller} -> {callee}")
        print("flow: " + " > ".join(stage for stage, _ in count.flow()))
        print("back-ups:")
        for backup in count.backups():
            print(f"      {backup}")


if __name__ == "__main__":
    sys.exit(main())
