"""Shared helpers for unit tests. Integration fixtures (real kube-apiserver, named, git) live in
tests/support and are only imported by tests marked `integration`."""

from __future__ import annotations

import pathlib
import textwrap

import pytest

from agent.load import loader
from agent.load.manifest import Manifest
from agent.sources import localdir

ROOT = pathlib.Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample-repo"


def load_dir(root: pathlib.Path, **kwargs: str) -> Manifest:
    """Loads a local directory the way `bindy-agent validate DIR` does."""
    return loader.load_files(localdir.files(root), **kwargs)


class Repo:
    """A throwaway directory of YAML files, written with `add(path, text)`."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root = root

    def add(self, rel: str, text: str) -> pathlib.Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return path


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> Repo:
    return Repo(tmp_path)
