"""A million records (issue 28): the read limits docs/validation.md tells a user with 1,000,000 records to set
(bench/million_bench.MILLION, ten times each default) hold such a repository with room to spare,
where the defaults refuse it. Measured at 1/1000 scale: 1,000 records of the benchmark's shape
against every limit divided by 1,000 (bytes, documents and nodes all grow with the records)."""

from __future__ import annotations

import dataclasses
import importlib.util
import pathlib
import sys
from types import ModuleType

from agent import cli
from agent.load import loader
from agent.model.limits import Limits
from agent.sources import localdir
from tests.conftest import ROOT

FLAGS = ["--namespace", "dns", "--allowed-namespaces", "*"]


def _bench(name: str) -> ModuleType:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "bench"))


def _thousand(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    root.mkdir()
    _bench("parse_bench").generate(root, 1_000, zones=10)
    return root


def _scaled(limits: Limits, factor: float) -> Limits:
    return Limits(**{f.name: max(1, int(getattr(limits, f.name) * factor)) for f in dataclasses.fields(Limits)
                     if f.name != "max_file_bytes"})  # one file holds 100 records at any scale


def _refusals(root: pathlib.Path, limits: Limits) -> list[str]:
    manifest = loader.load_files(localdir.files(root), default_namespace="dns", limits=limits)
    return [str(p) for p in manifest.problems if "raise the limit" in str(p)]


def test_the_million_settings_hold_a_million_records_twice_over(tmp_path: pathlib.Path) -> None:
    root = _thousand(tmp_path)
    million = _bench("million_bench").MILLION
    assert _refusals(root, _scaled(million, 1 / 1000)) == []
    assert _refusals(root, _scaled(million, 1 / 2000)) == []  # 2,000,000 records would fit too


def test_the_defaults_refuse_a_million_records_and_say_which_limit(tmp_path: pathlib.Path) -> None:
    refused = _refusals(_thousand(tmp_path), _scaled(Limits(), 1 / 1000))
    assert len(refused) == 1 and "--max-" in refused[0], refused


def test_the_million_flags_are_what_validate_takes(tmp_path: pathlib.Path) -> None:
    flags = _bench("million_bench").limit_flags()
    assert flags == ["--max-revision-bytes", str(640 * 1024 * 1024), "--max-documents", "2500000",
                     "--max-nodes", "50000000"]
    assert cli.main(["validate", str(_thousand(tmp_path)), *FLAGS, *flags, "-q"]) == 0


def test_a_long_line_prefix_is_found_where_multiline_start_of_line_finds_it() -> None:
    """load/readbudget.py looks for a line starting with 24 of ' \\t?:-' as `^...` in MULTILINE mode does, only
    faster: the same answer on texts made of those characters, newlines and long indents."""
    import random
    import re

    from agent.load import readbudget

    reference = re.compile(r"^[ \t?:-]{24,}", re.M)
    chance = random.Random(26)
    for _ in range(5000):
        text = "".join(chance.choice(" \t?:-\nab") for _ in range(chance.randint(0, 80)))
        text = text.replace("ab", "\n" + chance.choice(" -") * chance.randint(20, 26))
        found = bool(readbudget._LONG_PREFIX.match(text) or readbudget._LONG_PREFIX_LINE.search(text))
        assert found == bool(reference.search(text)), repr(text)
