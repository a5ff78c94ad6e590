"""A `validate` or `plan` process ends once its output is flushed, without the interpreter's teardown
(agent/cli/__init__.py `entry`), with the same output and status as `main`; other verbs and usage errors
end the usual way. Measured in bench/cli_startup_bench.py and bench/plan_stream_bench.py, never timed
here: these tests check what a user can tell apart, in fresh processes."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from tests.support.documents import ZONE

ROOT = pathlib.Path(__file__).resolve().parents[2]


RECORD = """\
apiVersion: bindy.firestoned.io/v1beta1
kind: ARecord
metadata: {name: www, namespace: dns-system}
spec: {zone: example.com, name: www, ipv4Addresses: [192.0.2.1]}
"""


def _python(code: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT,
                          check=False, timeout=120)


def _repo(tmp_path: pathlib.Path, *documents: str) -> pathlib.Path:
    for i, text in enumerate(documents):
        (tmp_path / f"{i}.yaml").write_text(text)
    return tmp_path


END = ("import atexit, sys\n"
       "atexit.register(lambda: print('teardown', file=sys.__stderr__, flush=True))\n"
       "sys.argv = ['bindy-agent', *sys.argv[1:]]\n"
       "from agent import cli\n"
       "cli.entry()\n")


def test_validate_ends_without_the_interpreters_teardown_and_keeps_its_output_and_status(
        tmp_path: pathlib.Path) -> None:
    valid = _python(END, "validate", str(_repo(tmp_path, ZONE)))
    assert valid.returncode == 0
    assert valid.stderr.endswith(f"{tmp_path}: 1 objects in 1 files: valid (1 warnings)\n")
    (tmp_path / "0.yaml").write_text(ZONE.replace("serial: 1,", "serial: -1,"))
    invalid = _python(END, "validate", str(tmp_path))
    assert invalid.returncode == 1
    assert invalid.stderr.endswith("invalid: 1 errors, 0 warnings\n") and "teardown" not in invalid.stderr


def test_a_plan_ends_at_once_with_its_whole_output(tmp_path: pathlib.Path) -> None:
    done = _python(END, "plan", str(_repo(tmp_path, ZONE)), "-o", "json", "--detailed-exitcode")
    assert done.returncode == 2  # changes
    assert json.loads(done.stdout)["summary"] and "teardown" not in done.stderr


@pytest.mark.parametrize("argv", [["--version"], ["validate", "--no-such-flag"], ["schemas", "--check"]],
                         ids=["--version", "a usage error", "another verb"])
def test_other_verbs_and_usage_errors_end_the_usual_way(argv: list[str]) -> None:
    done = _python(END, *argv)
    assert done.stderr.endswith("teardown\n"), done.stderr


def _error_repo(root: pathlib.Path) -> pathlib.Path:
    """Documents with problems of many kinds, and 40 records that are fine."""
    docs = [ZONE, ZONE.replace("serial: 1,", "serial: 1.5,").replace("example-com", "Bad_Name"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n", "- a list\n",
            RECORD.replace("192.0.2.1]", "192.0.2.1, 999.0.0.1]").replace("www}", "www, ttl: 60}"),
            RECORD.replace("name: www,", "name: www, nope: 1,") + "status: {}\n"]
    docs += [RECORD.replace("name: www", f"name: w{i}").replace("192.0.2.1", f"192.0.2.{i + 1}") for i in range(40)]
    (root / "docs.yaml").write_text("---\n".join(docs))
    (root / "broken.yaml").write_text("kind: [unclosed\n")
    (root / "deep.yaml").write_text("a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 30)) + "  " * 30 + "v\n")
    return root


@pytest.mark.parametrize("argv", [["validate", "repo"], ["validate", "repo", "-q"], ["plan", "repo", "-o", "json"],
                                  ["plan", "repo", "-o", "text"]], ids=" ".join)
def test_a_process_that_ends_at_once_writes_what_main_writes(tmp_path: pathlib.Path, argv: list[str]) -> None:
    """The process (`python -m agent`, which ends without the teardown) and `main` called in a process that
    ends the usual way: the same bytes on stdout and stderr, the same status."""
    (tmp_path / "repo").mkdir()
    _error_repo(tmp_path / "repo")
    fast = subprocess.run([sys.executable, "-m", "agent", *argv], capture_output=True, cwd=tmp_path, check=False,
                          timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    code = "import sys\nfrom agent import cli\nsys.exit(cli.main(sys.argv[1:]))\n"
    usual = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, cwd=tmp_path, check=False,
                           timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert fast.returncode == usual.returncode and fast.returncode in (1, 2)
    assert fast.stderr == usual.stderr and b"repo/docs.yaml:" in fast.stderr
    assert fast.stdout == usual.stdout
