"""The Git source reads a commit's tree, not a work tree: what a hostile commit can put there
(symbolic links out of the repository, to devices, in loops, submodules, odd and over-long names,
huge blobs) and what the agent reads of it. Real git repositories, no network."""

from __future__ import annotations

import os
import pathlib
import subprocess
import time
import tracemalloc
from collections.abc import Callable

import pytest

from agent.load import filecache, loader
from agent.model.limits import Limits
from agent.sources.git import FetchedCommit, GitSource
from tests.support.gitremote import GitRemote

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
TXT = HEAD + "kind: TXTRecord\nmetadata: {name: %s, namespace: dns}\nspec: {name: t.example.com., text: [%s]}\n"
SECRET = "s3cr3t-from-the-agent-filesystem"


@pytest.fixture
def remote(tmp_path: pathlib.Path) -> GitRemote:
    return GitRemote(tmp_path / "git")


def _snapshot(remote: GitRemote, tmp_path: pathlib.Path, **kwargs: object) -> FetchedCommit:
    remote.push()
    return GitSource(remote.url, tmp_path / "cache", **kwargs).fetch()  # type: ignore[arg-type]


def _stage(remote: GitRemote, mode: str, blob: str, path: str) -> None:
    remote.cmd("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}")


def _blob(remote: GitRemote, data: bytes) -> str:
    return subprocess.run(["git", "-C", str(remote.work), "hash-object", "-w", "--stdin"], input=data,
                          capture_output=True, check=True).stdout.decode().strip()


def _problems(snap: FetchedCommit, **kwargs: object) -> list[str]:
    return [str(p) for p in loader.load_files(snap.files(), **kwargs).problems]  # type: ignore[arg-type]


def test_files_come_from_the_commit_with_their_blob_ids_not_from_the_work_tree(
        remote: GitRemote, tmp_path: pathlib.Path) -> None:
    remote.commit("records", {"records/a.yaml": TXT % ("a", '"from git"'), "README.md": "docs\n"})
    snap = _snapshot(remote, tmp_path)
    workdir = tmp_path / "cache" / next(p.name for p in (tmp_path / "cache").iterdir())
    (workdir / "planted.yaml").write_text(TXT % ("planted", '"not in the commit"'))
    files = snap.files()
    assert [(f.path, f.blob, f.size) for f in files] == [
        ("records/a.yaml", remote.cmd("rev-parse", "HEAD:records/a.yaml"), len((TXT % ("a", '"from git"')).encode()))]
    assert files[0].read() == (TXT % ("a", '"from git"')).encode()


def test_symbolic_links_resolve_inside_the_tree_and_never_outside(remote: GitRemote, tmp_path: pathlib.Path) -> None:
    secret = tmp_path / "agent-secret.yaml"
    secret.write_text(TXT % ("leak", f'"{SECRET}"'))
    work = remote.work
    remote.commit("base", {"shared/common.yaml": TXT % ("shared", '"hello"')})
    (work / "zone").mkdir()
    links = {"zone/inside.yaml": "../shared/common.yaml", "zone/chain.yaml": "inside.yaml",
             "leak.yaml": str(secret), "up.yaml": "../../agent-secret.yaml", "zero.yaml": "/dev/zero",
             "loop-a.yaml": "loop-b.yaml", "loop-b.yaml": "loop-a.yaml", "dir.yaml": "shared",
             "dangling.yaml": "gone.yaml", "sneaky.yaml": "zone/../../agent-secret.yaml"}
    for link, target in links.items():
        os.symlink(target, work / link)
    remote.commit("links", {})
    snap = _snapshot(remote, tmp_path)
    by_path = {f.path: f for f in snap.files()}
    common = remote.cmd("rev-parse", "HEAD:shared/common.yaml")
    assert by_path["zone/inside.yaml"].blob == by_path["zone/chain.yaml"].blob == common
    assert by_path["zone/chain.yaml"].read() == (TXT % ("shared", '"hello"')).encode()
    problems = _problems(snap)
    outside = "not read: a symbolic link pointing outside the repository (-> {!r}); links may only point at files " \
              "inside it - commit the file itself instead"
    regular = "not read: {}, not a regular file; only regular files (or links to regular files inside the " \
              "repository) are read - commit the YAML itself"
    assert sorted(problems) == sorted([
        f"leak.yaml:1: {outside.format(str(secret))}",
        f"up.yaml:1: {outside.format('../../agent-secret.yaml')}",
        f"zero.yaml:1: {outside.format('/dev/zero')}",
        f"sneaky.yaml:1: {outside.format('zone/../../agent-secret.yaml')}",
        "loop-a.yaml:1: not read: too many levels of symbolic links, or a link too long",
        "loop-b.yaml:1: not read: too many levels of symbolic links, or a link too long",
        f"dir.yaml:1: {regular.format(repr('a symbolic link to a directory (-> ' + repr('shared') + ')')[1:-1])}",
        f"dangling.yaml:1: {regular.format('a symbolic link to a missing file (-> ' + repr('gone.yaml') + ')')}",
        "zone/chain.yaml:1: TXTRecord/dns/shared: duplicate object: already defined at shared/common.yaml:1",
        "zone/inside.yaml:1: TXTRecord/dns/shared: duplicate object: already defined at shared/common.yaml:1",
    ])
    assert not any(SECRET in p for p in problems)


