"""The sample repository plus one TXT record (EXTRA), pushed to a bare remote (fixture `repo`)."""

from __future__ import annotations

import pathlib
import shutil

import pytest

from tests.conftest import SAMPLE
from tests.support.gitremote import GitRemote

EXTRA = ("apiVersion: bindy.firestoned.io/v1beta1\nkind: TXTRecord\nmetadata: {name: verify, namespace: "
         "dns-system, labels: {zone: example-com}}\nspec: {name: _verify, text: [%s]}\n")


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> GitRemote:
    """main: the sample repository and extra.yaml (a TXT record), pushed to a bare remote."""
    git = GitRemote(tmp_path)
    shutil.copytree(SAMPLE, git.work, dirs_exist_ok=True)
    git.commit("the sample", {"extra.yaml": EXTRA % "good"})
    git.push()
    return git
