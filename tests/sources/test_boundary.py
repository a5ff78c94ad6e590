"""A repository is hostile input: what `validate`, `plan` and `sync DIR` read from a directory,
attacked as a repo writer would - links out of the repository, devices, FIFOs, sockets, huge
files, alias bombs, deep nesting, odd file names - and the limits that bound a revision."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import tracemalloc

import pytest

from agent.load import loader
from agent.model.limits import Limits
from agent.sources import localdir
from tests.conftest import ROOT, Repo, load_dir

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
TXT = HEAD + "kind: TXTRecord\nmetadata: {name: %s, namespace: dns}\nspec: {name: t.example.com., text: [%s]}\n"
SECRET = "s3cr3t-value-from-outside-the-repo"


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


def _messages(root: pathlib.Path, **kwargs: object) -> list[str]:
    return [str(p) for p in loader.load_files(localdir.files(root), **kwargs).problems]  # type: ignore[arg-type]


@pytest.fixture
def outside(tmp_path: pathlib.Path) -> pathlib.Path:
    """A file the agent may read but a repository must not: it sits next to the repository."""
    secret = tmp_path / "agent-secret.yaml"
    secret.write_text(TXT % ("leak", f'"{SECRET}"'))
    return secret


@pytest.fixture
def hostile(tmp_path: pathlib.Path) -> Repo:
    return Repo(tmp_path / "repo")


def test_a_link_to_a_file_outside_is_refused_and_never_read(hostile: Repo, outside: pathlib.Path) -> None:
    hostile.add("ok.yaml", TXT % ("ok", '"hello"'))
    (hostile.root / "leak.yaml").symlink_to(outside)
    (hostile.root / "relative.yaml").symlink_to("../agent-secret.yaml")
    done = _cli("validate", str(hostile.root))
    assert done.returncode == 1
    assert f"{hostile.root}/leak.yaml:1: not read: a symbolic link pointing outside the repository (-> '{outside}'); " \
           "links may only point at files inside it - commit the file itself instead" in done.stderr
    assert f"{hostile.root}/relative.yaml:1: not read: a symbolic link pointing outside the repository " \
           "(-> '../agent-secret.yaml')" in done.stderr
    plan = _cli("plan", str(hostile.root), "-o", "json")
    assert plan.returncode == 1 and "leak.yaml:1: not read" in plan.stderr
    for out in (done.stdout, done.stderr, plan.stdout, plan.stderr):
        assert SECRET not in out


def test_a_link_to_a_file_inside_is_read(hostile: Repo) -> None:
    hostile.add("shared/common.yaml", TXT % ("shared", '"hello"'))
    (hostile.root / "zone").mkdir()
    (hostile.root / "zone" / "link.yaml").symlink_to("../shared/common.yaml")
    files = {f.path: f for f in localdir.files(hostile.root)}
    assert set(files) == {"shared/common.yaml", "zone/link.yaml"}
    assert files["zone/link.yaml"].read() == files["shared/common.yaml"].read()
    # the same object twice: reported as a duplicate, as two copies of the file would be
    assert _messages(hostile.root) == ["zone/link.yaml:1: TXTRecord/dns/shared: duplicate object: already defined at "
                                       "shared/common.yaml:1"]


@pytest.mark.parametrize("target, what", [
    ("/dev/zero", "a character device"), ("/dev/null", "a character device")])
def test_a_link_to_a_device_is_refused(hostile: Repo, target: str, what: str) -> None:
    hostile.root.mkdir(parents=True)
    (hostile.root / "zero.yaml").symlink_to(target)
    done = _cli("validate", str(hostile.root), timeout=30)
    assert done.returncode == 1
    assert f"zero.yaml:1: not read: a symbolic link pointing outside the repository (-> '{target}')" in done.stderr


def test_a_fifo_a_socket_and_a_directory_named_yaml_are_refused_without_hanging(hostile: Repo) -> None:
    hostile.root.mkdir(parents=True)
    os.mkfifo(hostile.root / "pipe.yaml")
    (hostile.root / "inside-pipe.yaml").symlink_to("pipe.yaml")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(hostile.root / "sock.yaml"))
    (hostile.root / "dir.yaml").mkdir()
    (hostile.root / "dirlink.yaml").symlink_to("dir.yaml")
    (hostile.root / "dangling.yaml").symlink_to("nowhere.yaml")
    try:
        started = time.monotonic()
        for verb in (["validate"], ["plan", "-o", "json"]):
            done = _cli(*verb, str(hostile.root), timeout=30)  # a FIFO opened for reading would block forever
            assert done.returncode == 1
        assert time.monotonic() - started < 30
    finally:
        sock.close()
    lines = done.stderr.splitlines()
    assert f"{hostile.root}/pipe.yaml:1: not read: a named pipe (FIFO), not a regular file; only regular files " \
           "(or links to regular files inside the repository) are read - commit the YAML itself" in lines
    assert f"{hostile.root}/inside-pipe.yaml:1: not read: a named pipe (FIFO), not a regular file; only regular " \
           "files (or links to regular files inside the repository) are read - commit the YAML itself" in lines
    assert any(line.startswith(f"{hostile.root}/sock.yaml:1: not read: a socket, not a regular file") for line in lines)
    assert any(line.startswith(f"{hostile.root}/dirlink.yaml:1: not read: a directory, not a regular file")
               for line in lines)
    assert f"{hostile.root}/dangling.yaml:1: not read: a symbolic link to a missing file (-> 'nowhere.yaml')" in lines


def test_a_file_swapped_for_a_fifo_after_listing_is_not_read(hostile: Repo) -> None:
    path = hostile.add("a.yaml", TXT % ("a", '"x"'))
    listed = localdir.files(hostile.root)
    path.unlink()
    os.mkfifo(path)  # what a racing writer could do between the listing and the read
    assert _problems_of(listed) == ["a.yaml:1: cannot read file: the file was replaced while the revision was being "
                                    "read; run again"]


def _problems_of(files: list[localdir.LocalFile], **kwargs: object) -> list[str]:
    return [str(p) for p in loader.load_files(files, **kwargs).problems]  # type: ignore[arg-type]


def test_odd_file_names(hostile: Repo) -> None:
    hostile.add("-leading-dash.yaml", TXT % ("dash", '"x"'))
    hostile.add("ünïcødé-zone.yaml", TXT % ("unicode", '"x"'))
    hostile.add("l" * 250 + ".yaml", TXT % ("long", '"x"'))
    hostile.add("new\nline.yaml", TXT % ("newline", '"x"'))
    hostile.add("esc\x1b[31mred.yaml", TXT % ("escape", '"x"'))
    (hostile.root / os.fsdecode(b"latin1-\xe9.yaml")).write_text(TXT % ("latin", '"x"'))
    manifest = loader.load_files(localdir.files(hostile.root))
    assert sorted(o.key.name for o in manifest.objects) == ["dash", "long", "unicode"]
    assert sorted(str(p) for p in manifest.problems) == [
        "esc\\x1b[31mred.yaml:1: not read: the file name contains a control character or is not valid UTF-8 (shown "
        "escaped); rename it to printable characters",
        "latin1-\\xe9.yaml:1: not read: the file name contains a control character or is not valid UTF-8 (shown "
        "escaped); rename it to printable characters",
        "new\\nline.yaml:1: not read: the file name contains a control character or is not valid UTF-8 (shown "
        "escaped); rename it to printable characters",
    ]
    done = _cli("validate", str(hostile.root))  # one line per problem on a terminal, no traceback
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 4


def _bomb(levels: int = 7, fan: int = 9) -> str:
    lines = ['    x-a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghi"[:levels - 1]:
        lines.append(f"    x-{name}: &{name} [" + ", ".join([f"*{previous}"] * fan) + "]")
        previous = name
    return (HEAD + "kind: Bind9Instance\nmetadata: {name: i, namespace: dns}\nspec:\n  clusterRef: c\n"
            "  role: primary\n  volumes:\n  - name: v\n" + "\n".join(lines) + "\n")


def test_an_alias_bomb_fails_fast_in_little_memory_at_its_line(hostile: Repo) -> None:
    text = _bomb()
    assert len(text.encode()) < 700  # the bomb: 619 bytes, 7 levels, fan-out 9
    hostile.add("bomb.yaml", text)
    tracemalloc.start()
    try:
        manifest = load_dir(hostile.root)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000  # it was 566 MB (and 10 s): the aliases were never expanded
    assert [str(p) for p in manifest.problems] == [
        "bomb.yaml:13: YAML aliases of the anchor at this line expand the document by 6,053,427 nodes; a revision "
        "may add 100,000 (an alias bomb?). Write the values out instead of repeating aliases (or raise the limit: "
        "--max-alias-nodes)"]
    done = _cli("plan", str(hostile.root), "-o", "json", timeout=30)
    assert done.returncode == 1 and f"{hostile.root}/bomb.yaml:13: YAML aliases" in done.stderr
    doc = json.loads(done.stdout)  # invalid input still gets a whole JSON document, with the error
    assert doc["invalid"] == ["revision"] and doc["problems"][0]["line"] == 13


def test_anchors_and_merge_keys_within_the_limit_keep_working(hostile: Repo) -> None:
    hostile.add("merge.yaml", HEAD + """kind: Bind9Cluster
