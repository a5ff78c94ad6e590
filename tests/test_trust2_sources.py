"""Trust, round 2 (issue 23), what the sources read: a Git tree whose listed paths are not what git
shows, a deep tree with a broken link, sizes checked before a directory is fingerprinted, and an
operator's value that git would take for an option. Real git in temporary directories, through
the CLI."""

from __future__ import annotations

import pathlib
import resource
import shutil
import subprocess
import sys

import pytest

from agent.errors import ConfigError
from agent.sources.git import GitSource
from tests.conftest import ROOT, SAMPLE
from tests.support import clirun, rawtree
from tests.support.gitremote import GitRemote
from tests.support.rawtree import WEB

EXTRA = ("apiVersion: bindy.firestoned.io/v1beta1\nkind: TXTRecord\nmetadata: {name: verify, namespace: "
         "dns-system, labels: {zone: example-com}}\nspec: {name: _verify, text: [%s]}\n")
DELTA_ERROR = 1  # plan's error status (0: planned)


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> GitRemote:
    """main: the sample repository and extra.yaml (a TXT record), pushed to a bare remote."""
    git = GitRemote(tmp_path)
    shutil.copytree(SAMPLE, git.work, dirs_exist_ok=True)
    git.commit("the sample", {"extra.yaml": EXTRA % "good"})
    git.push()
    return git


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


def _limited_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`bindy-agent ARGS` in a process that may map 1 GiB at most: reading a 1 GiB file whole fails."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    return subprocess.run([sys.executable, "-c", "import sys; from agent.cli import main; sys.exit(main())", *args],
                          capture_output=True, text=True, cwd=ROOT, preexec_fn=limit, timeout=120)


