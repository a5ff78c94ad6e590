"""The container image, as far as this machine allows (no Docker engine here): the Dockerfile
passes hadolint, copies only files that exist, and the wheel it installs builds and runs."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import zipfile

from tests.conftest import ROOT

BIN = pathlib.Path(sys.executable).parent


def test_dockerfile_passes_hadolint() -> None:
    result = subprocess.run([str(BIN / "hadolint"), str(ROOT / "Dockerfile")], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_is_non_root_and_copies_what_exists() -> None:
    lines = [line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines()]
    assert [line for line in lines if line.startswith("USER ")] == ["USER 10001"]
    assert lines.count('ENTRYPOINT ["bindy-agent"]') == 1
    for line in lines:
        if line.startswith("COPY ") and "--from" not in line:
            for src in line.split()[1:-1]:
                assert (ROOT / src).exists(), src
    assert lines[-1] == 'CMD ["run"]'


def test_the_wheel_builds_and_runs(tmp_path: pathlib.Path) -> None:
    # exactly what the Dockerfile's build stage copies, in a clean directory (no stale build/ output)
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "agent", src / "agent", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",  # isolated, as in the Dockerfile
                    "-w", str(tmp_path / "wheels"), str(src)], check=True, capture_output=True)
    wheel = next((tmp_path / "wheels").glob("bindy_agent-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        entry_points = zf.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "agent/cli/__init__.py" in names and "agent/model/infra.py" in names
    assert "agent/cli.py" not in names
    assert not any(n.startswith(("tests/", "bench/")) for n in names)
    assert "bindy-agent = agent.cli:entry" in entry_points
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)
    run = subprocess.run([sys.executable, "-c", "import agent, sys; print(agent.__file__); "
                          "from agent import cli; sys.exit(cli.main(['plan', sys.argv[1]]))", str(ROOT / "sample-repo")],
                         capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(site)}, check=False)
    assert run.stdout.splitlines()[0].startswith(str(site)), run.stdout[:200]
    assert run.returncode == 0 and run.stdout.rstrip().endswith("Plan: 65 to create, 0 to update, 0 to delete.")