def test_a_sub_path_is_the_boundary(remote: GitRemote, tmp_path: pathlib.Path) -> None:
    remote.commit("layout", {"common/c.yaml": TXT % ("common", '"x"'), "dns/a.yaml": TXT % ("a", '"x"')})
    os.symlink("../common/c.yaml", remote.work / "dns" / "up.yaml")
    remote.commit("link", {})
    snap = _snapshot(remote, tmp_path, path="./dns/")
    assert [f.path for f in snap.files()] == ["a.yaml", "up.yaml"]
    assert _problems(snap) == ["up.yaml:1: not read: a symbolic link pointing outside the repository "
                               "(-> '../common/c.yaml'); links may only point at files inside it - commit the file "
                               "itself instead"]


def test_submodules_are_skipped_with_a_warning(remote: GitRemote, tmp_path: pathlib.Path) -> None:
    base = remote.commit("base", {"a.yaml": TXT % ("a", '"x"')})
    _stage(remote, "160000", base, "vendor/dns")
    remote.cmd("commit", "-q", "-m", "submodule")
    manifest = loader.load_files(_snapshot(remote, tmp_path).files())
    assert manifest.ok and [o.key.name for o in manifest.objects] == ["a"]
    assert [str(p) for p in manifest.problems] == [
        "vendor/dns:1: skipped: a Git submodule; the agent reads only files committed in this repository"]


def test_odd_and_over_long_names(remote: GitRemote, tmp_path: pathlib.Path) -> None:
    remote.commit("names", {"-leading-dash.yaml": TXT % ("dash", '"x"'), "ünïcødé.yaml": TXT % ("unicode", '"x"'),
                            "new\nline.yaml": TXT % ("newline", '"x"')})
    blob = _blob(remote, (TXT % ("long", '"x"')).encode())
    _stage(remote, "100644", blob, "d" * 300 + ".yaml")  # longer than any file system allows: no checkout needed
    _stage(remote, "100644", blob, "/".join(["e" * 250] * 17) + ".yaml")  # over 4096 bytes
    remote.cmd("commit", "-q", "-m", "long names")
    manifest = loader.load_files(_snapshot(remote, tmp_path).files())
    assert sorted(o.key.name for o in manifest.objects) == ["dash", "long", "unicode"]
    problems = sorted(str(p) for p in manifest.problems)
    assert problems[0].startswith("eeeeeeeeee") and ":1: not read: the path is 4271 bytes long, over 4096; use a " \
        "shorter name" in problems[0] and "... (4271 characters):1:" in problems[0]
    assert problems[1] == ("new\\nline.yaml:1: not read: the file name contains a control character or is not "
                           "valid UTF-8 (shown escaped); rename it to printable characters")


def test_a_huge_blob_is_refused_from_its_listed_size_without_reading_it(
        remote: GitRemote, tmp_path: pathlib.Path) -> None:
    big = 40 * 1024 * 1024
    _stage(remote, "100644", _blob(remote, b"#" * big), "huge.yaml")
    remote.cmd("commit", "-q", "-m", "huge")
    snap = _snapshot(remote, tmp_path)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        problems = _problems(snap)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert problems == ["huge.yaml:1: not read: the file is 40.0 MiB, over the 32.0 MiB allowed for one file; split it "
                        "into smaller files (or raise the limit: --max-file-bytes)"]
    assert peak < 5_000_000 and time.perf_counter() - started < 5
    assert _problems(snap, limits=Limits(max_file_bytes=big)) == []  # raised: read and parsed (a comment)


