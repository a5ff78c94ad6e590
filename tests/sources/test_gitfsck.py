"""A Git tree whose listed paths are not what git shows (agent/sources/gitfsck.py): an entry named with a
slash, a duplicate, `.` or `..`, or trees out of git's order - at the path read or above it - is refused as
`git fsck --strict` refuses it, and the next good commit plans; a deep tree with one broken link is refused
quickly. Real git in temporary directories, through the CLI."""

from __future__ import annotations

import pathlib
import subprocess

import pytest

from agent.sources.git import GitSource
from tests.support import clirun, rawtree, samplegit
from tests.support.gitremote import GitRemote
from tests.support.rawtree import WEB
from tests.support.samplegit import EXTRA

repo = samplegit.repo  # the fixture, shared


DELTA_ERROR = 1  # plan's error status (0: planned)


def _evil_web(repo: GitRemote) -> str:
    return (repo.work / WEB).read_text().replace("192.0.2.10", "192.0.2.66")


def _bad_root(repo: GitRemote, kind: str) -> tuple[list[rawtree.Entry], bytes]:
    """The root tree of main with one entry git refuses, and the name shown in the refusal."""
    root = rawtree.entries(repo.work, "HEAD")
    evil_extra = rawtree.blob(repo.work, EXTRA % "evil")
    below = rawtree.tree(repo.work, [("100644", b"extra.yaml", evil_extra)])
    if kind == "slash":  # lists as records/example-com/web.yaml; git show reads the real one
        return rawtree.with_slash_name(repo.work, _evil_web(repo)), WEB.encode()
    if kind == "duplicate":  # git show reads the first extra.yaml, ls-tree's last one wins a dict
        at = next(i for i, e in enumerate(root) if e[1] == b"extra.yaml")
        return [*root[:at + 1], ("100644", b"extra.yaml", evil_extra), *root[at + 1:]], b"extra.yaml"
    if kind in ("dot", "dotdot"):
        name = b"." if kind == "dot" else b".."
        return [("40000", name, below), *root], name
    assert kind == "unsorted"  # git stops looking for a name where it would have been
    return [*root[::-1]], b"zones"


def _commit_bad_tree(repo: GitRemote, kind: str) -> tuple[str, bytes]:
    entries, name = _bad_root(repo, kind)
    sha = rawtree.commit_on_main(repo.work, entries, f"a {kind} tree")
    repo.push()
    return sha, name


@pytest.mark.parametrize("kind", ["slash", "duplicate", "dot", "dotdot", "unsorted"])  # an empty name cannot be pushed
def test_a_tree_git_would_refuse_is_refused_and_the_next_good_commit_plans(
        repo: GitRemote, tmp_path: pathlib.Path, kind: str) -> None:
    good = repo.head()
    bad, name = _commit_bad_tree(repo, kind)
    if kind == "slash":  # the attack: the agent would read another blob than git shows at that path
        assert "192.0.2.66" not in rawtree.git(repo.work, "show", f"{bad}:{WEB}")
    cache = tmp_path / "plan-cache"
    result = clirun.main("plan", "--repo", repo.url, "--base", good, "--head", bad, "--cache", str(cache))
    assert result.returncode == DELTA_ERROR, result.stderr
    assert f"of commit {bad[:12]} has " in result.stderr, result.stderr
    assert "no file of this revision is read" in result.stderr and "git fsck" in result.stderr
    if kind != "unsorted":
        assert repr(name.decode()) in result.stderr
    assert "192.0.2.66" not in result.stdout + result.stderr and "evil" not in result.stdout

    # the next commit, on top of the bad one, is read (a check at fetch would refuse its history too)
    rawtree.git(repo.work, "read-tree", good)  # the index back at the good tree: the next commit fixes the tree
    rawtree.git(repo.work, "checkout-index", "-a", "-f")
    fixed = repo.commit("fix", {WEB: (repo.work / WEB).read_text().replace("192.0.2.10", "192.0.2.20")})
    repo.push()
    assert rawtree.git(repo.work, "rev-parse", "HEAD^") == bad
    result = clirun.main("plan", "--repo", repo.url, "--base", good, "--head", fixed, "--cache", str(cache),
                         "--detailed-exitcode")
    assert result.returncode == 2, result.stderr  # changes
    assert "192.0.2.20" in result.stdout and "evil" not in result.stdout


