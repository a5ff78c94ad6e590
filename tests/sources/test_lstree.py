"""A "tree bomb": a commit of a few KB whose folders name the same folders over and over lists
billions of paths. The revision is refused with one clear refusal, quickly and in bounded memory,
whether its trees are read in process or listed by `git ls-tree` (a tree git would refuse)."""

from __future__ import annotations

import pathlib
import subprocess
import time

import pytest

from agent.sources import gittree, lstree
from agent.sources.git import GitSource
from tests.support.gitremote import GitRemote


def _mktree(remote: GitRemote, lines: list[str]) -> str:
    return subprocess.run(["git", "-C", str(remote.work), "mktree"], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, check=True).stdout.strip()


def _bomb(remote: GitRemote, levels: int, *, twice: bool = False) -> str:
    """A commit whose tree holds 10**levels copies of one file (a name listed twice at the top: a
    tree git would refuse, so `ls-tree` lists it)."""
    blob = subprocess.run(["git", "-C", str(remote.work), "hash-object", "-w", "--stdin"], input="x: 1\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    tree = _mktree(remote, [f"100644 blob {blob}\tf{i}.yaml" for i in range(10)])
    for _ in range(levels - 1):
        tree = _mktree(remote, [f"040000 tree {tree}\td{i}" for i in range(10)])
    if twice:
        tree = subprocess.run(["git", "-C", str(remote.work), "mktree", "--missing"],
                              input=f"040000 tree {tree}\tx\n040000 tree {tree}\tx\n",
                              capture_output=True, text=True, check=True).stdout.strip()
    commit = remote.cmd("commit-tree", tree, "-m", "bomb")
    remote.cmd("update-ref", "refs/heads/main", commit)
    remote.push(force=True)
    return commit


@pytest.mark.parametrize("twice", [False, True], ids=["read in process", "listed by ls-tree"])
def test_a_tree_bomb_is_refused_whole_and_quickly(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
                                                   twice: bool) -> None:
    monkeypatch.setattr(lstree, "MAX_PATHS", 20_000)
    monkeypatch.setattr(gittree, "MAX_PATHS", 20_000)
    monkeypatch.setattr(lstree, "MAX_LISTING_BYTES", 2_000_000)  # ~20,000 paths of ls-tree's output
    remote = GitRemote(tmp_path / "git")
    remote.commit("first", {"a.yaml": "x: 1\n"})
    remote.push()
    _bomb(remote, 7, twice=twice)  # 10,000,000 files
    started = time.monotonic()
    files = GitSource(remote.url, tmp_path / "cache").fetch().files()
    assert time.monotonic() - started < 30
    assert len(files) == 1 and files[0].refused is not None
    assert "lists more than 20,000 paths" in files[0].refused, files[0].refused


def test_a_large_ordinary_tree_is_listed_in_full(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gittree, "MAX_PATHS", 20_000)
    remote = GitRemote(tmp_path / "git")
    remote.commit("first", {"a.yaml": "x: 1\n"})
    remote.push()
    _bomb(remote, 4)  # 10,000 files: under the bound
    files = GitSource(remote.url, tmp_path / "cache").fetch().files()
    assert len(files) == 10_000 and not any(f.refused for f in files)


def test_a_tree_of_long_folder_names_is_refused_before_its_paths_fill_memory(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """10 folders a level, 3 levels, names of 2,000 bytes: 1,110 paths, but 6.7 MB of path names
    (with 40 KB names, a 0.1 MB repository made 2.4 GB of memory before the bound on bytes)."""
    monkeypatch.setattr(gittree, "MAX_LISTING_BYTES", 1_000_000)
    remote = GitRemote(tmp_path / "git")
    remote.commit("first", {"a.yaml": "x: 1\n"})
    remote.push()
    blob = subprocess.run(["git", "-C", str(remote.work), "hash-object", "-w", "--stdin"], input="x: 1\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    tree = _mktree(remote, [f"100644 blob {blob}\tf{i}.yaml" for i in range(10)])
    for level in range(3):
        tree = _mktree(remote, [f"040000 tree {tree}\t{chr(97 + i) * 250}{level}{'x' * 1750}" for i in range(10)])
    remote.cmd("update-ref", "refs/heads/main", remote.cmd("commit-tree", tree, "-m", "long names"))
    remote.push(force=True)
    files = GitSource(remote.url, tmp_path / "cache").fetch().files()
    assert len(files) == 1 and files[0].refused is not None and "MiB of path names" in files[0].refused
