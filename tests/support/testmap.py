"""tests/README.md kept true: its "Unit tests, by agent module" section written from the code, and the
checks on the rest of the page and on tests/ itself (run by tests/project/test_testmap.py).

The section lists, for each module of agent/ (a subpackage such as `model/recordtypes/` counts as one),
the unit test files named after it (`tests/<layer>/test_<module>[_<aspect>].py`, the longest module name
that is a prefix wins) and the other test files that import it; a module no test file imports is tested
through the agent modules that import it. Only the standard library's `ast` reads the code: nothing is
imported or run. `scripts/testmap` writes the section into the page.
"""

from __future__ import annotations

import ast
import pathlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

PAGE = "tests/README.md"
TITLE = "## Unit tests, by agent module"
MARK = "<!-- Written by scripts/testmap from agent/ and tests/: run it, do not edit this section. -->"
# The order of agent/'s folders on the page: the flow, then what drives it.
LAYERS = ("", "model", "sources", "load", "desired", "clients", "observe", "plan", "gate", "reconcile",
          "outcome", "podready", "run", "cli")
HAND = ("project", "integration", "e2e", "support")  # the folders of tests/ the page describes by hand
SHOWN = 6  # importers shown on a line before "(+N more)"
THROUGH = 3
ROUND_OR_ATTACK = re.compile(r"_s\d+\b|round\d*|trust\d|adversar|attack|_\d+\.py$", re.IGNORECASE)
PATH = re.compile(r"[\w./-]+\.py\b")


@dataclass
class Entry:
    """One line of the section: a module (or a subpackage) of one layer of agent/."""

    layer: str
    name: str  # `hierarchy.py`, `__init__.py`, or `recordtypes/` for a subpackage
    modules: set[str]  # the dotted modules it stands for
    named: list[str] = field(default_factory=list)
    importers: list[str] = field(default_factory=list)
    through: list[str] = field(default_factory=list)
    verbs: list[str] = field(default_factory=list)  # a verb module of cli/: the verbs it adds
    runs: list[str] = field(default_factory=list)  # the test files that run one of them

    @property
    def stem(self) -> str:
        return self.name.removesuffix(".py").removesuffix("/")


