"""`bindy-agent version`: the agent's version, the Git commit it was built from, the CRD API
version.

An installed wheel carries its commit in agent/_build.json, written by the build (setup.py); a
source checkout (an editable install) asks git, and says whether the work tree has changes.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform
import subprocess
import sys

import agent
from agent.cli import common, flagsets
from agent.model import kinds

UNKNOWN = {"gitCommit": "unknown", "gitTreeState": "unknown"}
EXAMPLES = flagsets.examples(
    ("the version, the commit and the CRD API version", "bindy-agent version"),
    ("the same as JSON, for a script", "bindy-agent version -o json"))


def build(add: common.AddVerb) -> None:
    v = add(description="Print the version of bindy-agent, the Git commit it was built from (and "
            "whether the tree had changes: clean, dirty, or unknown), and the API version of the "
            "Bindy CRDs it reads and writes.", epilog=EXAMPLES)
    v.set_defaults(func=show)
    v.add_argument("-o", "--output", choices=["text", "json"], default="text",
                   help="format (default: %(default)s)")


def _git(root: pathlib.Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True, timeout=30).stdout.strip()


def _from_checkout(package: pathlib.Path) -> dict[str, str]:
    """The commit of the source checkout the package is imported from (none when it is not one)."""
    root = package.parent
    if not (root / "pyproject.toml").is_file():
        return UNKNOWN
    try:
        if pathlib.Path(_git(root, "rev-parse", "--show-toplevel")).resolve() != root.resolve():
            return UNKNOWN
        commit = _git(root, "rev-parse", "HEAD")
        dirty = _git(root, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    return {"gitCommit": commit, "gitTreeState": "dirty" if dirty else "clean"}


def build_info() -> dict[str, str]:
    """{"gitCommit": ..., "gitTreeState": ...} of this installation."""
    package = pathlib.Path(agent.__file__).resolve().parent
    written = package / "_build.json"
    if written.is_file():
        try:
            info = json.loads(written.read_text())
            return {key: str(info.get(key) or "unknown") for key in UNKNOWN}
        except (OSError, ValueError):
            return UNKNOWN
    return _from_checkout(package)


def info() -> dict[str, str]:
    return {"version": agent.__version__, **build_info(), "crdApiVersion": kinds.API_VERSION,
            "python": platform.python_version()}


def show(args: argparse.Namespace) -> int:
    about = info()
    if args.output == "json":
        sys.stdout.write(json.dumps(about, indent=2) + "\n")
        return common.EXIT_OK
    sys.stdout.write(f"bindy-agent {about['version']}\n"
                     f"commit: {about['gitCommit']} ({about['gitTreeState']})\n"
                     f"CRD API version: {about['crdApiVersion']}\n"
                     f"python: {about['python']}\n")
    return common.EXIT_OK
