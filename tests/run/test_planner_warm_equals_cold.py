"""Issue 24's "done when": a long-running agent's warm caches never change a plan. A seeded random
series of commits (records added, changed and removed, zones moved between files, files renamed,
instances added and scaled) is planned at every step with a cold memory and with one warm memory
(agent/run/memory.py) kept across the series, through the same calls a run makes (planner.validate,
build.build with the zone-plan memo); the plans, as JSON, must be equal at every step. The DNS side
is planned against a world that follows the series (each primary pod serves what the previous commit
placed, the agent owns it), so zone plans are reused where nothing changed and recomputed where
something did. The checker is shown to catch caches that ignore one of their inputs."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import pathlib
import random
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import git
import pytest

from agent.desired.hierarchy import Desired
from agent.desired.memo import Memo
from agent.model import servers
from agent.model.limits import Limits
from agent.model.observed import DnsObserved, KubeObserved, Observed, ZoneObserved
from agent.model.ownership import ZoneOwnership
from agent.plan import build, render
from agent.run import planner
from agent.run.memory import ONE_SHOT, Memory
from agent.sources import gittree

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741
HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
SOA = ("  soaRecord: {primaryNs: ns1.example.com., adminEmail: admin.example.com., serial: 1, refresh: 3600, "
       "retry: 600, expire: 604800, negativeTtl: 300}\n")
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
OPTIONS = planner.Options(default_namespace="dns-system")


class Repo:
    """Zones with their records spread over files, a cluster, explicit instances; random commits."""

    def __init__(self, root: pathlib.Path, rng: random.Random) -> None:
        self.root, self.rng = root, rng
        self.repo = git.Repo.init(root)
        self.repo.git.config("user.name", "t")
        self.repo.git.config("user.email", "t@example.com")
        self.zones = {z: {"file": f"zones-{z % 3}.yaml", "ttl": 300} for z in range(6)}
        self.records = {i: {"zone": i % 6, "value": i} for i in range(48)}
        self.cluster = {"primary": 1, "secondary": 1}
        self.instances: dict[int, dict[str, Any]] = {}  # explicit Bind9Instances: role, replicas
        self.next = 48

    def write(self) -> str:
        for path in self.root.glob("*.yaml"):
            path.unlink()
        docs = [HEAD + "kind: Bind9Cluster\nmetadata: {name: dns, namespace: dns-system}\n"
                f"spec: {{primary: {{replicas: {self.cluster['primary']}}}, "
                f"secondary: {{replicas: {self.cluster['secondary']}}}}}\n"]
        docs += [HEAD + f"kind: Bind9Instance\nmetadata: {{name: extra{n}, namespace: dns-system}}\n"
                 f"spec: {{clusterRef: dns, role: {spec['role']}, replicas: {spec['replicas']}}}\n"
                 for n, spec in sorted(self.instances.items())]
        (self.root / "cluster.yaml").write_text("---\n".join(docs))
        files: dict[str, list[str]] = {}
        for z, spec in sorted(self.zones.items()):
            files.setdefault(spec["file"], []).append(
                HEAD + f"kind: DNSZone\nmetadata: {{name: z{z}, namespace: dns-system}}\nspec:\n"
                f"  zoneName: zone{z}.example\n  clusterRef: dns\n  ttl: {spec['ttl']}\n" + SOA
                + f"  recordsFrom: [{{selector: {{matchLabels: {{zone: z{z}}}}}}}]\n")
            files[spec["file"]] += [_record(i, r["zone"], r["value"]) for i, r in sorted(self.records.items())
                                    if r["zone"] == z]
        for name, texts in files.items():
            (self.root / name).write_text("---\n".join(texts))
        self.repo.git.add("-A")
        self.repo.git.commit("-q", "--allow-empty", "-m", "change")
        return self.repo.head.commit.hexsha

    def mutate(self) -> str:
        rng, records, zones = self.rng, self.records, self.zones
        change = rng.choice(["value", "value", "add", "add", "remove", "zone-move", "rename", "instance", "scale",
                             "cluster", "ttl", "record-move", "zone-add", "zone-drop"])
        if change == "value" and records:
            records[rng.choice(list(records))]["value"] = rng.randrange(1000)
        elif change == "add":
            for _ in range(rng.randrange(1, 4)):
                records[self.next] = {"zone": rng.randrange(7), "value": rng.randrange(1000)}  # 6: no zone yet
                self.next += 1
        elif change == "remove" and records:
            del records[rng.choice(list(records))]
        elif change == "zone-move" and zones:  # a zone and its records into another (maybe new) file
            zones[rng.choice(list(zones))]["file"] = f"zones-{rng.randrange(5)}.yaml"
        elif change == "rename" and zones:  # every zone of one file to a new name
            old = rng.choice(sorted({z["file"] for z in zones.values()}))
            new = f"renamed-{self.next}.yaml"
            self.next += 1
            for z in zones.values():
                if z["file"] == old:
                    z["file"] = new
        elif change == "instance":
            self.instances[len(self.instances)] = {"role": rng.choice(["primary", "secondary"]), "replicas": 1}
        elif change == "scale" and self.instances:
            self.instances[rng.choice(list(self.instances))]["replicas"] = rng.randrange(1, 4)
        elif change == "cluster":
            self.cluster[rng.choice(["primary", "secondary"])] = rng.randrange(1, 3)
        elif change == "ttl" and zones:
            zones[rng.choice(list(zones))]["ttl"] = rng.choice([60, 300, 3600])
        elif change == "record-move" and records:
            records[rng.choice(list(records))]["zone"] = rng.randrange(7)
        elif change == "zone-add":  # a new zone takes the records labelled for it
            zones.setdefault(rng.randrange(8), {"file": f"zones-{rng.randrange(5)}.yaml", "ttl": 300})
        elif change == "zone-drop" and len(zones) > 2:
            del zones[rng.choice(list(zones))]
        return self.write()


def _record(i: int, zone: int, value: int) -> str:
    kinds = [("ARecord", f"ipv4Addresses: [192.0.2.{value % 250 + 1}]"), ("TXTRecord", f"text: ['v{value}']"),
             ("MXRecord", f"priority: {value % 50}, mailServer: mx.test.")]
    kind, body = kinds[i % len(kinds)]
    return (HEAD + f"kind: {kind}\nmetadata: {{name: r{i}, namespace: dns-system, labels: {{zone: z{zone}}}}}\n"
            f"spec: {{name: h{i}, {body}}}\n")


class World:
    """What the DNS servers serve while the series runs: each primary pod serves what the previous
    commit placed there, and the agent owns it. A server's ZoneObserved stays the very object while
    what it serves is the same (as agent/observe/dnsobserve.DnsMemory hands it out)."""

    def __init__(self) -> None:
        self.served: dict[tuple[str, str], tuple[frozenset[str], ZoneObserved]] = {}
        self.ownership: dict[str, ZoneOwnership] = {}

    def observed(self, desired: Desired, pods: dict[str, tuple[str, ...]]) -> Observed:
        instances = {servers.instance_id(k) for z in desired.zones for k in z.instances}
        zones: dict[str, dict[str, ZoneObserved]] = {}
        for (zone, server), (_, seen) in sorted(self.served.items()):
            zones.setdefault(zone, {})[server] = seen
        dns = DnsObserved(dict(self.ownership), zones, instances | {i for o in self.ownership.values()
                                                                   for i in o.placements}, pods=pods)
        return Observed(KubeObserved({}, set(), {"dns-system"}), dns)

    def applied(self, desired: Desired, pods: dict[str, tuple[str, ...]]) -> None:
        """The revision applied: its zones on their primaries' pods, owned by the agent."""
        served: dict[tuple[str, str], tuple[frozenset[str], ZoneObserved]] = {}
        owned, self.ownership = self.ownership, {}
        for z in desired.zones:
            placements = {servers.instance_id(k): "secondary" for k in z.secondaries}
            placements.update({servers.instance_id(k): "primary" for k in z.primaries})
            now = ZoneOwnership(z.name, placements, set(z.rrsets))
            last = owned.get(z.name)  # the store hands out the very record while it is unchanged
            self.ownership[z.name] = last if last == now else now
            content = frozenset(map(str, z.rrsets.values()))
            for k in z.primaries:
                inst = servers.instance_id(k)
                for server in pods.get(inst, (inst,)):
                    last = self.served.get((z.name, server))
                    served[(z.name, server)] = (last if last is not None and last[0] == content
                                                else (content, ZoneObserved(dict(z.rrsets), serial=1)))
        self.served = served


