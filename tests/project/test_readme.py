"""The README a newcomer reads first: short, one name, the two commands of a fresh clone near the top, and
a first zone whose YAML, copied into files of a new directory, validates and plans as the README says."""

from __future__ import annotations

import json
import pathlib
import re

import pytest

from tests.conftest import ROOT
from tests.support.firstzone import README, check_first_zone, run_agent, yaml_files


def test_the_readme_first_zone_validates_and_plans_from_a_fresh_directory(tmp_path: pathlib.Path) -> None:
    files = yaml_files(README.read_text())
    assert sorted(files) == ["cluster.yaml", "records.yaml", "zone.yaml"], sorted(files)
    check_first_zone(files, tmp_path)


def test_the_readme_plan_line_says_what_the_plan_of_the_first_zone_holds(tmp_path: pathlib.Path) -> None:
    """The comment beside `bindy-agent plan my-dns` counts objects, servers and records as the plan does."""
    text = README.read_text()
    said = re.search(r"bindy-agent plan my-dns +# (\d+) Kubernetes objects, the zone on (\d+) servers, (\d+) records",
                     text)
    assert said, "the README's plan line of the first zone"
    (tmp_path / "my-dns").mkdir()
    for name, body in yaml_files(text).items():
        (tmp_path / "my-dns" / name).write_text(body)
    plan = json.loads(run_agent("plan", "my-dns", "-o", "json", cwd=tmp_path).stdout)
    counted = [sum(c["layer"] == layer for c in plan["changes"]) for layer in ("kubernetes", "zones", "records")]
    assert counted == [int(n) for n in said.groups()]


def test_the_readme_is_short_has_one_name_and_starts_with_the_two_commands_of_a_fresh_clone() -> None:
    text = README.read_text()
    lines = text.splitlines()
    assert len(lines) <= 250, len(lines)
    assert lines[0].startswith("# bindy-agent"), lines[0]
    assert "bindy-gitops" not in text.split("## Install in a cluster")[0]  # the tool has one name
    top = "\n".join(lines[:20])
    assert "scripts/venv && .venv/bin/bindy-agent plan sample-repo" in top
    assert re.search(r"^ +scripts/test +#", top, re.MULTILINE), "the whole suite, as CI runs it"
    assert "[sample-repo/README.md](sample-repo/README.md)" in text


# docs/development.md is for people working on the agent: it names test commands and files
USER_PAGES = [README, *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "development.md")]


@pytest.mark.parametrize("page", USER_PAGES, ids=lambda p: p.name)
def test_user_docs_carry_no_issue_numbers_or_test_file_lists(page: pathlib.Path) -> None:
    text = page.read_text()
    assert not re.search(r"\bissues? #?\d+", text, re.IGNORECASE), re.search(r".*\bissues? #?\d+.*", text).group(0)
    assert not re.search(r"\b(this|last|earlier|previous) session\b", text, re.IGNORECASE), "development history"
    assert not re.search(r"tests/[\w/]+\.py|test_\w+\.py", text), re.search(r".*test_\w+\.py.*", text).group(0)


def test_the_scripts_the_readme_names_exist_and_ci_runs_the_whole_suite() -> None:
    """`scripts/test` is what CI runs (.ci/run): it installs what the suite needs and runs all of pytest."""
    assert re.search(r"^scripts/test ", (ROOT / ".ci" / "run").read_text(), re.MULTILINE)
    script = (ROOT / "scripts" / "test").read_text()
    assert "scripts/install-test-deps" in script and "scripts/venv" in script
    assert re.search(r"^exec \.venv/bin/pytest \"\$@\"$", script, re.MULTILINE)


def test_every_link_of_the_readme_leads_to_a_file_of_the_repository() -> None:
    """The README is read on the forge, where MkDocs' strict build does not check it."""
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert len(local) >= 15, local
    assert not [link for link in local if not (ROOT / link).exists()]
