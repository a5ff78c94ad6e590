"""Caching has one owner (agent/run/memory.py) and one contract (agent/desired/memo.py): the same
inputs are the very same objects; a changed input is computed again, an unchanged one returns the
very object it returned; a one-shot run's memory computes everything and keeps nothing."""

from __future__ import annotations

import pathlib
import shutil

import git

from agent.desired import hierarchy
from agent.desired.memo import NO_MEMO, Memo
from agent.load import loader
from agent.load.filecache import NO_FILES
from agent.model.limits import Limits
from agent.run import planner
from agent.run.memory import ONE_SHOT, Memory
from agent.sources import gittree, localdir

SAMPLE = pathlib.Path(__file__).resolve().parents[2] / "sample-repo"


def test_a_changed_input_is_computed_again_and_an_unchanged_one_is_the_very_same_object() -> None:
    memo, a, b = Memo(), object(), object()
    first = memo.get("k", (a,), lambda: ["result"])
    assert memo.get("k", (a,), lambda: ["other"]) is first  # the same input object: the very result
    assert memo.get("k", (b,), lambda: ["other"]) == ["other"]  # another object, even an equal one: computed
    listed = memo.each("l", [a, b], lambda i: [i], name=id)
    again = memo.each("l", [a, b], lambda i: [i], name=id)
    assert again is not listed and all(x is y for x, y in zip(listed, again, strict=True))  # the caller's own list


def test_a_long_running_memory_expands_an_unchanged_revision_into_the_very_same_zones(tmp_path: pathlib.Path) -> None:
    """What the next steps rely on: the zone plans compare desired zones by identity."""
    shutil.copytree(SAMPLE, tmp_path / "repo")
    repo = git.Repo.init(tmp_path / "repo")
    repo.git.config("user.name", "t")
    repo.git.config("user.email", "t@example.com")
    repo.git.add("-A")
    repo.git.commit("-q", "-m", "sample")
    memory, listing, options = Memory(), gittree.Listing(), planner.Options(default_namespace="dns-system")
    try:
        first = planner.validate(gittree.files(repo, "HEAD", listing), options, limits=Limits(), memory=memory)
        second = planner.validate(gittree.files(repo, "HEAD", listing), options, limits=Limits(), memory=memory)
    finally:
        repo.close()
    assert first.desired is not None and second.desired is not None and first.desired.zones
    assert all(x is y for x, y in zip(first.desired.zones, second.desired.zones, strict=True))
    assert memory.files.hits > 0 and memory.desired.hits > 0


def test_a_one_shot_run_computes_everything_and_keeps_nothing() -> None:
    manifest = loader.load_files(localdir.files(SAMPLE), default_namespace="dns-system")
    one, two = hierarchy.build(manifest), hierarchy.build(manifest, NO_MEMO)
    assert one.zones and all(x is not y for x, y in zip(one.zones, two.zones, strict=True))
    planner.validate(localdir.files(SAMPLE), planner.Options(default_namespace="dns-system"),
                     limits=Limits())
    assert ONE_SHOT.files is NO_FILES and not NO_FILES.entries and not NO_FILES.parts
    assert not ONE_SHOT.keeps and not ONE_SHOT.blank  # an unchanged head still ends a one-shot run early
    assert ONE_SHOT.kube is None and not ONE_SHOT.dns.zones


def test_what_a_step_derives_from_a_loaded_object_is_computed_once_and_kept_with_it() -> None:
    manifest = loader.load_files(localdir.files(SAMPLE), default_namespace="dns-system")
    obj, calls = manifest.objects[0], []

    def derive(o: object) -> list[str]:
        calls.append(o)
        return ["x"]

    assert obj.derived(derive) is obj.derived(derive) and len(calls) == 1