def test_plan_base_dir_checks_sizes_before_it_fingerprints(tmp_path: pathlib.Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    subprocess.run(["truncate", "-s", "1G", str(old / "big.yaml")], check=True)  # sparse: no disk used
    result = _limited_cli("plan", str(new), "--base-dir", str(old))
    assert result.returncode == DELTA_ERROR, result.stderr
    assert (f"{old}/big.yaml:1: not read: the file is 1024.0 MiB, over the 32.0 MiB allowed for one file; split it "
            "into smaller files (or raise the limit: --max-file-bytes)") in result.stderr
    assert "internal error" not in result.stderr


def test_sync_dir_checks_the_revision_limit_before_it_fingerprints(tmp_path: pathlib.Path) -> None:
    crs = tmp_path / "crs"
    crs.mkdir()
    subprocess.run(["truncate", "-s", "1G", str(crs / "big.yaml")], check=True)
    endpoints = tmp_path / "endpoints.yaml"
    endpoints.write_text("instances: {}\n")
    result = _limited_cli("sync", str(crs), "--dry-run", "--endpoints", str(endpoints), "--state", str(tmp_path / "st"),
                          "--max-file-bytes", str(2 << 30), "--max-revision-bytes", str(1 << 20))
    assert result.returncode == 2, result.stderr  # rejected
    assert f"{crs}/big.yaml:1: not read: " in result.stderr and "--max-revision-bytes" in result.stderr
    assert "internal error" not in result.stderr


def test_a_directory_digest_still_tells_contents_apart(tmp_path: pathlib.Path) -> None:
    from agent.model.limits import Limits
    from agent.sources import localdir

    (tmp_path / "a.yaml").write_bytes(b"x" * (3 << 20))  # several chunks
    first = localdir.revision(tmp_path, Limits())
    (tmp_path / "a.yaml").write_bytes(b"x" * (3 << 20) + b"y")
    assert localdir.revision(tmp_path, Limits()) != first


# -- an operator's value is never an option of git ---------------------------------------------
ATTACK = "--upload-pack=touch {mark}"


def _endpoints(tmp_path: pathlib.Path) -> str:
    path = tmp_path / "endpoints.yaml"
    path.write_text("instances: {}\n")
    return str(path)


@pytest.mark.parametrize("verb", ["sync-repo", "sync-branch", "sync-ref", "report", "report-branch", "plan"])
def test_a_git_value_starting_with_a_dash_is_a_usage_error(
        repo: GitRemote, tmp_path: pathlib.Path, verb: str) -> None:
    mark = tmp_path / "pwned"
    attack = ATTACK.format(mark=mark)
    common = ["--cache", str(tmp_path / "cache")]
    sync = ["sync", "--endpoints", _endpoints(tmp_path), "--state", str(tmp_path / "st"), *common]
    argv, status, flag = {
        "sync-repo": ([*sync, f"--repo={attack}"], 2, "--repo"),
        "sync-branch": ([*sync, "--repo", repo.url, f"--branch={attack}"], 2, "--branch"),
        "sync-ref": ([*sync, "--repo", repo.url, f"--ref={attack}"], 2, "--ref"),
        "report": (["report", f"--repo={attack}", *common], 2, "--repo"),
        "report-branch": (["report", "--repo", repo.url, f"--branch={attack}", *common], 2, "--branch"),
        "plan": (["plan", f"--repo={attack}", "--base", "main", "--head", "main", *common], DELTA_ERROR, "--repo"),
    }[verb]
    result = clirun.main(*argv)
    assert result.returncode == status, result.stderr
    assert f"argument {flag}: " in result.stderr and "starts with '-', which git would take for an option" in (
        result.stderr)
    assert not mark.exists()


@pytest.mark.parametrize("where", ["environment", "config file"])
def test_run_refuses_a_repo_setting_starting_with_a_dash(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    attack = ATTACK.format(mark=tmp_path / "pwned")
    args = ["run", "--print-config"]
    if where == "environment":
        monkeypatch.setenv("BINDY_AGENT_REPO", attack)
    else:
        (tmp_path / "settings.yaml").write_text(f"repo: '{attack}'\n")
        args += ["--config", str(tmp_path / "settings.yaml")]
    result = clirun.main(*args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "setting repo: " in result.stderr and "starts with '-'" in result.stderr


def test_a_git_source_never_gives_git_an_option(tmp_path: pathlib.Path) -> None:
    for kwargs in ({"url": "--upload-pack=sh"}, {"url": "x", "branch": "-b"}, {"url": "x", "ref": "--output=/tmp/f"}):
        with pytest.raises(ConfigError, match="starts with '-'"):
            GitSource(cache=tmp_path, **kwargs)  # type: ignore[arg-type]


def test_a_directory_thousands_deep_with_a_broken_link_is_refused_not_a_crash(tmp_path: pathlib.Path) -> None:
    depth, crs = 1200, tmp_path / "crs"  # os.walk recursed once a level: past ~1,000 it crashed (exit 70)
    deepest = crs.joinpath(*["d"] * depth)
    here = crs
    for _ in range(depth + 1):  # one level at a time: os.makedirs recurses too
        here.mkdir()
        here = here / "d"
    (deepest / "link.yaml").symlink_to("missing.yaml")
    try:
        result = clirun.main("validate", str(crs))
        assert result.returncode == 1, result.stderr
        assert "link.yaml:1: not read: a symbolic link to a missing file (-> 'missing.yaml')" in result.stderr
    finally:  # shutil.rmtree recurses as well
        (deepest / "link.yaml").unlink()
        for level in range(depth, -1, -1):
            crs.joinpath(*["d"] * level).rmdir()


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


@pytest.mark.parametrize(("flag", "advice"), [
    ("--repo", "give the repository's URL, or its path (./-x for a directory of that name)"),
    ("--branch", "no branch name git accepts does (git check-ref-format --branch): give the branch's name"),
    ("--ref", "pin a tag of another name, or the commit by its 40-hex-digit id (git rev-parse "
              "'refs/tags/-x^{commit}')"),
])
def test_a_value_starting_with_a_dash_gets_advice_for_its_own_flag(tmp_path: pathlib.Path, flag: str,
                                                                   advice: str) -> None:
    # --branch and --ref were told to give "a URL, a path (./-x ...)", which is --repo's advice
    repo = [] if flag == "--repo" else ["--repo", "https://example.invalid/r.git"]
    result = clirun.main("sync", *repo, "--endpoints", _endpoints(tmp_path), "--cache", str(tmp_path / "cache"),
                         f"{flag}=-x")
    assert result.returncode == 2, result.stderr
    error = result.stderr.splitlines()[-1]  # the usage lines above it name every flag
    what = "the repository" if flag == "--repo" else f"the {flag.removeprefix('--')}"
    assert f"argument {flag}: {what} '-x' starts with '-', which git would take for an option; {advice}" in error, (
        error)
    if flag != "--repo":
        assert "URL" not in error and "./-x" not in error
    setting = flag.removeprefix("--")
    configured = clirun.main("run", "--print-config", f"--{setting}=-x") if setting != "repo" else None
    if configured is not None:  # the same words from the settings
        assert configured.returncode == 2 and advice in configured.stderr, configured.stderr
