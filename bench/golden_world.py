"""pytest plugin of the golden harness's world part: what every run and every in-process CLI call of
a test produced, normalised, one JSON file per test - so that the same integration tests run on old
and new code can be compared with `diff -r`.

    cd CHECKOUT && PYTHONPATH=<this bench/> <venv>/bin/pytest -p golden_world --golden-out OUT \\
        tests/integration/test_x.py ...
    (or: bench/golden.py --checkout CHECKOUT --out OUT --world [FILES...])

Recorded, in the order they happen: each `agent.run.orchestrator.run` (outcome, message, problems,
refusals, failures, conflicts, errors, superseded, rejected_head, retryable, notes_pushed,
deadline_hit, the plan as JSON, the second round's plan), each report a run builds
(`runreport.of_run(...).as_dict()`), and each `tests.support.clirun.main` call (argv, status, stdout,
stderr). Normalised: timestamps, durations, temporary paths and ports; then every hexadecimal token of
6 or more characters (commit ids, run ids, random tags of zone names and namespaces, serials) is
replaced by a placeholder numbered by its first appearance in the test, so two runs whose outputs
differ only in such values write the same file. The test's own result (passed / failed) is recorded too.
Nothing here is in the repository's conftest: the plugin is loaded only when asked for (-p).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import pathlib
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

_records: list[dict[str, Any]] = []
_calls: list[dict[str, int]] = []  # per run: external calls "target operation result" -> how many
_out: pathlib.Path | None = None

TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?")
DURATION = re.compile(r"\b\d+(\.\d+)?( ?)(ms|s)\b")
TMP = re.compile(r"/tmp/[^\s\"'):,]*")
PORT = re.compile(r"\b(127\.\d+\.\d+\.\d+|localhost|\[::1\]|0\.0\.0\.0):\d+")
HEX = re.compile(r"(?<![0-9a-zA-Z])[0-9a-f]{6,}(?![0-9a-zA-Z])")
TIMED_KEYS = {"seconds", "steps", "at"}
TIMED_SUFFIXES = ("Seconds", "_seconds", "At", "_at", "Time")  # durationSeconds, startedAt, lastTransitionTime


def _timed(key: str) -> bool:
    return key in TIMED_KEYS or key.endswith(TIMED_SUFFIXES)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--golden-out", default=None, help="directory of the golden world records (bench/golden_world)")


def pytest_configure(config: pytest.Config) -> None:
    global _out
    out = config.getoption("--golden-out")
    if not out:
        return
    _out = pathlib.Path(out)
    _out.mkdir(parents=True, exist_ok=True)
    import agent
    from agent.run import orchestrator, runreport
    from tests.support import clirun

    print(f"golden_world: agent from {pathlib.Path(agent.__file__).parent}", file=sys.stderr)
    orchestrator.run = _calls_around(_wrap(orchestrator.run, _run_record))  # type: ignore[assignment]
    runreport.of_run = _wrap(runreport.of_run, lambda args, kwargs, r: {"report": _plain(r.as_dict())})  # type: ignore[assignment]
    clirun.main = _wrap(clirun.main, _cli_record)  # type: ignore[assignment]


def _wrap(fn: Callable[..., Any], record: Callable[[tuple[Any, ...], dict[str, Any], Any], dict[str, Any]]
          ) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        try:
            _records.append(record(args, kwargs, result))
        except Exception as exc:  # the record must never change the test
            _records.append({"record-error": f"{type(exc).__name__}: {exc}"})
        return result
    return call


def _run_record(args: tuple[Any, ...], kwargs: dict[str, Any], run: Any) -> dict[str, Any]:
    from agent.plan import render

    doc: dict[str, Any] = {name: _plain(getattr(run, name, None)) for name in (
        "outcome", "message", "refusals", "failures", "conflicts", "errors", "superseded", "rejected_head",
        "retryable", "notes_pushed", "deadline_hit", "parsed")}
    doc["problems"] = [str(p) for p in run.problems]
    doc["plan"] = json.loads(render.render_json(run.plan)) if run.plan is not None else None
    doc["replan"] = json.loads(render.render_json(run.replan)) if run.replan is not None else None
    if run.dns is not None:
        doc["dns"] = {"zones": sorted(z.name for z in run.dns.zones), "updates_sent": run.dns.updates_sent,
                      "stale": sorted(run.dns.stale), "results": [_zone_result(z) for z in run.dns.zones]}
    if run.kube is not None:
        doc["kube"] = {k: sorted(str(x) for x in v) for k, v in (("applied", run.kube.applied),
                                                                 ("deleted", run.kube.deleted),
                                                                 ("failed", run.kube.failed),
                                                                 ("statuses_written", run.kube.statuses_written))}
    return {"run": doc}


def _zone_result(zone: Any) -> dict[str, Any]:
    """What a zone's result says (reports and statuses are made of it) and what it leaves the next
    run: each primary's serial after the run (`after`, the next run's unmoved check)."""
    doc = {name: _plain(getattr(zone, name, None)) for name in (
        "name", "servers", "served", "primary_error", "secondary_error", "refused", "stale", "conflicts",
        "applied_on", "created_on", "deleted_from", "revision")}
    doc["checks"] = sorted([c.server, c.name, c.rtype, c.ok] for c in zone.checks)
    doc["after"] = {server: {"serial": seen.serial, "remembered": seen.remembered, "error": seen.error,
                             "rrsets": None if seen.rrsets is None else len(seen.rrsets)}
                    for server, seen in sorted(zone.after.items())}
    return doc


def _calls_around(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Each run's external calls by target and operation (calls.totals before and after), written
    apart from the records (OUT/calls/): fewer calls is a change a comparison may allow."""
    from agent.model import calls

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        before = calls.totals()
        try:
            return fn(*args, **kwargs)
        finally:
            after = calls.totals()
            _calls.append({f"{t} {op} {r}": n - before.get((t, op, r), 0)
                           for (t, op, r), n in sorted(after.items()) if n != before.get((t, op, r), 0)})
    return call


