"""Plans are written as they are produced (issue 28, "Streamed plans"): `bindy-agent plan` writes its
text, JSON and Markdown in pieces, never holding the rendered document, and what it writes is byte
for byte what the whole-document renderers wrote (kept below as the reference); a reader that stops
early (`| head`) ends the output quietly, with the plan's exit status."""

from __future__ import annotations

import http
import importlib.util
import io
import json
import math
import pathlib
import shutil
import subprocess
import sys
import tracemalloc
from typing import Any

import pytest

from agent import cli
from agent.desired import hierarchy
from agent.desired.rrsets import RRset
from agent.model import printable
from agent.model.findings import Refusal
from agent.model.problems import Origin, Problem, Severity
from agent.plan import build, delta, render, render_markdown, render_text
from agent.plan.changes import (
    FORMAT_VERSION,
    LAYERS,
    SYMBOL,
    Action,
    Change,
    KubeTarget,
    Plan,
    RRsetTarget,
    ZoneTarget,
)
from agent.plan.locate import NOWHERE
from tests.conftest import ROOT, SAMPLE, load_dir

FLAGS = ["--namespace", "dns", "--allowed-namespaces", "*"]


def _generate(root: pathlib.Path, records: int) -> pathlib.Path:
    """bench/parse_bench.py's repository: every record type, the three ways a record finds its zone."""
    spec = importlib.util.spec_from_file_location("parse_bench", ROOT / "bench" / "parse_bench.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    root.mkdir()
    module.generate(root, records, zones=max(1, records // 100))
    return root


# -- the whole-document renderers as they were, the reference ------------------------------------
def _old_json(plan: Plan) -> str:
    problems = ([p.as_dict() for p in plan.problems] if plan.base is None else
                [{**p.as_dict(), "revision": "base"} for p in plan.base_problems]
                + [{**p.as_dict(), "revision": "head"} for p in plan.problems])
    doc: dict[str, Any] = {"formatVersion": FORMAT_VERSION, "revision": plan.revision, "summary": plan.summary,
                           "changes": [c.as_dict() for c in plan.changes], "conflicts": plan.conflicts,
                           "problems": problems}
    if plan.base is not None:
        doc["base"] = plan.base
    optional = (("refusals", plan.refusals), ("unplanned", plan.unplanned), ("invalid", list(plan.invalid)))
    doc.update({key: value for key, value in optional if value})
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def _old_text(plan: Plan) -> str:
    lines = ([f"Base: {render_text.label(plan, plan.base)}", f"Head: {render_text.label(plan, plan.revision)}", ""]
             if plan.base is not None else [f"Revision: {plan.revision}", ""] if plan.revision else [])
    for layer, title in LAYERS:
        changes = [c for c in plan.changes if c.target.layer == layer]
        if not changes:
            continue
        lines.append(f"{title} ({len(changes)}):")
        zone = None
        for c in changes:
            if isinstance(c.target, RRsetTarget):
                if c.target.zone != zone:
                    zone = c.target.zone
                    lines.append(f"  {zone}")
                lines.append(f"    {SYMBOL[c.action]} {c.target.name} {render_text.detail(c)}")
            else:
                detail = render_text.detail(c)
                lines.append(f"  {SYMBOL[c.action]} {c.target}" + (f"  {detail}" if detail else ""))
        lines.append("")
    for items, title, mark in ((plan.conflicts, f"Conflicts ({len(plan.conflicts)}), left untouched:", "!"),
                               (plan.unplanned, f"Not observed ({len(plan.unplanned)}), so nothing is planned "
                                "there:", "?"),
                               (plan.refusals, f"The safety gate refuses this plan ({len(plan.refusals)}); a sync "
                                "would apply nothing:", "!")):
        if items:
            lines += [title, *(f"  {mark} {i}" for i in items), ""]
    lines += [f"Note: {n}" for n in plan.notes]
    lines.append(render_text._closing_line(plan))
    return "\n".join(printable.line(line) for line in lines) + "\n"


def _old_sections(plan: Plan) -> list[tuple[list[str], list[str], Any, tuple[str, ...]]]:
    """Every section with every row rendered (a limit no plan reaches)."""
    md = render_markdown
    sections = md._sections(plan, 1 << 62, NOWHERE, md._count(plan, NOWHERE))
    for s in sections:
        s.rows.length(s.rows.count)
    return [(s.heading, s.rows.rendered, s.more, s.footer) for s in sections]


def _old_markdown(plan: Plan, limit: int) -> str:
    """Every row rendered, then the most rows per section that fit, by bisection on whole documents."""
    whole, head = _old_sections(plan), render_markdown._head(plan, render_markdown._count(plan, NOWHERE))

    def assemble(rows: int) -> str:
        lines = list(head)
        for heading, items, more, footer in whole:
            lines += heading + items[:rows]
            if len(items) > rows:
                lines.append(more(len(items) - rows))
            lines += [*footer, ""]
        return "\n".join(lines)

    note = (f"\n_Cut to fit a {limit:,}-character comment: every count above is complete; "
            "`bindy-agent plan -o json` lists every change._\n")
    most = max((len(items) for _, items, _, _ in whole), default=0)
    if len(assemble(most)) <= limit:
        return assemble(most)
    low, high = 0, most
    while low < high:
        mid = (low + high + 1) // 2
        if len(assemble(mid)) + len(note) <= limit:
            low = mid
        else:
            high = mid - 1
    return (assemble(low) + note)[:limit]


# -- plans of every shape -------------------------------------------------------------------------
def _odd_plan() -> Plan:
    """Every target, action and optional key, and values json writes in its own ways."""
    body = {"spec": {"ttl": 1, "ratio": 0.5, "huge": 1e300, "flag": True, "off": False, "none": None,
                     "empty": {}, "list": [], "nested": [[1, [2, {}]], {"a": []}], "tuple": (1, "x")},
            "metadata": {"labels": {"a.b/c": "é ü \u202e \x1b[31m \"q\" \\ \n"}, "name": "x"},
            "weird keys": {3: "int key", 2.5: "float key", None: "null key", False: "bool key"},
            "nan": math.nan, "inf": -math.inf, "enums": [Action.CREATE, http.HTTPStatus.OK, Severity.WARNING]}
    changes = [
        Change(Action.UPDATE, KubeTarget("ConfigMap", "dns-system", "named"), old={"data": {"a": "1"}},
               new=body, fields=("spec.ttl", "metadata.labels.a.b/c", "spec.list[0]", "nan"), reason="drift"),
        Change(Action.CREATE, KubeTarget("ClusterRole", None, "bindy"), new={"rules": []}),
        Change(Action.DELETE, KubeTarget("Secret", "dns-system", "tsig"), old={"kind": "Secret", "data": {}}),
        Change(Action.CREATE, ZoneTarget("example.com.", "dns-system/p-0", "primary"),
               new={"zoneType": "primary"}),
        Change(Action.CREATE, ZoneTarget("example.com.", "dns-system/s-0", "secondary"),
               new={"zoneType": "secondary", "primaries": ["dns-system/p-0"]}),
        Change(Action.UPDATE, RRsetTarget("example.com.", "t.example.com.", "TXT"),
               old=RRset("example.com.", "t.example.com.", "TXT", 60, ('"a|b`c"',)),
               new=RRset("example.com.", "t.example.com.", "TXT", 300, ('"é"', '"\\\\ \\""'))),
        Change(Action.DELETE, RRsetTarget("b.example.", "b.example.", "NS"),
               old={"ttl": 3600, "values": ["ns1.b.example."]}),
    ]
    problems = [Problem(Origin("a.yaml", 3), "ARecord/ns/a", "spec.name", "required field is missing"),
                Problem(None, "", "", "a warning `with` <b>markup</b>", Severity.WARNING)]
    return Plan(changes, problems, "b" * 40, conflicts=["ARecord ns/x: not ours"], notes=["a note\twith a tab"],
                refused=(Refusal("b.example.", "deletes 100% of zone b.example."),), unplanned=["c.example. on dns-system/p-0"],
                base="a" * 40, base_problems=problems[:1], invalid=(), labels={"a" * 40: "main (aaaa)"})


def _plans(tmp_path: pathlib.Path) -> dict[str, Plan]:
    sample = build.offline(hierarchy.build(load_dir(SAMPLE)))
    generated = build.offline(hierarchy.build(load_dir(_generate(tmp_path / "gen", 400), default_namespace="dns")))
    head = hierarchy.build(load_dir(SAMPLE))
    base = hierarchy.build(load_dir(_generate(tmp_path / "base", 40), default_namespace="dns"))
    edited = tmp_path / "edited"
    shutil.copytree(SAMPLE, edited)
    web = edited / "records" / "example-com" / "web.yaml"
    web.write_text(web.read_text().replace("    - 192.0.2.10\n", "    - 192.0.2.20\n", 1))
    updates = delta.delta(head, hierarchy.build(load_dir(edited)), base_revision="p", head_revision="q")
    assert any(c.action is Action.UPDATE and isinstance(c.target, RRsetTarget) for c in updates.changes)
    invalid = Plan([], [Problem(Origin("b.yaml", 1), "DNSZone/ns/z", "spec", "bad")], "c" * 40,
                   base="d" * 40, invalid=("base", "head"))
    return {"sample": sample, "generated": generated, "delta": delta.delta(base, head, base_revision="x",
                                                                             head_revision="y"),
            "updates": updates, "odd": _odd_plan(), "empty": Plan([]), "invalid": invalid}


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Plan]:
    return _plans(tmp_path_factory.mktemp("plans"))


def test_the_streamed_json_is_byte_for_byte_the_whole_document(plans: dict[str, Plan]) -> None:
    for name, plan in plans.items():
        streamed = "".join(render.chunks(plan, "json", size=1))
        assert streamed == _old_json(plan), name
        assert json.loads(streamed)["summary"] == plan.summary


def test_the_streamed_text_is_byte_for_byte_the_whole_document(plans: dict[str, Plan]) -> None:
    for name, plan in plans.items():
        assert "".join(render.chunks(plan, "text", size=1)) == _old_text(plan), name


@pytest.mark.parametrize("limit", [render.MARKDOWN_LIMIT, 20_000, 3_000, 700, 120, 40, 1])
def test_the_streamed_markdown_fits_as_the_whole_document_did(plans: dict[str, Plan], limit: int) -> None:
    for name, plan in plans.items():
        streamed = "".join(render_markdown.pieces(plan, limit=limit))
        assert streamed == _old_markdown(plan, limit), (name, limit)
        assert len(streamed) <= limit


def _rrset_plan(count: int) -> Plan:
    return Plan([Change(Action.CREATE, RRsetTarget(f"z{i // 100}.example.", f"h{i}.z{i // 100}.example.", "A"),
                        new=RRset(f"z{i // 100}.example.", f"h{i}.z{i // 100}.example.", "A", 300,
                                  (f"192.0.2.{i % 250}", f"198.51.100.{i % 250}")))
                 for i in range(count)], revision="e" * 40)


@pytest.mark.parametrize("output", ["json", "text", "markdown"])
def test_a_large_plan_is_rendered_without_holding_its_document(output: str) -> None:
    """20,000 RRsets: a few MB of JSON or text, rendered in chunks while memory holds far less."""
    plan = _rrset_plan(20_000)
    tracemalloc.start()
    try:
        written, largest = 0, 0
        for chunk in render.chunks(plan, output):
            written += len(chunk)
            largest = max(largest, len(chunk))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert largest < 2 * render.CHUNK
    if output != "markdown":
        assert written > 1_000_000 and peak < written / 4, (written, peak)
    else:
        assert written <= render.MARKDOWN_LIMIT and peak < 2_000_000, peak  # not every row rendered


class _Stdout(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[int] = []

    def write(self, text: str) -> int:
        self.writes.append(len(text))
        return super().write(text)


@pytest.mark.parametrize("output", ["json", "text"])
def test_plan_writes_its_output_as_it_is_rendered(tmp_path: pathlib.Path, output: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root = _generate(tmp_path / "repo", 2_000)
    out = _Stdout()
    monkeypatch.setattr(sys, "stdout", out)
    assert cli.main(["plan", str(root), *FLAGS, "-o", output]) == 0
    assert len(out.writes) > 1 and max(out.writes) < 2 * render.CHUNK, out.writes[:5]
    plan = build.offline(hierarchy.build(load_dir(root, default_namespace="dns")))
    assert out.getvalue() == (_old_json(plan) if output == "json" else _old_text(plan))


@pytest.mark.parametrize("output", ["json", "text"])
def test_a_reader_that_stops_early_ends_the_plan_quietly(tmp_path: pathlib.Path, output: str) -> None:
    """`plan -o json | head -c 100`: no traceback, no error, and the plan's exit status (2: changes)."""
    root = _generate(tmp_path / "repo", 2_000)  # 2 MB of JSON, 170 KB of text: more than a pipe holds
    proc = subprocess.Popen([sys.executable, "-m", "agent", "plan", str(root), *FLAGS, "-o", output, "--detailed-exitcode"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.read(100)
    proc.stdout.close()
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 2, err[-2000:]
    assert first.startswith(b"{" if output == "json" else b"Kubernetes objects")
    complaints = [line for line in err.splitlines() if not line.startswith("warning: ")]
    assert complaints == [], complaints[-5:]