def _pods(desired: Desired) -> dict[str, tuple[str, ...]]:
    """Instances of more than one replica are written pod by pod (agent/observe/instancereach.py)."""
    out: dict[str, tuple[str, ...]] = {}
    for inst in desired.instances.values():
        replicas = inst.spec.replicas or 1
        if replicas > 1:
            iid = servers.instance_id(inst.key)
            out[iid] = tuple(f"{iid}@{inst.key.name}-{n}" for n in range(replicas))
    return out


def _plan(repo: git.Repo, sha: str, memory: Memory, listing: gittree.Listing | None,
          world: World | None) -> tuple[str, Desired | None]:
    """The plan of one commit as a sync plans it: validate with the memory's caches, then the whole
    plan against the world with the memory's zone-plan memo. JSON, and the desired state."""
    validated = planner.validate(gittree.files(repo, sha, listing), OPTIONS, limits=Limits(), memory=memory)
    if not validated.ok or validated.desired is None:
        return json.dumps(sorted(str(p) for p in validated.problems)), None
    desired = validated.desired
    offline = render.render_json(build.offline(desired))
    if world is None:
        return offline, desired
    observed = world.observed(desired, _pods(desired))
    plan = build.build(desired, observed, revision=sha, agent="dns-system", choices=build.KubeChoices(now=NOW),
                       recalled=build.Recalled(memo=memory.plans))
    return offline + "\n" + render.render_json(plan), desired


