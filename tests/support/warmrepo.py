"""The sample repository in Git, loaded and expanded as a long-running agent does (file cache, memo),
beside a cold expansion of the same commit: for unit tests that compare warm and cold."""

from __future__ import annotations

import pathlib
import shutil

import git

from agent.desired import hierarchy
from agent.desired.memo import NO_MEMO, Memo
from agent.load import filecache, loader
from agent.sources import gittree
from tests.conftest import SAMPLE


class Warm:
    """The sample repository in Git, loaded and expanded as a long-running agent does (file cache, memo)."""

    def __init__(self, root: pathlib.Path) -> None:
        shutil.copytree(SAMPLE, root)
        self.root, self.repo = root, git.Repo.init(root)
        self.cache, self.memo, self.listing = filecache.FileCache(), Memo(), gittree.Listing()

    def edit(self, path: str, old: str, new: str) -> None:
        file = self.root / path
        assert old in file.read_text()
        file.write_text(file.read_text().replace(old, new))

    def build(self) -> tuple[hierarchy.Desired, hierarchy.Desired]:
        """(warm, cold) expansions of the working tree, committed."""
        self.repo.git.add("-A")
        self.repo.git.commit("-q", "--allow-empty", "-m", "change")
        sha = self.repo.head.commit.hexsha
        warm = hierarchy.build(loader.load_files(gittree.files(self.repo, sha, self.listing), cache=self.cache), self.memo)
        cold = hierarchy.build(loader.load_files(gittree.files(self.repo, sha), cache=filecache.NO_FILES), NO_MEMO)
        return warm, cold
