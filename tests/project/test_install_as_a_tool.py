"""bindy-agent installed as a Python tool is: `python -m build` makes an sdist and a wheel from a clean
checkout (the wheel from the sdist, as build does by default), the wheel goes into a new venv with its
runtime dependencies only, and from there `bindy-agent version` names the commit it was built from and
`bindy-agent plan` plans. No test tool is installed, and every module of the package imports without one."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import tarfile
import tomllib
import zipfile

from packaging.requirements import Requirement

from tests.conftest import ROOT, SAMPLE
from tests.support import cijob

PYTHON = pathlib.Path(sys.executable)


def _run(*argv: str | pathlib.Path, cwd: pathlib.Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def _checkout(tmp: pathlib.Path) -> tuple[pathlib.Path, str]:
    """A fresh clone's files, committed: the commit a build from it must name."""
    src = cijob.source_copy(tmp / "src")
    git = ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "release"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    return src, subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


def _test_tools() -> set[str]:
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    return {Requirement(r).name.lower().replace("_", "-") for r in extra}


def test_the_wheel_from_the_sdist_installs_the_cli_with_its_runtime_dependencies_only(tmp_path: pathlib.Path) -> None:
    src, commit = _checkout(tmp_path)
    env = cijob.job_environment(tmp_path)
    built = _run(PYTHON, "-m", "build", "--outdir", tmp_path / "dist", src, cwd=tmp_path, env=env)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    [sdist] = (tmp_path / "dist").glob("bindy_agent-*.tar.gz")
    [wheel] = (tmp_path / "dist").glob("bindy_agent-*-py3-none-any.whl")
    stamp = {"gitCommit": commit, "gitTreeState": "clean"}
    with tarfile.open(sdist) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("/agent/_build.json"))
        assert json.load(tar.extractfile(member)) == stamp  # type: ignore[arg-type]
    with zipfile.ZipFile(wheel) as zf:
        assert json.loads(zf.read("agent/_build.json")) == stamp
        assert not any(n.startswith(("tests/", "bench/", "templates/")) for n in zf.namelist())

    venv = tmp_path / "tool"
    assert _run(PYTHON, "-m", "venv", venv, cwd=tmp_path, env=env).returncode == 0
    installed = _run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", wheel, cwd=tmp_path, env=env)
    assert installed.returncode == 0, installed.stderr[-3000:]

    listed = _run(venv / "bin" / "python", "-m", "pip", "list", "--format", "json", cwd=tmp_path, env=env)
    present = {p["name"].lower().replace("_", "-") for p in json.loads(listed.stdout)}
    assert "bindy-agent" in present and "kubernetes" in present
    assert present & _test_tools() == set()

    tool = venv / "bin" / "bindy-agent"
    shown = _run(tool, "version", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[:3] == ["bindy-agent 0.1.0", f"commit: {commit} (clean)",
                                             "CRD API version: bindy.firestoned.io/v1beta1"]
    as_json = json.loads(_run(tool, "version", "-o", "json", cwd=tmp_path, env=env).stdout)
    assert {k: as_json[k] for k in ("version", "gitCommit", "gitTreeState", "crdApiVersion")} == {
        "version": "0.1.0", **stamp, "crdApiVersion": "bindy.firestoned.io/v1beta1"}

    planned = _run(tool, "plan", SAMPLE, cwd=tmp_path, env=env)
    assert planned.returncode == 0, planned.stderr
    assert planned.stdout.endswith("Plan: 65 to create, 0 to update, 0 to delete.\n")

    every = ("import importlib, pkgutil, agent\n"
             "names = [m.name for m in pkgutil.walk_packages(agent.__path__, 'agent.') if m.name != 'agent.__main__']\n"
             "[importlib.import_module(n) for n in names]\nprint(len(names))\n")
    imported = _run(venv / "bin" / "python", "-c", every, cwd=tmp_path, env=env)
    assert imported.returncode == 0, imported.stderr[-3000:]
    assert int(imported.stdout) > 150


def test_pip_install_of_a_fresh_clone_gives_the_cli_and_no_test_tool(tmp_path: pathlib.Path) -> None:
    """`pip install .` in a new venv (what `pipx install .` does in a venv of its own)."""
    src, commit = _checkout(tmp_path)
    env = cijob.job_environment(tmp_path)
    venv = tmp_path / "venv"
    assert _run(PYTHON, "-m", "venv", venv, cwd=tmp_path, env=env).returncode == 0
    installed = _run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", ".", cwd=src, env=env)
    assert installed.returncode == 0, installed.stderr[-3000:]
    listed = _run(venv / "bin" / "python", "-m", "pip", "list", "--format", "json", cwd=tmp_path, env=env)
    assert {p["name"].lower().replace("_", "-") for p in json.loads(listed.stdout)} & _test_tools() == set()
    shown = _run(venv / "bin" / "bindy-agent", "version", cwd=tmp_path, env=env)
    assert shown.stdout.splitlines()[1] == f"commit: {commit} (clean)", shown.stdout + shown.stderr
    planned = _run(venv / "bin" / "bindy-agent", "plan", "sample-repo", cwd=src, env=env)
    assert planned.returncode == 0 and planned.stdout.endswith("Plan: 65 to create, 0 to update, 0 to delete.\n")


def test_a_source_checkout_names_its_commit_and_whether_it_changed(tmp_path: pathlib.Path) -> None:
    """An editable install (scripts/venv) has no build stamp: `version` asks git about the checkout."""
    done = subprocess.run([str(PYTHON.parent / "bindy-agent"), "version", "-o", "json"], capture_output=True,
                          text=True, cwd=tmp_path)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    changed = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                             capture_output=True, text=True).stdout.strip()
    shown = json.loads(done.stdout)
    assert (shown["gitCommit"], shown["gitTreeState"]) == (head, "dirty" if changed else "clean")
