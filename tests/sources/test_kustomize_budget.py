"""What kustomize builds of a revision may cost is bounded as a whole: a chain of bases too deep is a clear
error (no internal error), a lattice of bases whose build would repeat past the revision's byte limit (or past
what kustomize can build in time) is refused from its files' sizes before kustomize runs, and all the builds
of a revision share one time budget and one output size (real kubectl kustomize)."""

from __future__ import annotations

import pathlib

import pytest

from agent.errors import FileRefused, SourceError
from agent.sources import localdir
from tests.support import clirun

TXT = "apiVersion: bindy.firestoned.io/v1beta1\nkind: TXTRecord\nmetadata: {name: t, namespace: dns-system}\n" \
      "spec: {name: t, text: [%s]}\n"


def _write(path: pathlib.Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _lattice(root: pathlib.Path, depth: int, leaf: str = "x") -> pathlib.Path:
    """3*depth tiny kustomizations whose build is 2^depth copies of one TXT record."""
    for i in range(depth):
        _write(root / f"L{i}" / "kustomization.yaml", f"resources: [../a{i}, ../b{i}]\n")
        _write(root / f"a{i}" / "kustomization.yaml", f"namePrefix: a-\nresources: [../L{i + 1}]\n")
        _write(root / f"b{i}" / "kustomization.yaml", f"namePrefix: b-\nresources: [../L{i + 1}]\n")
    _write(root / f"L{depth}" / "kustomization.yaml", "resources: [t.yaml]\n")
    _write(root / f"L{depth}" / "t.yaml", TXT % leaf)
    _write(root / "kustomization.yaml", "resources: [L0]\n")
    return root


def test_a_chain_of_bases_too_deep_is_a_clear_error(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "repo"
    n = 1100
    for i in range(n):
        _write(root / f"d{i}" / "kustomization.yaml", f"resources: [../d{i + 1}]\n" if i < n - 1 else
               "resources: [z.yaml]\n")
    _write(root / f"d{n - 1}" / "z.yaml", TXT % "x")
    _write(root / "kustomization.yaml", "resources: [d0]\n")
    result = clirun.main("validate", str(root))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert "kustomizations nest more than 50 deep" in result.stderr.splitlines()[0]


def test_a_cycle_of_bases_is_named(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "repo"
    _write(root / "kustomization.yaml", "resources: [a]\n")
    _write(root / "a" / "kustomization.yaml", "resources: [../b, t.yaml]\n")
    _write(root / "a" / "t.yaml", TXT % "x")
    _write(root / "b" / "kustomization.yaml", "resources: [../a]\n")
    result = clirun.main("validate", str(root))
    assert result.returncode == 1
    assert "its bases include it again (a cycle)" in result.stderr


def _never_built(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent.sources import kustbuild

    def refuse(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("kustomize ran")

    monkeypatch.setattr(kustbuild, "build", refuse)


def test_a_lattice_past_the_byte_limit_is_refused_before_kustomize_runs(tmp_path: pathlib.Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A few KB of files, 2^12 copies of a 20 KB record: 80 MB, over the 64 MiB default."""
    root = _lattice(tmp_path / "repo", 12, leaf=", ".join(["y" * 200] * 100))
    _never_built(monkeypatch)
    result = clirun.main("validate", str(root))
    assert result.returncode == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{root}/kustomization.yaml:1: not built: it would build about 8"), first
    assert "bytes (its bases counted as often as kustomize builds them), over the 67,108,864 bytes left" in first


def test_a_lattice_of_more_objects_than_kustomize_can_build_in_time_is_refused(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _lattice(tmp_path / "repo", 16)  # 65,536 copies of a 120-byte record: 8 MB, under the byte limit
    _never_built(monkeypatch)
    result = clirun.main("validate", str(root))
    assert result.returncode == 1
    assert "not built: it would build about 65,536 objects" in result.stderr
    assert "more than the 20,000 kustomize can build within the 60 s" in result.stderr


def test_all_the_builds_of_a_revision_share_one_time_budget(tmp_path: pathlib.Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Three overlays each too slow: together they take the budget once, not three times."""
    from agent.sources import kustbuild

    monkeypatch.setattr(kustbuild, "TIMEOUT", 2.0)
    for k in range(3):
        _lattice(tmp_path / "repo" / f"o{k}", 13)  # 8,192 objects: several seconds of kustomize each
    result = clirun.main("validate", str(tmp_path / "repo"))
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if "kustomization.yaml:1:" in line]
    assert len(lines) == 3, result.stderr
    assert "kustomize did not finish within the 2 s all the builds of a revision may take" in lines[0]
    assert all("not built: the kustomize builds of this revision took their 2 s" in line for line in lines[1:])


def test_all_the_builds_of_a_revision_share_one_output_size(tmp_path: pathlib.Path) -> None:
    """Each overlay builds its base twice (4 KB from 2 KB of files); the base is built too (2 KB): the base
    and one overlay fit the limit, the second overlay is refused before it runs."""
    from agent.sources import kustomize

    root = tmp_path / "repo"
    _write(root / "base" / "t.yaml", TXT % ("z" * 2000))
    _write(root / "base" / "kustomization.yaml", "resources: [t.yaml]\n")
    for k in range(2):
        _write(root / f"o{k}" / "kustomization.yaml", "resources: [a, b]\n")
        for half in "ab":
            _write(root / f"o{k}" / half / "kustomization.yaml", f"namePrefix: {half}-\nresources: [../../base]\n")
    outputs = [f for f in kustomize.render(localdir.files(root), max_bytes=7000) if f.path.startswith("o")]
    assert [(f.path, type(f).__name__) for f in outputs] == [
        ("o0/(kustomize build)", "Built"), ("o1/kustomization.yaml", "Refused")]
    assert outputs[0].read().count(b"kind: TXTRecord") == 2
    with pytest.raises(FileRefused, match=r"not built: it would build about 4,\d+ bytes .* over the \d+ bytes left"):
        outputs[1].read()


def test_a_build_is_stopped_at_the_bytes_left(tmp_path: pathlib.Path) -> None:
    """kustomize's output is read no further than the budget left (here less than the estimate said)."""
    from agent.sources import kustbuild

    (tmp_path / "work").mkdir()
    (tmp_path / "home").mkdir()
    _write(tmp_path / "work" / "kustomization.yaml", "resources: [t.yaml]\ncommonLabels: {a: '%s'}\n" % ("w" * 3000))
    _write(tmp_path / "work" / "t.yaml", TXT % "x")
    budget = kustbuild.Budget(60, 2000)
    with pytest.raises(SourceError, match="the kustomize builds of this revision make over 2,000 bytes"):
        kustbuild.build(str(tmp_path / "work"), str(tmp_path / "home"), budget, shown=str(tmp_path / "work"))
