"""A local directory's limits are checked before it is fingerprinted (agent/sources/localdir.py): a file over
its limit and a revision over its size are refused from their sizes (never read whole), the digest still
tells contents apart, and a directory thousands deep with a broken link is refused, not a crash."""

from __future__ import annotations

import pathlib
import resource
import subprocess
import sys

from tests.conftest import ROOT
from tests.support import clirun

DELTA_ERROR = 1  # plan's error status (0: planned)


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
