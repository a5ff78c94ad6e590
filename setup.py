"""The one build step pyproject.toml cannot say: the commit a build is made from, written into the
package as agent/_build.json, so that `bindy-agent version` of an installed wheel can tell it (a
source checkout asks git instead).

The commit comes from BINDY_AGENT_BUILD_COMMIT when set (a container build has no .git), else from
the file an sdist carries, else from git in the directory of this file, else it is "unknown".
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = pathlib.Path(__file__).resolve().parent
BUILD_INFO = pathlib.Path("agent", "_build.json")
UNKNOWN = {"gitCommit": "unknown", "gitTreeState": "unknown"}


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(HERE), *args], capture_output=True, text=True,
                          check=True, timeout=30)
    return done.stdout.strip()


def _from_git() -> dict[str, str]:
    try:
        if pathlib.Path(_git("rev-parse", "--show-toplevel")).resolve() != HERE:
            return UNKNOWN  # an unpacked source tree inside some other repository
        commit = _git("rev-parse", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    return {"gitCommit": commit, "gitTreeState": "dirty" if dirty else "clean"}


def build_info() -> dict[str, str]:
    given = os.environ.get("BINDY_AGENT_BUILD_COMMIT", "").strip()
    if given:
        state = os.environ.get("BINDY_AGENT_BUILD_TREE_STATE", "clean")
        return {"gitCommit": given, "gitTreeState": state}
    carried = HERE / BUILD_INFO
    if carried.is_file():
        return dict(json.loads(carried.read_text()))
    return _from_git()


def _write(target: pathlib.Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(build_info(), sort_keys=True) + "\n")


class BuildPy(build_py):
    """build_py, then the build's commit into the built package (not in an editable install, whose
    package is the source tree: there, `version` asks git)."""

    def run(self) -> None:
        super().run()
        if not getattr(self, "editable_mode", False):
            _write(pathlib.Path(self.build_lib) / BUILD_INFO)


class Sdist(sdist):
    """sdist, carrying the commit: a wheel built from the sdist has no .git to ask."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        target = pathlib.Path(base_dir) / BUILD_INFO
        if target.exists():
            target.unlink()  # a hard link to the source tree's file: write a new file, not into it
        _write(target)


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