def test_limits_travel_with_the_snapshot(remote: GitRemote, tmp_path: pathlib.Path) -> None:
    remote.commit("two", {"a.yaml": TXT % ("a", '"x"'), "b.yaml": TXT % ("b", '"x"')})
    snap = _snapshot(remote, tmp_path, limits=Limits(max_documents=1))
    assert _problems(snap, limits=snap.limits) == [
        "b.yaml:1: more than 1 YAML documents in the revision; the rest was not read (raise the limit: "
        "--max-documents)"]


def test_a_relative_path_to_a_repository_works_like_its_absolute_path(
        remote: GitRemote, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remote.commit("one zone", {"zone.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"})
    remote.push()
    monkeypatch.chdir(remote.bare)
    snap = GitSource(".", tmp_path / "cache", branch="main").fetch()  # `--repo .` inside the repository
    assert snap.revision == remote.head()


def test_a_blob_is_sized_only_when_the_loader_reads_it(remote: GitRemote, tmp_path: pathlib.Path) -> None:
    """Listing a commit opens no blob; a file the cache already holds is neither sized nor read."""
    remote.commit("records", {f"records/{n}.yaml": TXT % (n, f'"{n}"') for n in "abc"})
    first = _snapshot(remote, tmp_path)
    cache = filecache.FileCache()
    assert not loader.load_files(first.files(), cache=cache).problems
    remote.commit("one changed", {"records/b.yaml": TXT % ("b", '"changed"')})
    second = _snapshot(remote, tmp_path)
    files = second.files()
    assert all(f.known_size is None for f in files)  # nothing asked while listing
    asked: list[str] = []

    def counted(ask: Callable[[str], int]) -> Callable[[str], int]:
        def size(blob: str) -> int:
            asked.append(blob)
            return ask(blob)
        return size

    for f in files:
        assert f.sizer is not None
        object.__setattr__(f, "sizer", counted(f.sizer))
    manifest = loader.load_files(files, cache=cache)
    assert not manifest.problems
    assert asked == [remote.cmd("rev-parse", "HEAD:records/b.yaml")]
    assert [f.size for f in files] == [len((TXT % (n, f'"{v}"')).encode()) for n, v in
                                       (("a", "a"), ("b", "changed"), ("c", "c"))]


def test_a_long_running_source_reuses_unchanged_files_and_resolves_links_again(
        remote: GitRemote, tmp_path: pathlib.Path) -> None:
    remote.commit("two", {"a.yaml": TXT % ("a", '"one"'), "b.yaml": TXT % ("b", '"one"'),
                          "t1.yaml": TXT % ("t1", '"first target"'), "t2.yaml": TXT % ("t2", '"second target"')})
    os.symlink("t1.yaml", remote.work / "link.yaml")
    remote.commit("link", {})
    remote.push()
    source = GitSource(remote.url, tmp_path / "cache")  # one source, as `bindy-agent run` keeps it
    first = {f.path: f for f in source.fetch().files()}

    (remote.work / "link.yaml").unlink()
    os.symlink("t2.yaml", remote.work / "link.yaml")  # the link now names another file
    remote.commit("change a, move the link", {"a.yaml": TXT % ("a", '"two"')})
    remote.push()
    second = {f.path: f for f in source.fetch().files()}
    assert second["b.yaml"] is first["b.yaml"]  # unchanged: the very file, not listed again
    assert second["a.yaml"] is not first["a.yaml"] and b'"two"' in second["a.yaml"].read()
    assert b"second target" in second["link.yaml"].read()  # resolved again, not remembered
    assert sorted(second) == sorted(first)

    remote.commit("add c", {"c.yaml": TXT % ("c", '"new"')})
    remote.push()
    third = [f.path for f in source.fetch().files()]
    assert third == ["a.yaml", "b.yaml", "c.yaml", "link.yaml", "t1.yaml", "t2.yaml"]  # load order kept
