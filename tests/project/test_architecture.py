"""docs/architecture.md says what the code is: every path it names exists (agent/..., and the files of
each folder's row in its table), every `module.name` and `Class.member` it names is defined in agent/,
and its table of run kinds lists exactly the `Why` members of agent/run/decision.py, each with the
`RunKind` that `KIND_OF` gives it. Each check is also shown failing on a broken page."""

from __future__ import annotations

import ast
import functools
import pathlib
import re

from agent.run.decision import KIND_OF, RunKind, Why
from tests.conftest import ROOT

PAGE = (ROOT / "docs" / "architecture.md").read_text()
AGENT = ROOT / "agent"
EXTENSIONS = {"py", "md", "yml", "yaml", "json", "conf", "txt", "toml", "cfg", "sh", "lock"}
REPO_PATH = re.compile(r"(?<![\w/.-])(?:agent|tests|bench|docs|deploy)/[\w/.-]*\w")
DOTTED = re.compile(r"([A-Za-z_]\w*)\.([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?")


@functools.cache
def _trees() -> dict[pathlib.Path, ast.Module]:
    return {path: ast.parse(path.read_text()) for path in sorted(AGENT.rglob("*.py"))}


def _names(body: list[ast.stmt]) -> set[str]:
    """The names a module or class body defines (functions, classes, assignments, imports)."""
    found: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Assign):
            found.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return found


@functools.cache
def _modules() -> dict[str, list[set[str]]]:
    """Each module's stem (a package: its folder's name), with the names each module of that stem defines."""
    found: dict[str, list[set[str]]] = {}
    for path, tree in _trees().items():
        stem = path.parent.name if path.name == "__init__.py" else path.stem
        found.setdefault(stem, []).append(_names(tree.body))
    return found


@functools.cache
def _classes() -> dict[str, list[set[str]]]:
    """Each class of agent/ by name, with the names its body defines."""
    found: dict[str, list[set[str]]] = {}
    for tree in _trees().values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(_names(node.body))
    return found


def _member(owner: str, name: str) -> bool:
    return any(name in names for names in _classes().get(owner, []))


def unknown_names(text: str) -> list[str]:
    """The `module.name`, `Class.member` and `module.Class.member` at the start of code spans that agent/
    does not define (a file name such as `mkdocs.yml` is not one)."""
    unknown: list[str] = []
    for span in re.findall(r"`([^`]+)`", text):
        match = DOTTED.match(span)
        if match is None:
            continue
        first, second, third = match.groups()
        if second in EXTENSIONS:
            continue
        inside = AGENT.joinpath(*match.group(0).split(".")[1:])
        ok = first == "agent" and (inside.with_suffix(".py").is_file() or inside.is_dir())  # agent.model
        if not ok and first in _modules():
            ok = any(second in names for names in _modules()[first]) and (third is None or _member(second, third))
        if not ok and first in _classes():
            ok = _member(first, second) and third is None
        if not ok:
            unknown.append(match.group(0))
    return unknown


def _folder_rows(text: str) -> dict[str, str]:
    """The rows of the folders table, by folder (`model/`, `run/`, ...)."""
    return {match.group(1): match.group(0) for match in re.finditer(r"^\| `(\w+)/` \|.*$", text, re.MULTILINE)}


def missing_paths(text: str) -> list[str]:
    """The repository paths the page names that do not exist: agent/, tests/, bench/, docs/ or deploy/
    paths anywhere; a folder's row names its files relative to that folder (or to agent/); elsewhere a
    code span `layer/module.py` is a path under agent/ and a bare `module.py` a module of agent/."""
    gone = [path for path in REPO_PATH.findall(text) if not (ROOT / path).exists()]
    rows = _folder_rows(text)
    for folder, row in rows.items():
        for name in re.findall(r"`([\w/]+(?:\.py|/))`", row):
            if name != f"{folder}/" and not ((AGENT / folder / name).exists() or (AGENT / name).exists()):
                gone.append(f"{name} (in the row of {folder}/)")
    rest = text
    for row in rows.values():
        rest = rest.replace(row, "")
    every = {path.name for path in AGENT.rglob("*.py")}
    for name in re.findall(r"`([\w/]+\.py)`", rest):
        found = (AGENT / name).exists() or (ROOT / name).exists() if "/" in name else name in every
        if not found:
            gone.append(name)
    return gone


