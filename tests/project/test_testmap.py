"""tests/README.md, the map of the tests, stays true: its unit-test section is what scripts/testmap writes
from the code, every integration, e2e, support and project file has its line and every path it names
exists; no file under tests/ is named after a round of review or an attack, and no test file imports
another. Each check is also shown failing on a broken page or tree, so that none of them passes by
looking at nothing."""

from __future__ import annotations

import pathlib

from tests.conftest import ROOT
from tests.support import testmap

PAGE = (ROOT / testmap.PAGE).read_text()


def test_the_unit_section_is_what_the_generator_writes() -> None:
    generated = testmap.section(ROOT)
    assert testmap.page_section(PAGE) == generated, "tests/README.md is stale: run scripts/testmap and commit it"


def test_the_unit_section_lists_every_module_and_every_unit_test_file() -> None:
    generated = testmap.section(ROOT)
    for path in sorted((ROOT / "agent").rglob("*.py")):
        layer = path.parent.relative_to(ROOT / "agent").parts
        if path.name == "__init__.py" or len(layer) > 1:
            continue  # a package's __init__ has a line when it holds code; a subpackage has one line
        heading = f"### agent/{layer[0] + '/' if layer else ''}\n"
        block = generated.split(heading)[1].split("### ")[0]
        assert f"- `{path.name}`:" in block, path
    for folder in testmap.LAYERS[1:]:
        for test in sorted((ROOT / "tests" / folder).glob("test_*.py")):
            assert f"`{folder}/{test.name}`" in generated, test


def test_a_hand_edited_unit_section_is_caught() -> None:
    edited = PAGE.replace("`run/test_decide.py`", "`run/test_decide_round2.py`", 1)
    assert edited != PAGE
    assert testmap.page_section(edited) != testmap.section(ROOT)


def test_a_module_named_after_by_its_longest_stem() -> None:
    stems = ["render", "render_json", "changes"]
    assert testmap._named_after(pathlib.Path("test_render_json.py"), stems) == "render_json"
    assert testmap._named_after(pathlib.Path("test_render_markdown_escaping.py"), stems) == "render"
    assert testmap._named_after(pathlib.Path("test_changes_whole.py"), stems) == "changes"
    assert testmap._named_after(pathlib.Path("test_changeset.py"), stems) is None


def test_every_hand_described_file_has_its_line_and_every_named_path_exists() -> None:
    assert testmap.unlisted(PAGE, ROOT) == []
    assert testmap.stale(PAGE, ROOT) == []


def test_a_missing_line_is_caught() -> None:
    line = next(line for line in PAGE.splitlines() if line.startswith("- `test_leader_election.py`:"))
    assert testmap.unlisted(PAGE.replace(line + "\n", ""), ROOT) == ["tests/integration/test_leader_election.py"]
    support = next(line for line in PAGE.splitlines() if line.startswith("- `soaserver.py`:"))
    assert testmap.unlisted(PAGE.replace(support + "\n", ""), ROOT) == ["tests/support/soaserver.py"]


def test_a_stale_path_is_caught() -> None:
    renamed = PAGE.replace("- `test_leader_election.py`:", "- `test_adversary_s25.py`:", 1)
    assert testmap.stale(renamed, ROOT) == ["test_adversary_s25.py (in tests/integration/)"]
    prose = PAGE.replace("`tests/conftest.py`", "`tests/run/test_memory_take_over.py`", 1)
    assert testmap.stale(prose, ROOT) == ["tests/run/test_memory_take_over.py"]


def test_no_file_is_named_after_a_round_or_an_attack() -> None:
    assert testmap.round_names(ROOT) == []


def test_a_file_named_after_a_round_or_an_attack_is_caught(tmp_path: pathlib.Path) -> None:
    names = ["test_adversary_s25.py", "test_trust2_leases.py", "test_recalled_world_2.py", "test_pods_round2.py",
             "test_the_attack.py", "test_dnsobserve_memory.py", "test_soaserials.py", "000_arecord.yaml"]
    for name in names:
        (tmp_path / "tests" / "run").mkdir(parents=True, exist_ok=True)
        (tmp_path / "tests" / "run" / name).write_text("")
    assert testmap.round_names(tmp_path) == sorted(f"tests/run/{name}" for name in names[:5])


def test_no_test_file_imports_another() -> None:
    assert testmap.imports_between_tests(ROOT) == []


def test_a_test_file_importing_another_is_caught(tmp_path: pathlib.Path) -> None:
    (tmp_path / "tests" / "run").mkdir(parents=True)
    (tmp_path / "tests" / "run" / "test_a.py").write_text(
        "from tests.conftest import ROOT\nfrom tests.support import kube\nimport tests.support.bind\n"
        "from tests.run.test_b import world\nfrom tests import run\nfrom . import test_c\n"
        "def test_x():\n    import tests.load.test_loader\n")
    assert testmap.imports_between_tests(tmp_path) == [
        "tests/run/test_a.py: tests.run.test_b", "tests/run/test_a.py: tests.run", "tests/run/test_a.py: .",
        "tests/run/test_a.py: tests.load.test_loader"]
