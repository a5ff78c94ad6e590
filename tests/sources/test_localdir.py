"""The revision of a local directory: its Git HEAD (dirty when modified), else a content digest."""

from __future__ import annotations

import pathlib
import subprocess

from agent.sources import localdir


def _git(root: pathlib.Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_digest_of_a_plain_directory_follows_content(tmp_path: pathlib.Path) -> None:
    (tmp_path / "a.yaml").write_text("kind: DNSZone\n")
    first = localdir.revision(tmp_path)
    assert first.startswith("sha256:") and localdir.revision(tmp_path) == first
    (tmp_path / "a.yaml").write_text("kind: DNSZone # changed\n")
    assert localdir.revision(tmp_path) != first


def test_head_of_a_git_work_tree_and_dirty_marker(tmp_path: pathlib.Path) -> None:
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "x")
    (tmp_path / "dns").mkdir()
    (tmp_path / "dns" / "a.yaml").write_text("kind: DNSZone\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "y")
    head = _git(tmp_path, "rev-parse", "HEAD")
    assert localdir.revision(tmp_path / "dns") == head
    (tmp_path / "dns" / "a.yaml").write_text("kind: DNSZone # edited\n")
    assert localdir.revision(tmp_path / "dns") == f"{head}-dirty"