def test_a_sync_source_refuses_the_bad_tree_and_reads_the_next_commit(repo: GitRemote, tmp_path: pathlib.Path) -> None:
    source = GitSource(repo.url, tmp_path / "cache")
    assert all(f.refused is None for f in source.fetch().files())
    bad, _ = _commit_bad_tree(repo, "slash")
    snap = source.fetch()
    assert snap.revision == bad
    assert [f.path for f in snap.files()] == ["."] and "of commit" in str(snap.files()[0].refused)
    rawtree.git(repo.work, "read-tree", "HEAD^")
    next_good = rawtree.git(repo.work, "commit-tree", rawtree.git(repo.work, "write-tree"), "-p", bad, "-m", "next")
    rawtree.git(repo.work, "update-ref", "refs/heads/main", next_good)
    repo.push()
    files = source.fetch().files()
    assert files and all(f.refused is None for f in files)
    assert {f.path for f in files} >= {WEB, "extra.yaml"}


def _fast_import(bare: pathlib.Path, script: str) -> None:
    subprocess.run(["git", "-C", str(bare), "fast-import", "--quiet"], input=script.encode(), check=True)


@pytest.mark.timeout(25)  # the old resolver took over 30 s here: it listed every directory of every path
def test_a_deep_tree_with_one_broken_link_is_refused_quickly(tmp_path: pathlib.Path) -> None:
    bare = tmp_path / "deep.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    depth = 1900
    levels = "".join(f"M 100644 :2 {'/'.join(['d'] * i)}/f.txt\n" for i in range(1, depth + 1))
    _fast_import(bare, "blob\nmark :1\ndata 12\nmissing.yaml\nblob\nmark :2\ndata 0\n\n"
                 "commit refs/heads/main\ncommitter t <t@example.com> 0 +0000\ndata 5\nempty\n\n"
                 "commit refs/heads/main\ncommitter t <t@example.com> 1 +0000\ndata 4\ndeep\n"
                 f"{levels}M 120000 :1 {'/'.join(['d'] * depth)}/link.yaml\n\n")
    result = clirun.main("plan", "--repo", str(bare), "--base", "main~1", "--head", "main",
                         "--cache", str(tmp_path / "cache"))
    assert result.returncode == DELTA_ERROR, result.stderr
    assert "link.yaml:1: not read: a symbolic link to a missing file (-> 'missing.yaml')" in result.stderr


@pytest.mark.parametrize("path", ["dns", "x/dns"])
def test_a_tree_git_would_refuse_above_the_path_is_refused(repo: GitRemote, tmp_path: pathlib.Path,
                                                           path: str) -> None:
    # with --path, only the tree at the path and the trees below it were checked: a second `dns` in
    # the commit's own tree (or in `x`) was applied, where a checkout shows the other one
    sample = rawtree.git(repo.work, "rev-parse", "HEAD^{tree}")
    evil = rawtree.tree(repo.work, [("100644", b"extra.yaml", rawtree.blob(repo.work, EXTRA % "evil"))])
    parent, _, name = path.rpartition("/")

    def commit(entries: list[rawtree.Entry], message: str) -> str:
        for step in reversed(parent.split("/") if parent else []):
            entries = [("40000", step.encode(), rawtree.tree(repo.work, entries))]
        return rawtree.commit_on_main(repo.work, entries, message)

    good = commit([("40000", name.encode(), sample)], "the CRs under a path")
    bad = commit([("40000", name.encode(), sample), ("40000", name.encode(), evil)], "a second directory of CRs")
    repo.push()
    cache = tmp_path / "plan-cache"
    result = clirun.main("plan", "--repo", repo.url, "--base", good, "--head", bad, "--path", path, "--cache",
                         str(cache))
    assert result.returncode == DELTA_ERROR, result.stderr
    assert (f"not read: the Git tree {parent or '.'!r} of commit {bad[:12]} has two entries named 'dns', which git "
            "refuses (git fsck: duplicateEntries)") in result.stderr, result.stderr
    assert "evil" not in result.stdout
    same = clirun.main("plan", "--repo", repo.url, "--base", good, "--head", good, "--path", path, "--cache",
                       str(cache))
    assert same.returncode == 0 and "not read" not in same.stderr, same.stderr  # the good tree reads as ever

    source = GitSource(repo.url, tmp_path / "cache", path=path)
    files = source.fetch().files()
    assert [f.path for f in files] == ["."] and f"the Git tree {parent or '.'!r} of commit" in str(files[0].refused)
