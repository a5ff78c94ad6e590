"""bench/plan_stream_bench.py pairs each round's figures with that round's bare parse and runs only what is asked."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
from types import ModuleType

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _plan_stream_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("plan_stream_bench", ROOT / "bench" / "plan_stream_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_bench_pairs_each_round_with_its_bare_parse_and_runs_only_what_is_asked(
        tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = _plan_stream_bench()
    quick = [sys.executable, "-c", "pass"]
    # a one-argument `commands`, as bench/million_bench.py installs
    bench.commands = lambda root: {name: (quick, ROOT) for name in ("bare parse", "validate", "plan -o json")}
    bench.run(tmp_path, 3, only=("validate",))
    out = capsys.readouterr()
    assert "plan -o json" not in out.out + out.err  # not run, and no first byte measured
    assert out.err.count("  validate ") == 3 and out.err.count("  bare parse ") == 3
    assert "per round, x that round's bare parse: median [lowest - highest]" in out.out
    assert bench._paired([2.0, 3.0, 6.0], [1.0, 2.0, 4.0]) == " 1.50x [1.50 - 2.00]"
