"""The first step of every run, and all of `bindy-agent validate`: load -> desired -> policy, without
a write. A module of its own so that `validate` imports only what it needs (no clients, no writers):
a pre-commit hook starts it cheaply (bench/cli_startup_bench.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from agent.desired import hierarchy
from agent.desired.hierarchy import Desired
from agent.desired.memo import NO_MEMO, Memo
from agent.gate import overrides, tenancy
from agent.gate import policy as repo_rules
from agent.load import loader
from agent.load.filecache import NO_FILES, FileCache
from agent.load.manifest import Manifest
from agent.load.sourcefile import SourceFile
from agent.model import problems
from agent.model.limits import Limits
from agent.model.steps import Steps, timed
from agent.run import collector
from agent.sources import kustomize

if TYPE_CHECKING:
    from agent.clients.kubeapi import KubeApi

# Progress of a long step: (verb, unit, done, total or None), e.g. ("observed", "zones", 100, 500).
Progress = Callable[[str, str, int, int | None], None]


def quiet(verb: str, unit: str, done: int, total: int | None) -> None:
    """The default Progress: nobody is watching."""


@dataclasses.dataclass
class Validated:
    """A revision loaded, expanded and checked against the policy, as a whole and without a write."""

    manifest: Manifest
    desired: Desired | None  # None: the files did not load
    steps: Steps = dataclasses.field(default_factory=dict)  # load, desired, validate: seconds each

    @property
    def problems(self) -> list[problems.Problem]:
        return list(self.manifest.problems) + (self.desired.problems if self.desired is not None else [])

    @property
    def ok(self) -> bool:
        return self.desired is not None and not problems.errors(self.problems)


def validate(files: Sequence[SourceFile], *, default_namespace: str, repo_policy: repo_rules.PolicySettings,
             delete_threshold: float, limits: Limits, kube_api: KubeApi | None = None,
             files_cache: FileCache = NO_FILES, memo: Memo = NO_MEMO, progress: Progress = quiet) -> Validated:
    """load -> desired -> policy; with a long-running agent's caches (agent/run/memory.py), what did not
    change since the last revision is reused. With a cluster, the policy sees the live labels of the Secrets the
    revision references (metadata only); without one, such references are only warned about."""
    steps: Steps = {}
    with collector.long_lived():
        with timed(steps, "load"):
            files = kustomize.render(files, max_bytes=limits.max_revision_bytes)  # as Flux: overlays built first
            manifest = loader.load_files(files, default_namespace=default_namespace, limits=limits,
                                         cache=files_cache,
                                         progress=lambda done, total: progress("loaded", "files", done, total))
        if not manifest.ok:
            return Validated(manifest, None, steps)
        with timed(steps, "desired"):
            desired = hierarchy.build(manifest, memo)
    with timed(steps, "validate"):
        labels = None
        if kube_api is not None:
            from agent.observe import kubeobserve  # only with a cluster: the offline path stays light

            labels = kubeobserve.secret_labels(kube_api, tenancy.secrets_to_observe(manifest))
        desired.problems += repo_rules.check(manifest, desired, repo_policy, secret_labels=labels)
        desired.problems += overrides.check(manifest, delete_threshold)  # the gate is the operator's
    return Validated(manifest, desired, steps)
