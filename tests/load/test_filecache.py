"""A long-running agent loads and expands a new revision from what changed; the result must be exactly
what loading it from scratch gives - objects, RRsets, placements, every problem - on random commits."""

from __future__ import annotations

import json
import pathlib
import random
from typing import Any

import git
import pytest

from agent.desired import hierarchy
from agent.desired.memo import NO_MEMO, Memo
from agent.load import filecache, loader
from agent.load.manifest import Manifest
from agent.model.limits import Limits
from agent.plan import build, render
from agent.sources import gittree

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
SOA = ("  soaRecord: {primaryNs: ns1.example.com., adminEmail: admin.example.com., serial: 1, refresh: 3600, "
       "retry: 600, expire: 604800, negativeTtl: 300}\n")


def _zone(z: int, *, label: str | None = None, ttl: int = 300) -> str:
    label = label or f"z{z}"
    return (HEAD + f"kind: DNSZone\nmetadata: {{name: z{z}, namespace: dns}}\nspec:\n  zoneName: zone{z}.example\n"
            f"  clusterRef: dns\n  ttl: {ttl}\n" + SOA + f"  recordsFrom: [{{selector: {{matchLabels: {{zone: {label}}}}}}}]\n")


def _record(i: int, zone: int, value: int, twin_of: int | None = None) -> str:
    """Record i; `twin_of`: the same kind and name as record twin_of (the same object key)."""
    i, n = (i, i) if twin_of is None else (twin_of, i)
    kinds = [("ARecord", f"ipv4Addresses: [192.0.2.{value % 250 + 1}]"), ("TXTRecord", f"text: ['v{value}']"),
             ("CNAMERecord", f"target: t{value}.zone{zone}.example."), ("MXRecord", "priority: 10, mailServer: mx.test.")]
    kind, body = kinds[i % len(kinds)]
    return (HEAD + f"kind: {kind}\nmetadata: {{name: r{i}, namespace: dns, labels: {{zone: z{zone}}}}}\n"
            f"spec: {{name: h{n}, {body}}}\n")


class World:
    """A repository whose files are zones, records and a cluster; changed by random commits."""

    def __init__(self, root: pathlib.Path, rng: random.Random) -> None:
        self.root, self.rng = root, rng
        self.repo = git.Repo.init(root)
        self.zones = {z: {"label": f"z{z}", "ttl": 300} for z in range(4)}
        self.records = {i: {"zone": i % 4, "value": i} for i in range(40)}
        self.next = 40

    def write(self) -> str:
        for path in self.root.glob("*.yaml"):
            path.unlink()
        (self.root / "cluster.yaml").write_text(HEAD + "kind: Bind9Cluster\nmetadata: {name: dns, namespace: dns}\n"
                                                "spec: {primary: {replicas: 1}, secondary: {replicas: 1}}\n")
        for z, spec in self.zones.items():
            docs = [_zone(z, label=spec["label"], ttl=spec["ttl"])]
            docs += [_record(i, r["zone"], r["value"], r.get("twin_of")) for i, r in sorted(self.records.items()) if r["zone"] == z]
            (self.root / f"zone-{z}.yaml").write_text("---\n".join(docs))
        orphans = [_record(i, r["zone"], r["value"], r.get("twin_of")) for i, r in sorted(self.records.items())
                   if r["zone"] not in self.zones]
        if orphans:
            (self.root / "orphans.yaml").write_text("---\n".join(orphans))
        self.repo.git.add("-A")
        self.repo.git.commit("-q", "--allow-empty", "-m", "change")
        return self.repo.head.commit.hexsha

    def mutate(self) -> str:
        change = self.rng.choice(["value", "value", "value", "add", "delete", "move", "label", "ttl", "zone",
                                  "dropzone", "conflict", "twin", "untwin"])
        records, rng = self.records, self.rng
        if change == "value" and records:
            records[rng.choice(list(records))]["value"] = rng.randrange(1000)
        elif change == "add":
            records[self.next] = {"zone": rng.choice(list(self.zones) or [0]), "value": rng.randrange(1000)}
            self.next += 1
        elif change == "delete" and records:
            del records[rng.choice(list(records))]
        elif change == "move" and records:
            records[rng.choice(list(records))]["zone"] = rng.randrange(6)
        elif change == "label" and self.zones:  # a selector change moves whole sets of records
            self.zones[rng.choice(list(self.zones))]["label"] = f"z{rng.randrange(6)}"
        elif change == "ttl" and self.zones:
            self.zones[rng.choice(list(self.zones))]["ttl"] = rng.choice([60, 300, 3600])
        elif change == "zone":
            self.zones[rng.randrange(6)] = {"label": f"z{rng.randrange(6)}", "ttl": 300}
        elif change == "dropzone" and self.zones:
            del self.zones[rng.choice(list(self.zones))]
        elif change == "conflict" and records:  # a CNAME beside other data: a problem the zone must report
            i = rng.choice(list(records))
            records[self.next] = {"zone": records[i]["zone"], "value": records[i]["value"]}
            self.next += 1
        elif change == "twin" and records:  # an object defined twice, maybe in another file: one is refused
            records[self.next] = {"zone": rng.randrange(6), "value": rng.randrange(1000),
                                  "twin_of": rng.choice(list(records))}
            self.next += 1
        elif change == "untwin":
            twins = [i for i, r in records.items() if "twin_of" in r]
            if twins:
                del records[rng.choice(twins)]
        return self.write()