def run_kind_rows(text: str) -> list[tuple[str, str]]:
    """(kind, why) of each row of the table headed `| kind | why |`."""
    table = text.split("| kind | why |", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|")[1:3] for line in table.splitlines()[2:] if line.startswith("|")]
    return [(kind.strip().strip("`"), why.strip().strip("`")) for kind, why in rows]


def run_kind_problems(text: str) -> list[str]:
    """How the run-kind table differs from agent/run/decision.py: a Why missing, unknown or listed twice,
    a Why under another kind than KIND_OF's, a RunKind that no row shows."""
    rows = run_kind_rows(text)
    whys = [why for _, why in rows]
    wanted = {why.value for why in Why}
    found = [f"missing: {why}" for why in sorted(wanted - set(whys))]
    found += [f"not a Why of decision.py: {why}" for why in whys if why not in wanted]
    found += [f"listed twice: {why}" for why in sorted({w for w in whys if whys.count(w) > 1})]
    found += [f"{why} is a run of {KIND_OF[Why(why)].value}, not {kind}" for kind, why in rows
              if why in wanted and KIND_OF[Why(why)].value != kind]
    found += [f"no row of kind {kind.value}" for kind in RunKind if kind.value not in {k for k, _ in rows}]
    return found


def test_every_path_the_page_names_exists() -> None:
    assert missing_paths(PAGE) == []


def test_every_name_the_page_gives_the_code_is_defined() -> None:
    assert unknown_names(PAGE) == []


def test_the_run_kinds_are_those_of_the_code() -> None:
    assert run_kind_problems(PAGE) == []
    assert len(run_kind_rows(PAGE)) == len(Why)


def test_a_stale_path_is_caught() -> None:
    stale = PAGE.replace("agent/run/decide.py", "agent/run/dnsrounds.py", 1)
    assert missing_paths(stale) == ["agent/run/dnsrounds.py"]
    row = _folder_rows(PAGE)["run"]
    assert missing_paths(PAGE.replace(row, row.replace("`lock.py`", "`pushfirst.py`"))) == [
        "pushfirst.py (in the row of run/)"]
    assert missing_paths(PAGE + "\nSee `run/dnsrounds.py` and `scheduler.py`.\n") == ["run/dnsrounds.py",
                                                                                      "scheduler.py"]


def test_a_name_the_code_does_not_define_is_caught() -> None:
    broken = PAGE + "\n`decide.decide_again`, `Memory.repairing`, `revisions.GitRevisions.pull`, `dnsrounds.again`\n"
    assert unknown_names(broken) == ["decide.decide_again", "Memory.repairing", "revisions.GitRevisions.pull",
                                     "dnsrounds.again"]
    assert unknown_names("`mkdocs.yml`, `run.json`, `decide.decide(state, phase)`") == []


def test_a_run_kind_table_that_differs_from_the_code_is_caught() -> None:
    resync = next(line for line in PAGE.splitlines() if line.startswith("| `reconcile` | `resync` |"))
    assert run_kind_problems(PAGE.replace(resync + "\n", "")) == ["missing: resync"]
    assert run_kind_problems(PAGE.replace(resync, resync.replace("`reconcile`", "`skip`"))) == [
        "resync is a run of reconcile, not skip"]
    assert run_kind_problems(PAGE.replace(resync, resync + "\n" + resync.replace("`resync`", "`repair-later`"))) == [
        "not a Why of decision.py: repair-later"]
    follow = next(line for line in PAGE.splitlines() if line.startswith("| `follow` |"))
    assert run_kind_problems(PAGE.replace(follow + "\n", "")) == ["missing: standby", "no row of kind follow"]