def _cli_record(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> dict[str, Any]:
    return {"cli": {"argv": list(args), "status": result.returncode, "stdout": result.stdout,
                    "stderr": result.stderr}}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if not _timed(str(k))}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


class Normal:
    """Normalises one test's record: the same placeholder for a token wherever it appears in it."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def __call__(self, value: Any) -> Any:
        if isinstance(value, dict):  # keys too, in an order that random tags do not change
            keys = sorted((k for k in value if not _timed(k)), key=lambda k: (HEX.sub("#", k), k))
            return {self(k): self(value[k]) for k in keys}
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, bool) or value is None or isinstance(value, float):
            return value
        if isinstance(value, int):
            return self._token(str(value)) if value >= 100_000 else value  # serials, big counters of time
        text = TIME.sub("<TIME>", str(value))
        text = TMP.sub("<TMP>", text)
        text = PORT.sub(r"\1:<PORT>", text)
        text = DURATION.sub(r"<T>\2\3", text)
        return HEX.sub(lambda m: self._token(m.group(0)), text)

    def _token(self, token: str) -> str:
        for full, name in self.seen.items():  # a prefix of a token seen (a short commit id) is that token
            if full.startswith(token) or token.startswith(full):
                return name
        self.seen[token] = f"<H{len(self.seen) + 1}>"
        return self.seen[token]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    _records.clear()
    _calls.clear()
    outcomes: list[str] = []
    item.stash[_OUTCOMES] = outcomes
    yield
    if _out is None:
        return
    doc = {"test": item.nodeid, "result": outcomes, "records": list(_records)}
    name = re.sub(r"[^\w.-]+", "_", item.nodeid)[:200]
    plain = json.loads(json.dumps(doc, default=str))
    (_out / f"{name}.json").write_text(json.dumps(Normal()(plain), indent=1) + "\n")
    (_out / "calls").mkdir(exist_ok=True)
    (_out / "calls" / f"{name}.json").write_text(json.dumps(_calls, indent=1) + "\n")
    _records.clear()
    _calls.clear()


_OUTCOMES = pytest.StashKey[list[str]]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" or report.outcome != "passed":
        item.stash.get(_OUTCOMES, []).append(f"{report.when}: {report.outcome}")
