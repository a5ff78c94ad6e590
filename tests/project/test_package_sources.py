"""The repository names no package registry: the scripts that install packages or build images take
the apt sources the machine already has (scripts/apt-source), so what a machine may reach is its own
configuration, never this repository's."""

from __future__ import annotations

import os
import pathlib
import subprocess

from tests.conftest import ROOT

# package registries' host names, spelled in pieces so that this file does not name them either
REGISTRIES = [".".join(parts) for parts in (
    ("deb", "debian", "org"), ("security", "debian", "org"), ("ftp", "debian", "org"), ("snapshot", "debian", "org"),
    ("cdn-fastly", "deb", "debian", "org"), ("archive", "ubuntu", "com"), ("security", "ubuntu", "com"),
    ("pypi", "org"), ("files", "pythonhosted", "org"), ("pypi", "python", "org"), ("registry", "npmjs", "org"),
    ("proxy", "golang", "org"), ("sum", "golang", "org"), ("crates", "io"), ("rubygems", "org"),
    ("repo", "maven", "apache", "org"), ("dl-cdn", "alpinelinux", "org"))]


def test_no_file_of_the_repository_names_a_package_registry() -> None:
    """`grep -rn` for any of them over the repository's files (tracked or new, not ignored) finds nothing."""
    args = ["git", "grep", "-n", "-I", "-i", "-F", "--untracked"]
    for host in REGISTRIES:
        args += ["-e", host]
    found = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    assert found.returncode == 1 and found.stdout == "", found.stdout  # 1: nothing matched
    assert subprocess.run([*args[:-2], "-e", "apiVersion"], cwd=ROOT, capture_output=True).returncode == 0  # it searches


def test_apt_source_reads_both_formats_of_the_machines_sources(tmp_path: pathlib.Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text(
        "# deb http://commented.example/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://one-line.example/debian bookworm contrib main\n"
        "deb-src http://one-line.example/debian bookworm main\n")
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\n# a comment inside a stanza\nURIs: http://mirror.example/debian\nSuites: bookworm-updates\n"
        "Components: main\nSigned-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n\n"
        "Types: deb deb-src\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n"
        "Components: main contrib\n\n"
        "Enabled: no\nTypes: deb\nURIs: http://disabled.example/debian\nSuites: trixie\nComponents: main\n")
    (tmp_path / "sources.list.d" / "other.list").write_text("deb http://other.example/apt stable non-main\n")

    def apt_source(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(ROOT / "scripts" / "apt-source"), *args], capture_output=True, text=True,
                              env={**os.environ, "APT_ETC": str(tmp_path)})

    assert apt_source().stdout.splitlines() == [
        "deb http://one-line.example/debian bookworm contrib main",
        "deb-src http://one-line.example/debian bookworm main",
        "deb http://other.example/apt stable non-main",
        "deb http://mirror.example/debian bookworm-updates main",
        "deb http://mirror.example/debian-security bookworm-security main contrib",
        "deb-src http://mirror.example/debian-security bookworm-security main contrib"]
    assert apt_source("bookworm").stdout == "http://one-line.example/debian\n"
    assert apt_source("bookworm-security", "deb-src").stdout == "http://mirror.example/debian-security\n"
    assert apt_source("stable").returncode == 1  # no component main
    assert apt_source("trixie").returncode == 1  # disabled