def _dotted(root: pathlib.Path, path: pathlib.Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _has_code(path: pathlib.Path) -> bool:
    """An `__init__.py` earns a line when it holds more than its docstring and `from __future__`."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        return True
    return False


def entries(root: pathlib.Path) -> list[Entry]:
    """Every module of agent/ with a line on the page, in the page's order."""
    found: list[Entry] = []
    for layer in LAYERS:
        folder = root / "agent" / layer
        for path in sorted(folder.glob("*.py")):
            if path.name != "__init__.py" or _has_code(path):
                found.append(Entry(layer, path.name, {_dotted(root, path)}))
        for package in sorted(p.parent for p in folder.glob("*/__init__.py")):
            if layer:  # agent/'s own subfolders are the layers themselves
                modules = {_dotted(root, p) for p in package.rglob("*.py")}
                found.append(Entry(layer, package.name + "/", modules))
    return found


def imports_of(path: pathlib.Path, root: pathlib.Path) -> set[str]:
    """The modules of agent/ a file imports (`from agent.x import y` is agent.x.y when y is a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name.split(".")[0] == "agent" and _is_module(root, name)}


def _is_module(root: pathlib.Path, dotted: str) -> bool:
    base = root.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _tests(root: pathlib.Path) -> Iterator[pathlib.Path]:
    """The unit test files (tests/<layer>/) and the project checks: the files whose imports the page lists."""
    for folder in (*LAYERS[1:], "project"):
        yield from sorted((root / "tests" / folder).glob("test_*.py"))


def _named_after(test: pathlib.Path, stems: Iterable[str]) -> str | None:
    """The module a test file is named after: the longest stem with `test_<stem>` or `test_<stem>_...`."""
    name = test.stem.removeprefix("test_")
    fits = [stem for stem in stems if name == stem or name.startswith(stem + "_")]
    return max(fits, key=len) if fits else None


def _cap(items: list[str], shown: int) -> str:
    listed = ", ".join(f"`{item}`" for item in items[:shown])
    return listed + (f" (+{len(items) - shown} more)" if len(items) > shown else "")


def build(root: pathlib.Path) -> tuple[list[Entry], dict[str, list[str]]]:
    """The entries with their tests, and per layer the unit test files named after no module of it."""
    found = entries(root)
    unnamed: dict[str, list[str]] = {}
    for layer in LAYERS[1:]:
        mine = {entry.stem: entry for entry in found if entry.layer == layer and entry.name != "__init__.py"}
        for test in sorted((root / "tests" / layer).glob("test_*.py")):
            stem = _named_after(test, mine)
            if stem is None:
                unnamed.setdefault(layer, []).append(f"{layer}/{test.name}")
            else:
                mine[stem].named.append(f"{layer}/{test.name}")
    tested = {str(test.relative_to(root / "tests")): imports_of(test, root) for test in _tests(root)}
    used = {_dotted(root, path): imports_of(path, root) for path in sorted((root / "agent").rglob("*.py"))}
    for entry in found:
        entry.importers = sorted(test for test, names in tested.items()
                                 if names & entry.modules and test not in entry.named)
        entry.through = sorted(module.removeprefix("agent.") for module, names in used.items()
                               if names & entry.modules and module not in entry.modules)
    _runs(root, found)
    return found, unnamed


def verbs(root: pathlib.Path) -> dict[str, list[str]]:
    """The verbs of `bindy-agent` by the module of agent/cli/ that adds them (`VERBS` of agent/cli/__init__.py)."""
    found: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse((root / "agent/cli/__init__.py").read_text())):
        if isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Dict):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(target, ast.Name) and target.id == "VERBS" for target in targets):
                for key, value in zip(node.value.keys, node.value.values, strict=True):
                    if isinstance(key, ast.Constant) and isinstance(value, ast.Tuple):
                        module = value.elts[1]
                        assert isinstance(module, ast.Constant)
                        found.setdefault(f"{module.value}.py", []).append(str(key.value))
    return found


def _words(path: pathlib.Path) -> set[str]:
    """The strings a test file passes as arguments or lists as a command line (a verb it runs is one of
    them); a parametrize's argument names are not."""
    found: set[str] = set()
    argnames: set[int] = set()
    for node in ast.walk(ast.parse(path.read_text())):  # a call is met before its arguments
        values: list[ast.expr] = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "parametrize":
            argnames.update(id(arg) for arg in node.args[:1])
        elif isinstance(node, ast.Call):
            values = node.args
        elif isinstance(node, ast.List | ast.Tuple) and id(node) not in argnames:
            values = node.elts
        found.update(value.value for value in values
                     if isinstance(value, ast.Constant) and isinstance(value.value, str))
    return found


def _runs(root: pathlib.Path, found: list[Entry]) -> None:
    """Each verb module of cli/ that no test file names or imports: the test files that run its verb."""
    added = verbs(root)
    quiet = [entry for entry in found if entry.layer == "cli" and entry.name in added
             and not entry.named and not entry.importers]
    if not quiet:
        return
    words = {str(path.relative_to(root / "tests")): _words(path)
             for path in sorted((root / "tests").rglob("test_*.py"))}
    for entry in quiet:
        entry.verbs = added[entry.name]
        entry.runs = sorted(test for test, said in words.items() if said & set(entry.verbs))


def _line(entry: Entry) -> str:
    if entry.named:
        text = ", ".join(f"`{test}`" for test in entry.named)
        return text + (f"; also imported by {_cap(entry.importers, SHOWN)}" if entry.importers else "")
    if entry.importers:
        return f"imported by {_cap(entry.importers, SHOWN)}"
    if entry.verbs:
        said = " / ".join(f"`bindy-agent {verb}`" for verb in entry.verbs)
        return f"{said}, run by {_cap(entry.runs, SHOWN)}" if entry.runs else f"{said}, run by no test"
    if entry.through:
        return f"through {_cap(entry.through, THROUGH)}"
    return "no unit test imports it"


def section(root: pathlib.Path) -> str:
    """The page's section "Unit tests, by agent module", from the code."""
    found, unnamed = build(root)
    out = [TITLE, "", MARK, "",
           "Each line: a module of `agent/<layer>/`, the test files named after it (paths under `tests/`), then",
           "the other unit test files and project checks that import it (\"also imported by\"). A module no",
           "test file imports is tested \"through\" the agent modules that import it.", ""]
    for layer in LAYERS:
        out += [f"### agent/{layer + '/' if layer else ''}", ""]
        out += [f"- `{entry.name}`: {_line(entry)}" for entry in found if entry.layer == layer]
        if layer in unnamed:
            out.append(f"- named after no module of `agent/{layer}/`: {_cap(unnamed[layer], 99)}")
        out.append("")
    return "\n".join(out) + "\n"


def page_section(text: str) -> str:
    """The section as the page holds it: from its title to the next `## ` title."""
    start = text.index(TITLE)
    end = text.find("\n## ", start + len(TITLE))
    return text[start:end + 1 if end >= 0 else len(text)]


def write(root: pathlib.Path) -> bool:
    """Puts the generated section into the page; True when the page changed."""
    page = root / PAGE
    text = page.read_text()
    new = text.replace(page_section(text), section(root))
    page.write_text(new)
    return new != text


def _sections(text: str) -> dict[str, str]:
    """The hand-written sections about a folder of tests/ (`## tests/<folder>/...`), by folder."""
    parts = re.split(r"^## ", text, flags=re.MULTILINE)
    found: dict[str, str] = {}
    for part in parts:
        match = re.match(r"tests/(\w+)/", part)
        if match:
            found[match.group(1)] = part
    return found


def _resolve(root: pathlib.Path, folder: str, name: str) -> pathlib.Path:
    if name.startswith("tests/") or (root / name).exists():
        return root / name
    return root / "tests" / (name if "/" in name else f"{folder}/{name}")


def unlisted(text: str, root: pathlib.Path) -> list[str]:
    """The files of tests/project, integration, e2e and support that their section of the page does not name."""
    sections = _sections(text)
    missing: list[str] = []
    for folder in HAND:
        named = {_resolve(root, folder, name) for name in PATH.findall(sections.get(folder, ""))}
        missing += [str(path.relative_to(root)) for path in sorted((root / "tests" / folder).glob("*.py"))
                    if path.name != "__init__.py" and path not in named]
    return missing


def stale(text: str, root: pathlib.Path) -> list[str]:
    """The paths the page names that do not exist: any `tests/...` path, and the files its folder sections name."""
    gone = [path for path in re.findall(r"tests/[\w./-]*\w", text) if not (root / path).exists()]
    for folder, part in _sections(text).items():
        gone += [f"{name} (in tests/{folder}/)" for name in PATH.findall(part)
                 if not _resolve(root, folder, name).exists()]
    return gone


def round_names(root: pathlib.Path) -> list[str]:
    """Files under tests/ named after a round of review or an attack rather than the behaviour they hold."""
    return sorted(str(path.relative_to(root)) for path in (root / "tests").rglob("*")
                  if path.is_file() and "__pycache__" not in path.parts and ROUND_OR_ATTACK.search(path.name))


def imports_between_tests(root: pathlib.Path) -> list[str]:
    """Imports of a test file by another file of tests/: only tests.support and tests.conftest are shared."""
    found: list[str] = []
    for path in sorted((root / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level:
                names = [f"{'.' * node.level}{node.module or ''}"]
            elif isinstance(node, ast.ImportFrom) and node.module in ("tests",):
                names = [f"tests.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [f"{path.relative_to(root)}: {name}" for name in names if _shares_a_test(name)]
    return found


def _shares_a_test(name: str) -> bool:
    if name.startswith("."):
        return True
    parts = name.split(".")
    return parts[0] == "tests" and len(parts) > 1 and parts[1] not in ("support", "conftest")