metadata: {name: dns, namespace: dns}
spec:
  primary: &role {replicas: 1, allowTransfer: [10.0.0.0/8]}
  secondary:
    <<: *role
    replicas: 2
""")
    manifest = load_dir(hostile.root)
    assert manifest.ok and not manifest.problems
    spec = manifest.objects[0].model.spec  # type: ignore[attr-defined]
    assert (spec.secondary.replicas, spec.secondary.allow_transfer) == (2, ["10.0.0.0/8"])
    assert _messages(hostile.root, limits=Limits(max_alias_nodes=2))[0].startswith(
        "merge.yaml:5: YAML aliases of the anchor at this line expand the document by 6 nodes; a revision may add 2 ")


def test_an_alias_inside_its_own_anchor_is_an_error_not_a_traceback(hostile: Repo) -> None:
    hostile.add("loop.yaml", HEAD + "kind: Bind9Instance\nmetadata: {name: i, namespace: dns}\nspec:\n"
                "  clusterRef: c\n  role: primary\n  volumes: &v\n  - name: x\n    y: *v\n")
    done = _cli("plan", str(hostile.root))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"{hostile.root}/loop.yaml:7: a YAML alias inside the anchor it refers to makes a structure contain " \
           "itself" in done.stderr


@pytest.mark.parametrize("text, line", [
    ("a: " + "[" * 100_000 + "]" * 100_000 + "\n", 1),  # crashed the process (SIGSEGV in the C composer)
    ("a:\n" + "- " * 60_000 + "x\n", 2),
    ("a: &a [x]\n" + "".join(f"b{i}: &b{i} [*{'a' if i == 0 else f'b{i - 1}'}]\n" for i in range(120)), 1),
])
def test_deep_nesting_is_refused_not_a_crash(hostile: Repo, text: str, line: int) -> None:
    hostile.add("deep.yaml", text)
    done = _cli("validate", str(hostile.root), timeout=60)
    assert done.returncode == 1, done.stderr
    assert f"deep.yaml:{line}: " in done.stderr and "levels deep" in done.stderr


def test_ordinary_nesting_is_not_mistaken_for_deep(hostile: Repo) -> None:
    indented = "".join(" " * (2 * i) + f"k{i}:\n" for i in range(30)) + " " * 60 + "v: 1\n"
    flows = "docs: " + "[" * 60 + "]" * 60 + "\n"
    hostile.add("a.yaml", "x: 1\n" + indented)
    hostile.add("b.yaml", "x: 1\n" + flows)
    assert [p.message for p in load_dir(hostile.root).problems] == [
        "skipped: not a Kubernetes object (no apiVersion/kind)"] * 2


def test_a_huge_file_is_refused_before_it_is_read(hostile: Repo) -> None:
    hostile.add("small.yaml", TXT % ("small", '"x"'))
    with open(hostile.root / "huge.yaml", "wb") as handle:  # sparse: 40 MiB that cost no disk
        handle.truncate(40 * 1024 * 1024)
    problems = _messages(hostile.root)
    assert problems == ["huge.yaml:1: not read: the file is 40.0 MiB, over the 32.0 MiB allowed for one file; split "
                        "it into smaller files (or raise the limit: --max-file-bytes)"]
    size = (hostile.root / "small.yaml").stat().st_size
    done = _cli("validate", str(hostile.root), "--max-file-bytes", "100")
    assert done.returncode == 1 and f"small.yaml:1: not read: the file is {size} bytes, over the 100 bytes" in done.stderr


def test_revision_and_document_limits_stop_reading(hostile: Repo) -> None:
    for i in range(5):
        hostile.add(f"r{i}.yaml", "---\n".join(TXT % (f"t{i}-{j}", '"x"') for j in range(3)))
    size = (hostile.root / "r0.yaml").stat().st_size
    assert _messages(hostile.root, limits=Limits(max_revision_bytes=2 * size + 1)) == [
        f"r2.yaml:1: not read: the revision's YAML files add up to more than {2 * size + 1:,} bytes; this file and "
        "the files after it were not read (raise the limit: --max-revision-bytes)"]
    manifest = loader.load_files(localdir.files(hostile.root), limits=Limits(max_documents=7))
    assert (len(manifest.objects), manifest.files) == (7, 3)
    assert [str(p) for p in manifest.problems] == [
        "r2.yaml:6: more than 7 YAML documents in the revision; the rest was not read (raise the limit: "
        "--max-documents)"]
    done = _cli("plan", str(hostile.root), "--max-documents", "7")
    assert done.returncode == 1 and "r2.yaml:6: more than 7 YAML documents" in done.stderr
    bad = _cli("validate", str(hostile.root), "--max-documents", "0")
    assert bad.returncode == 2 and "--max-documents: '0' must be at least 1" in bad.stderr


def test_a_document_of_tiny_nodes_is_refused_before_it_is_composed(hostile: Repo) -> None:
    # two bytes a node: 8 MiB of this took 87 s and 7.4 GB before (1.2 GB of it composing the nodes)
    hostile.add("wide.yaml", TXT % ("wide", ",".join(["1"] * 200_000)))
    tracemalloc.start()
    try:
        problems = _messages(hostile.root)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert problems == ["wide.yaml:4: a YAML document of more than 100,000 nodes (keys, values, lists, mappings); no "
                        "Bindy object needs as many, so the file is not loaded - split it"]
    assert peak < 10_000_000  # the nodes were never composed (no time limit here: speed lives in bench/)


def test_schema_errors_of_one_document_are_capped(hostile: Repo) -> None:
    hostile.add("many.yaml", TXT % ("many", ",".join(["1"] * 5_000)))
    problems = _messages(hostile.root)
    assert len(problems) == 51
    assert problems[0].startswith("many.yaml:4: TXTRecord/dns/many: spec.text[0]: must be a string (the API "
                                  "server checks types strictly), not the integer 1: quote it")
    assert problems[-1] == ("many.yaml:1: TXTRecord/dns/many: and 4,950 more schema errors in this document (the "
                            "first 50 are shown)")


def test_the_revision_node_limit(hostile: Repo) -> None:
    for i in range(3):
        hostile.add(f"r{i}.yaml", TXT % (f"t{i}", '"x"'))
    per_document = 18  # the mapping, 8 keys, 6 scalar values, 2 mappings, a list and its string
    assert _messages(hostile.root, limits=Limits(max_nodes=3 * per_document)) == []
    assert _messages(hostile.root, limits=Limits(max_nodes=3 * per_document - 1)) == [
        "r2.yaml:4: more than 53 YAML nodes (keys, values, lists, mappings) in the revision; the rest was not read "
        "(raise the limit: --max-nodes)"]
    done = _cli("validate", str(hostile.root), "--max-nodes", "20")
    assert done.returncode == 1 and "r1.yaml:1: more than 20 YAML nodes" in done.stderr
