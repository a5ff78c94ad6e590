"""The offline plan of sample-repo, its three renderings, and the CLI's exit codes and streams."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

import pytest

from agent import cli
from agent.desired import hierarchy as desired
from agent.plan import build, render
from agent.plan import changes as plan
from tests.conftest import ROOT, SAMPLE, Repo, load_dir


def _sample_plan() -> plan.Plan:
    return build.offline(desired.build(load_dir(SAMPLE)))


def test_offline_plan_lists_every_object_zone_placement_and_rrset() -> None:
    result = _sample_plan()
    layers = [c.target.layer for c in result.changes]
    # 2 instances x 4 children + shared SA + cluster + 2 instances + 3 zones + 23 record CRs
    assert layers.count("kubernetes") == 38
    assert layers.count("zones") == 6  # 3 zones x (1 primary + 1 secondary)
    assert layers.count("records") == 21
    assert result.summary == {"create": 65, "update": 0, "delete": 0}
    secondary = next(c for c in result.changes if isinstance(c.target, plan.ZoneTarget)
                     and c.target.role == "secondary")
    assert secondary.after == {"zoneType": "secondary", "primaries": ["dns-system/dns-primary-0"]}


def test_text_plan_groups_by_layer_and_ends_with_a_summary() -> None:
    text = render.render_text(_sample_plan())
    assert text.index("Kubernetes objects (38):") < text.index("Zones (6):") < text.index("Records (21):")
    assert "  + Deployment dns-system/dns-primary-0\n" in text
    assert "  + example.com. on dns-system/dns-secondary-0 (secondary)  primaries: dns-system/dns-primary-0" in text
    assert "    + www.example.com. 300 A 192.0.2.10, 192.0.2.11, 192.0.2.12\n" in text
    assert text.endswith("Plan: 65 to create, 0 to update, 0 to delete.\n")


def test_json_plan_has_the_documented_stable_shape_and_no_secret() -> None:
    doc = json.loads(render.render_json(_sample_plan()))
    assert list(doc) == ["formatVersion", "revision", "summary", "changes", "conflicts", "problems"]
    assert doc["formatVersion"] == 1
    first = doc["changes"][0]
    assert list(first) == ["action", "layer", "target", "before", "after", "fields", "reason"]
    rrset = next(c for c in doc["changes"] if c["layer"] == "records")
    assert list(rrset["target"]) == ["zone", "name", "type"]
    secrets = [c["after"] for c in doc["changes"] if c["target"].get("kind") == "Secret"]
    assert secrets and all(set(s["stringData"].values()) <= {"<secret>", "hmac-sha256"} or
                           s["stringData"]["secret"] == "<secret>" for s in secrets)


def test_secret_values_are_masked_even_when_present() -> None:
    body = {"kind": "Secret", "data": {"secret": "c2VjcmV0"}, "stringData": {"k": "v"}}
    assert plan.mask_secrets(body) == {"kind": "Secret", "data": {"secret": "<secret>"},
                                       "stringData": {"k": "<secret>"}}


def test_markdown_plan_has_tables_per_layer() -> None:
    md = render.render_markdown(_sample_plan())
    assert md.startswith("## bindy-agent plan\n")
    assert "**27 CRs of the repository to apply**: 27 added." in md
    assert "| Generated Kubernetes objects | `+11` | 0 | 0 |" in md
    assert "### DNS records (21)" in md and "| `+` | `www` | `A` | `192.0.2.10, 192.0.2.11, 192.0.2.12` TTL 300 |" in md


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent", *args], capture_output=True, text=True, cwd=ROOT)


def test_cli_plan_exit_codes_and_streams(repo: Repo) -> None:
    changes = _run("plan", "sample-repo")
    assert changes.returncode == 0
    assert changes.stdout.endswith("Plan: 65 to create, 0 to update, 0 to delete.\n")
    assert changes.stderr == ""
    repo.add("empty.yaml", "# nothing yet\n")
    nothing = _run("plan", str(repo.root))
    assert (nothing.returncode, nothing.stdout) == (0, "No changes: the world matches the revision.\n")
    repo.add("bad.yaml", "apiVersion: bindy.firestoned.io/v1beta1\nkind: ARecord\nmetadata: {name: a}\nspec: {}\n")
    bad = _run("plan", str(repo.root))
    assert bad.returncode == 1 and bad.stdout == ""
    assert f"{repo.root}/bad.yaml:4: ARecord/dns-system/a: spec.name: required field is missing" in bad.stderr


def test_cli_validate_exit_codes(repo: Repo) -> None:
    ok = _run("validate", "sample-repo")
    assert (ok.returncode, ok.stdout) == (0, "")
    assert ok.stderr == "sample-repo: 27 objects in 9 files: valid (0 warnings)\n"
    repo.add("bad.yaml", "apiVersion: bindy.firestoned.io/v1beta1\nkind: Nope\nmetadata: {name: a}\n")
    assert _run("validate", str(repo.root)).returncode == 1
    usage = _run("validate", "/does/not/exist")
    assert usage.returncode == 2 and "is not a directory" in usage.stderr


@pytest.mark.parametrize("verb", ["validate", "plan", "schemas"])
def test_every_verb_has_help(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main([verb, "--help"])
    assert exit_.value.code == 0
    assert f"usage: bindy-agent {verb}" in capsys.readouterr().out


def test_console_script_and_module_agree() -> None:
    script = pathlib.Path(sys.executable).parent / "bindy-agent"
    a = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    b = _run("--version")
    assert a.stdout == b.stdout == "bindy-agent 0.1.0\n"


def test_pure_layers_import_no_io_library() -> None:
    lint = pathlib.Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(lint), "--no-cache"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_pure_layers_send_no_dns_messages() -> None:
    """import-linter cannot forbid submodules of external packages, so check dns.query here."""
    import ast

    pure = ["model", "load", "desired", "plan", "gate"]
    files = [f for layer in pure for f in (ROOT / "agent" / layer).glob("*.py")]
    assert len(files) > 15
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith(("dns.query", "dns.resolver", "dns.asyncquery", "socket")), (
                    f"{path.name} imports {name}")



def _codes(text: str, row: str) -> tuple[int, ...]:
    """The three exit codes (no changes, changes, error) on the line of a table that starts with `row`."""
    found = re.search(rf"^{re.escape(row)}\W+(\d)\W+(\d)\W+(\d)\W*$", text, re.MULTILINE)
    assert found, f"no row {row!r}"
    return tuple(int(n) for n in found.groups())


def test_plan_has_one_exit_convention_and_terraforms_detailed_codes_on_request(repo: Repo) -> None:
    """`plan DIR` and `plan --base/--base-dir` exit alike: 0 planned (changes or not), 1 error, as kubectl and flux
    verbs do; --detailed-exitcode gives terraform's 0 no changes, 1 error, 2 changes. The help and the docs'
    table (docs/commands.md) say so."""
    empty = repo.root / "empty"
    empty.mkdir()
    bad = repo.add("bad/a.yaml", "apiVersion: bindy.firestoned.io/v1beta1\nkind: Nope\nmetadata: {name: a}\n").parent

    def codes(*flags: str) -> list[tuple[int, ...]]:  # (no changes, changes, error) of plan DIR, then of a delta
        return [tuple(_run("plan", str(d), *flags).returncode for d in (empty, SAMPLE, bad)),
                tuple(_run("plan", str(SAMPLE), "--base-dir", str(b), *flags).returncode for b in (SAMPLE, empty))
                + (_run("plan", str(bad), "--base-dir", str(SAMPLE), *flags).returncode,)]

    assert codes() == [(0, 0, 1), (0, 0, 1)]
    assert codes("--detailed-exitcode") == [(0, 2, 1), (0, 2, 1)]
    usage = _run("plan", str(SAMPLE), "--no-such-flag", "--detailed-exitcode")
    assert usage.returncode == 1 and "unrecognized arguments" in usage.stderr
    shown = " ".join(_run("plan", "--help").stdout.split())
    assert ("Exit status: 0 planned, with or without changes; 1 error (usage, an invalid revision, Git, the cluster). "
            "With --detailed-exitcode (as terraform plan): 0 no changes, 1 error, 2 changes.") in shown
    page = (ROOT / "docs" / "commands.md").read_text()
    assert "| exit status | no changes | changes | error |" in page
    assert [_codes(page, "| `plan`, `plan --base REV`, `plan DIR --base-dir OLD`, `ci-plan` |")] == [codes()[0]]
    assert [_codes(page, "| the same with `--detailed-exitcode` (like `terraform plan -detailed-exitcode`) |")] == [
        codes("--detailed-exitcode")[0]]


def test_an_offline_plan_loads_no_cluster_or_http_client() -> None:
    """`plan DIR` starts without the Kubernetes and HTTP client libraries (0.35 s and 22 MB of
    imports); they are loaded by the runs that talk to a cluster or a server."""
    code = ("import sys; from agent import cli; code = cli.main(['plan', sys.argv[1]]); "
            "print(code, sorted({m.split('.')[0] for m in sys.modules} & {'kubernetes', 'httpx', 'apscheduler', 'waitress'}))")
    done = subprocess.run([sys.executable, "-c", code, str(SAMPLE)], capture_output=True, text=True, cwd=ROOT,
                          check=False, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "0 []", done.stderr[-2000:]
