"""A push's revision read from Git with as few git processes as the work needs (issue 28, closer to
the wire): before the plan, a push starts `ls-remote` and `fetch` only. The commit it fetched, the
commits it skipped, its trees' ids and its listing are read through the repository's open `git
cat-file` (only the trees the last listing did not read), and git's housekeeping after a fetch
waits for the notes' fetch after the writes. What they find is what `rev-parse`, `rev-list` and
`ls-tree` find, whatever the history (linear, merged, shallow) and the tree (links, submodules,
executables, nested directories)."""

from __future__ import annotations

import pathlib
import subprocess
from collections.abc import Iterator

import pytest

from agent.sources import gittree
from agent.sources.git import GitSource
from tests.support.gitremote import GitRemote

TXT = ("apiVersion: bindy.firestoned.io/v1beta1\nkind: TXTRecord\nmetadata: {name: %s, namespace: dns}\n"
       "spec: {name: t.example.com., text: [\"%s\"]}\n")


@pytest.fixture
def remote(tmp_path: pathlib.Path) -> GitRemote:
    return GitRemote(tmp_path / "git")


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """The argv of every process started, git's included (GitPython starts them with Popen)."""
    seen: list[list[str]] = []
    original = subprocess.Popen.__init__

    def record(self: subprocess.Popen[bytes], args: object, *rest: object, **kwargs: object) -> None:
        seen.append([str(a) for a in args] if isinstance(args, list | tuple) else [str(args)])
        original(self, args, *rest, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(subprocess.Popen, "__init__", record)
    yield seen


def _verbs(seen: list[list[str]]) -> list[str]:
    return [argv[1] for argv in seen if argv and argv[0].endswith("git") and len(argv) > 1]


def test_a_push_reads_its_revision_with_ls_remote_and_fetch_only(
        remote: GitRemote, tmp_path: pathlib.Path, started: list[list[str]]) -> None:
    remote.commit("one", {"records/a.yaml": TXT % ("a", "1"), "records/b.yaml": TXT % ("b", "1")})
    remote.push()
    source = GitSource(remote.url, tmp_path / "cache")
    old = source.fetch()
    old.files()
    source.commits_between(None, old.revision)
    skipped = remote.commit("skipped", {"records/a.yaml": TXT % ("a", "2")})
    new = remote.commit("two", {"records/a.yaml": TXT % ("a", "3")})
    remote.push()
    started.clear()

    head = source.remote_head()
    snap = source.fetch()
    files = snap.files()
    between = source.commits_between(old.revision, snap.revision)

    assert head == snap.revision == new
    assert between == [skipped]
    assert [f.path for f in files] == ["records/a.yaml", "records/b.yaml"]
    assert files[0].read() == (TXT % ("a", "3")).encode()
    verbs = _verbs(started)
    assert [v for v in verbs if v != "cat-file"] == ["ls-remote", "fetch"], verbs
    fetch = next(argv for argv in started if "fetch" in argv[1:2])
    assert "--no-auto-maintenance" in fetch and "--no-tags" in fetch
    assert "--depth" in fetch  # every fetch stays shallow: a merge of an old branch brings no whole history


def test_every_fetch_is_shallow_and_a_rewritten_history_is_still_followed(
        remote: GitRemote, tmp_path: pathlib.Path, started: list[list[str]]) -> None:
    for i in range(4):
        remote.commit(f"c{i}", {"a.yaml": TXT % ("a", str(i))})
    remote.push()
    source = GitSource(remote.url, tmp_path / "cache", depth=2)
    first = source.fetch()
    assert "--depth" in next(argv for argv in started if "fetch" in argv[1:2])
    assert len(subprocess.run(["git", "-C", str(source.workdir), "rev-list", first.revision], capture_output=True,
                              text=True, check=True).stdout.split()) == 2
    rewritten = remote.rewrite_last("rewritten", {"a.yaml": TXT % ("a", "new")})
    remote.push(force=True)

    snap = source.fetch()

    assert snap.revision == rewritten != first.revision
    assert [f.read() for f in snap.files()] == [(TXT % ("a", "new")).encode()]
    # a merge of a branch that forked long ago brings at most `depth` commits of it, not its history
    remote.cmd("checkout", "-q", "-b", "old", remote.cmd("rev-list", "--max-parents=0", "HEAD"))
    for i in range(10):
        remote.commit(f"old{i}", {f"o{i}.yaml": TXT % ("o", str(i))})
    remote.cmd("checkout", "-q", "main")
    remote.cmd("-c", "user.name=t", "-c", "user.email=t@t", "merge", "-q", "--no-edit", "old")
    remote.push()
    merged = source.fetch()
    assert len(subprocess.run(["git", "-C", str(source.workdir), "rev-list", "--all"], capture_output=True,
                              text=True, check=True).stdout.split()) <= 2 + 2 * 2 + 1, "the whole history came"
    assert merged.revision == remote.head()


def test_a_push_under_a_path_reads_the_trees_on_the_way_without_rev_parse(
        remote: GitRemote, tmp_path: pathlib.Path, started: list[list[str]]) -> None:
    remote.commit("one", {"dns/zones/a.yaml": TXT % ("a", "1"), "other/b.yaml": TXT % ("b", "1")})
    remote.push()
    source = GitSource(remote.url, tmp_path / "cache", path="dns/zones")
    source.fetch().files()
    remote.commit("two", {"dns/zones/a.yaml": TXT % ("a", "2")})
    remote.push()
    started.clear()

    files = source.fetch().files()

    assert [(f.path, f.blob) for f in files] == [("a.yaml", remote.cmd("rev-parse", "HEAD:dns/zones/a.yaml"))]
    started_by_the_source = _verbs(started)[:-1]  # (the last: the test's own rev-parse)
    assert "rev-parse" not in started_by_the_source, started_by_the_source


def _rev_list(source: GitSource, old: str, new: str) -> list[str]:
    out = subprocess.run(["git", "-C", str(source.workdir), "rev-list", "--reverse", f"{old}..{new}"],
                         capture_output=True, text=True, check=True).stdout.split()
    return [sha for sha in out if sha != new]


def test_the_commits_a_push_skipped_are_git_rev_lists_for_a_merge_too(
        remote: GitRemote, tmp_path: pathlib.Path) -> None:
    base = remote.commit("base", {"a.yaml": TXT % ("a", "1")})
    remote.cmd("checkout", "-q", "-b", "side")
    side = remote.commit("side", {"b.yaml": TXT % ("b", "1")})
    remote.cmd("checkout", "-q", "main")
    main = remote.commit("main", {"c.yaml": TXT % ("c", "1")})
    remote.cmd("merge", "-q", "--no-edit", "side")
    merge = remote.head()
    after = remote.commit("after", {"a.yaml": TXT % ("a", "2")})
    remote.push()
    source = GitSource(remote.url, tmp_path / "cache", depth=None)
    assert source.fetch().revision == after

    assert source.commits_between(base, after) == _rev_list(source, base, after)
    assert set(source.commits_between(base, after)) == {side, main, merge}
    assert source.commits_between(merge, after) == [] == _rev_list(source, merge, after)
    assert source.commits_between(main, merge) == _rev_list(source, main, merge) == [side]


def test_a_commit_beyond_the_shallow_clone_names_no_skipped_commits(remote: GitRemote, tmp_path: pathlib.Path) -> None:
    first = remote.commit("first", {"a.yaml": TXT % ("a", "0")})
    for i in range(1, 5):
        remote.commit(f"c{i}", {"a.yaml": TXT % ("a", str(i))})
    remote.push()
    source = GitSource(remote.url, tmp_path / "cache", depth=2)
    head = source.fetch().revision

    assert source.commits_between(first, head) == []  # as before: git rev-list does not know `first`
    parent = remote.cmd("rev-parse", "HEAD^")
    assert source.commits_between(parent, head) == []
    assert source.commits_between(remote.cmd("rev-parse", "HEAD^^"), head) == []  # past the clone's edge


def test_the_listing_read_in_process_is_what_git_ls_tree_lists(remote: GitRemote, tmp_path: pathlib.Path) -> None:
    remote.commit("tree", {"a/b/c.yaml": TXT % ("c", "1"), "a/d.yaml": TXT % ("d", "1"), "top.yaml": TXT % ("t", "1"),
                           "a/run.sh": "#!/bin/sh\n", "z/.hidden.yaml": TXT % ("h", "1")})
    (remote.work / "a" / "run.sh").chmod(0o755)
    (remote.work / "link.yaml").symlink_to("a/d.yaml")
    remote.cmd("add", "-A")
    remote.cmd("update-index", "--add", "--cacheinfo", f"160000,{remote.head()},sub")
    remote.commit("links and a submodule", {})
    remote.push()
    source = GitSource(remote.url, tmp_path / "cache")
    snap = source.fetch()
    repo = source.repo()
    for treeish in (snap.revision, f"{snap.revision}:a"):
        ids = gittree._tree_ids_of(repo, treeish)
        assert ids is not None
        assert gittree._read_trees(ids[-1], gittree.Listing(), gittree._tree_reader(repo)) == gittree.list_tree(
            repo, treeish)
    listing = gittree.Listing()
    first = gittree.files(repo, snap.revision, listing)
    remote.commit("one file", {"a/b/c.yaml": TXT % ("c", "2")})
    remote.push()
    snap = source.fetch()
    asked: list[str] = []
    read = gittree._tree_reader(repo)
    ids = gittree._tree_ids_of(repo, snap.revision)
    assert ids is not None
    listed = gittree._read_trees(ids[-1], listing, lambda tree: asked.append(tree) or read(tree))
    assert listed == gittree.list_tree(repo, snap.revision)
    changed = [remote.cmd("rev-parse", spec) for spec in ("HEAD^{tree}", "HEAD:a", "HEAD:a/b")]
    assert sorted(asked) == sorted(changed)  # not z/, nor the trees a commit shares with the last
    assert [f.path for f in first] == [f.path for f in gittree.files(repo, snap.revision, listing)]