def _view(manifest: Manifest, state: hierarchy.Desired | None) -> dict[str, Any]:
    view: dict[str, Any] = {"problems": sorted(str(p) for p in manifest.problems),
                            "objects": [str(o.key) for o in manifest.objects]}
    if state is not None:
        view["desired"] = sorted(str(p) for p in state.problems)
        view["zones"] = [(z.name, [str(k) for k in z.instances], sorted(map(str, z.rrsets.values())),
                          sorted((str(k), v) for k, v in z.records.items())) for z in state.zones]
        view["plan"] = json.loads(render.render_json(build.offline(state)))
    return view


def _load(repo: git.Repo, sha: str, cache: filecache.FileCache | None, memo: Memo | None,
          listing: gittree.Listing | None = None, limits: Limits | None = None) -> dict[str, Any]:
    manifest = loader.load_files(gittree.files(repo, sha, listing), default_namespace="dns",
                                 cache=cache or filecache.NO_FILES, limits=limits)
    state = hierarchy.build(manifest, memo or NO_MEMO) if manifest.ok else None
    return _view(manifest, state)


@pytest.fixture
def reused(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each incremental load took the last revision's files but the changed ones (loader._reuse)."""
    taken: list[bool] = []
    original = loader._reuse

    def spy(*args: Any, **kwargs: Any) -> Any:
        found = original(*args, **kwargs)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(loader, "_reuse", spy)
    return taken


def test_incremental_loads_equal_loads_from_scratch_on_random_commits(tmp_path: pathlib.Path,
                                                                      reused: list[bool]) -> None:
    world = World(tmp_path / "repo", random.Random(16))
    world.repo.git.config("user.name", "t")
    world.repo.git.config("user.email", "t@example.com")
    cache, memo, listing = filecache.FileCache(), Memo(), gittree.Listing()  # as a long-running agent keeps them
    shas = [world.write()] + [world.mutate() for _ in range(60)]
    invalid = twice = 0
    for sha in shas:
        incremental = _load(world.repo, sha, cache, memo, listing)
        assert incremental == _load(world.repo, sha, None, None), sha
        twice += any("duplicate object" in p for p in incremental["problems"])
        invalid += "desired" not in incremental or any(not p.startswith("warning") and "error" in p
                                                       for p in incremental["desired"])
    assert cache.hits > cache.misses  # most files were reused, not parsed again
    assert memo.hits > 0
    assert 0 < sum(reused) < len(reused)  # both ways: the last revision's files but the changed, and in order
    assert len(shas) - invalid > 0  # the sequence is not all broken revisions
    assert 0 < twice < len(shas)  # objects defined twice come and go


def test_a_revision_that_reaches_a_limit_after_a_change_reads_in_order_as_from_scratch(
        tmp_path: pathlib.Path, reused: list[bool]) -> None:
    world = World(tmp_path / "repo", random.Random(3))
    world.repo.git.config("user.name", "t")
    world.repo.git.config("user.email", "t@example.com")
    limits = Limits(max_documents=1 + len(world.zones) + len(world.records) + 3)  # room for three more records
    cache, memo, listing = filecache.FileCache(), Memo(), gittree.Listing()
    for _ in range(6):
        sha = world.write()
        incremental = _load(world.repo, sha, cache, memo, listing, limits)
        assert incremental == _load(world.repo, sha, None, None, None, limits), sha
        world.records[world.next] = {"zone": 0, "value": world.next}  # the next commit: one more record
        world.next += 1
    assert any("documents" in p for p in incremental["problems"])  # the limit was reached, and reported alike
    assert True in reused  # before it was, the changed file alone was read


def _cluster(name: str, copies: int) -> str:
    """`copies` Bind9Clusters in one file, each adding 6 alias nodes (a merge key)."""
    return "---\n".join(HEAD + f"kind: Bind9Cluster\nmetadata: {{name: {name}{i}, namespace: dns}}\nspec:\n"
                        "  primary: &role {replicas: 1, allowTransfer: [10.0.0.0/8]}\n  secondary:\n    <<: *role\n"
                        "    replicas: 2\n" for i in range(copies))


def _commit(repo: git.Repo, files: dict[str, str]) -> str:
    root = pathlib.Path(repo.working_tree_dir or ".")
    for name, text in files.items():
        (root / name).write_text(text)
    repo.git.add("-A")
    repo.git.commit("-q", "-m", "change")
    return repo.head.commit.hexsha


_PLAIN = {f"f{i}.yaml": HEAD + f"kind: Bind9Cluster\nmetadata: {{name: f{i}, namespace: dns}}\nspec: {{}}\n"
          for i in range(3)}  # files that stay the same: a revision is then mostly the last one's


@pytest.mark.parametrize("limits, revisions", [
    # the document limit is reached inside the last file; then an earlier file shrinks: all of it fits
    (Limits(max_documents=7), [{"a.yaml": _cluster("a", 2), "b.yaml": _cluster("b", 2), **_PLAIN},
                               {"a.yaml": _cluster("a", 3)}, {"a.yaml": _cluster("a", 1)}]),
    # the alias budget: an early file grows and takes what a later one had, then the later one shrinks
    (Limits(max_alias_nodes=12), [{"a.yaml": _cluster("a", 1), "b.yaml": _cluster("b", 1), **_PLAIN},
                                  {"a.yaml": _cluster("a", 2)}, {"b.yaml": "# none\n"},
                                  {"a.yaml": _cluster("a", 1), "b.yaml": _cluster("b", 1)}]),
])
def test_what_a_limit_cut_is_read_again_and_in_order(tmp_path: pathlib.Path, limits: Limits,
                                                     revisions: list[dict[str, str]]) -> None:
    """A file cut or refused for what the revision had left is not kept: the next revision decides
    again, in load order, as a load from scratch does."""
    repo = git.Repo.init(tmp_path / "repo")
    repo.git.config("user.name", "t")
    repo.git.config("user.email", "t@example.com")
    cache, memo, listing = filecache.FileCache(), Memo(), gittree.Listing()
    limited = 0
    for files in revisions:
        sha = _commit(repo, files)
        incremental = _load(repo, sha, cache, memo, listing, limits)
        assert incremental == _load(repo, sha, None, None, None, limits), (sha, files)
        limited += any("limit" in p for p in incremental["problems"])
    assert 0 < limited < len(revisions)