@dataclasses.dataclass
class Series:
    steps: int = 0
    valid: int = 0
    mismatch: str | None = None  # the first commit whose warm plan is not its cold plan


def run_series(tmp: pathlib.Path, seed: int, commits: int, warm: Memory) -> Series:
    repo = Repo(tmp / f"repo-{seed}", random.Random(seed))
    world, listing, out = World(), gittree.Listing(), Series()
    try:
        _walk(repo, commits, warm, world, listing, out)
    finally:
        repo.repo.close()  # its persistent git cat-file processes
    return out


def _walk(repo: Repo, commits: int, warm: Memory, world: World, listing: gittree.Listing, out: Series) -> None:
    for n in range(commits):
        sha = repo.write() if n == 0 else repo.mutate()
        cold_plan, desired = _plan(repo.repo, sha, ONE_SHOT, None, world)
        fresh_plan, _ = _plan(repo.repo, sha, Memory(), None, world)  # a long-running agent's first run
        warm_plan, _ = _plan(repo.repo, sha, warm, listing, world)
        out.steps += 1
        if not (cold_plan == fresh_plan == warm_plan):
            out.mismatch = f"commit {n} ({sha[:12]}) plans differ"
            return
        if desired is not None:
            out.valid += 1
            world.applied(desired, _pods(desired))


@pytest.mark.parametrize("seed", [24])
def test_plans_with_a_warm_memory_equal_plans_made_cold_on_random_commits(tmp_path: pathlib.Path,
                                                                          seed: int) -> None:
    warm = Memory()
    series = run_series(tmp_path, seed, 40, warm)
    assert series.mismatch is None, series.mismatch
    assert series.valid > series.steps // 2  # the series is mostly valid revisions, planned in full
    # the warm memory was used, not bypassed: files, expansions and zone plans were reused
    assert warm.files.hits > warm.files.misses
    assert warm.desired.hits > warm.desired.misses
    assert warm.plans.hits > 0 and warm.plans.misses > 0


class _IgnoresShared(Memo):
    """A broken memo: `each` does not look at `shared` (a change of instances, of the zone set)."""

    def each(self, key: Hashable, items: Sequence[I], compute: Callable[[I], T], *, name: Callable[[I], Hashable],
             same: Callable[[I, I], bool] = lambda a, b: a is b, shared: tuple[object, ...] = ()) -> list[T]:
        return super().each(key, items, compute, name=name, same=same, shared=())


class _StaleTokens(Memo):
    """A broken memo: a token stays the same object whatever its fingerprint says."""

    def token(self, key: Hashable, fingerprint: Hashable) -> object:
        return super().token(key, "always the same")


class _AppendsToResults(Memo):
    """A broken memo: the list it returns is the one it remembers, so a caller appending to it
    (plan.build.zone_plans adds the zones that left Git) changes the next revision's results."""

    def each(self, key: Hashable, items: Sequence[I], compute: Callable[[I], T], *, name: Callable[[I], Hashable],
             same: Callable[[I, I], bool] = lambda a, b: a is b, shared: tuple[object, ...] = ()) -> list[T]:
        super().each(key, items, compute, name=name, same=same, shared=shared)
        remembered: list[T] = self._used[key][1]
        return remembered


@pytest.mark.parametrize("broken, where", [
    (_IgnoresShared, "desired"), (_StaleTokens, "desired"), (_AppendsToResults, "plans"),
])
def test_the_checker_catches_a_cache_that_ignores_one_input(tmp_path: pathlib.Path, broken: type[Memo],
                                                            where: str) -> None:
    """The equivalence test can fail: the same series with a memo that ignores one of its inputs
    (the instances a zone is placed on, the zones records are assigned to), or that lets a caller
    change what it remembers, makes a warm plan that is not the cold one."""
    warm = Memory(**{where: broken()})
    assert run_series(tmp_path, 24, 40, warm).mismatch is not None
