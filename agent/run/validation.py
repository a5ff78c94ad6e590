"""The first step of every run, and all of `bindy-agent validate`: load -> desired -> policy,
without a write and without reading the world (a run reads the labels of the Secrets the revision
references between `load` and `check`: agent/run/planner.py). A module of its own so that `validate`
imports only what it needs (no clients, no writers): a pre-commit hook starts it cheaply
(bench/cli_startup_bench.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from agent.desired import hierarchy, overrides, tenancy
from agent.desired import policy as repo_rules
from agent.desired.hierarchy import Desired
from agent.desired.memo import NO_MEMO, Memo
from agent.load import loader
from agent.load.filecache import NO_FILES, FileCache
from agent.load.manifest import Manifest
from agent.load.sourcefile import SourceFile
from agent.model import problems
from agent.model.limits import Limits
from agent.model.steps import Steps, timed
from agent.run import collector
from agent.sources import kustomize

# Progress of a long step: (verb, unit, done, total or None), e.g. ("observed", "zones", 100, 500).
Progress = Callable[[str, str, int, int | None], None]


def quiet(verb: str, unit: str, done: int, total: int | None) -> None:
    """The default Progress: nobody is watching."""


@dataclasses.dataclass
class Validated:
    """A revision loaded, expanded and checked against the policy, as a whole and without a
    write."""

    manifest: Manifest
    desired: Desired | None  # None: the files did not load
    steps: Steps = dataclasses.field(default_factory=dict)  # load, desired, validate: seconds each

    @property
    def problems(self) -> list[problems.Problem]:
        return list(self.manifest.problems) + (self.desired.problems if self.desired is not None
                                               else [])

    @property
    def ok(self) -> bool:
        return self.desired is not None and not problems.errors(self.problems)


def validate(files: Sequence[SourceFile], *, default_namespace: str,
             repo_policy: repo_rules.PolicySettings, delete_threshold: float, limits: Limits,
             progress: Progress = quiet) -> Validated:
    """load -> desired -> policy, as a command without a cluster checks a revision (`validate`,
    `plan DIR`, `export`): nothing remembered from an earlier revision, and references to Secrets
    the agent does not generate only warned about. A run composes `load` and `check` itself
    (agent/run/planner.py), with a long-running agent's caches and the live labels of the Secrets
    read from its cluster between the two."""
    validated = load(files, default_namespace=default_namespace, limits=limits,
                     progress=progress)
    if validated.desired is not None:
        check(validated, repo_policy=repo_policy, delete_threshold=delete_threshold)
    return validated


def load(files: Sequence[SourceFile], *, default_namespace: str, limits: Limits,
         files_cache: FileCache = NO_FILES, memo: Memo = NO_MEMO,
         progress: Progress = quiet) -> Validated:
    """load -> desired: the revision's files parsed and expanded (`desired` None: they did not
    load)."""
    steps: Steps = {}
    with collector.long_lived():
        with timed(steps, "load"):
            # as Flux: overlays built first
            files = kustomize.render(files, max_bytes=limits.max_revision_bytes)
            def loaded(done: int, total: int) -> None:
                progress("loaded", "files", done, total)

            manifest = loader.load_files(files, default_namespace=default_namespace, limits=limits,
                                         cache=files_cache, progress=loaded)
        if not manifest.ok:
            return Validated(manifest, None, steps)
        with timed(steps, "desired"):
            desired = hierarchy.build(manifest, memo)
    return Validated(manifest, desired, steps)


def check(validated: Validated, *, repo_policy: repo_rules.PolicySettings, delete_threshold: float,
          secret_labels: repo_rules.SecretLabels | None = None) -> None:
    """The policy of a loaded revision (agent/desired/policy.py), then what it says about the
    safety gate (agent/desired/overrides.py: the gate is the operator's), their problems added
    to the desired state's."""
    desired = validated.desired
    assert desired is not None
    with timed(validated.steps, "validate"):
        desired.problems += repo_rules.check(validated.manifest, desired, repo_policy,
                                             secret_labels=secret_labels)
        desired.problems += overrides.check(validated.manifest, delete_threshold)


def secrets_to_observe(validated: Validated) -> set[tuple[str, str]]:
    """The Secrets (namespace, name) whose live labels the policy asks for."""
    return tenancy.secrets_to_observe(validated.manifest)
