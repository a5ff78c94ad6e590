"""Runs the agent's one orchestrator the way the CLI and the scheduler do, for tests."""

from __future__ import annotations

import pathlib
from typing import Any

from agent.clients.kubeapi import KubeApi
from agent.clients.statestore import FileStore, Store
from agent.desired import policy
from agent.gate import safety
from agent.run import agent as run_agent
from agent.run import orchestrator, planner, revisions
from agent.run import settings as config
from agent.run.memory import ONE_SHOT, Memory
from agent.sources.git import GitSource
from tests.support.procs import free_port


def options(*, force: bool = False, allow_prune: bool = False, **kwargs: Any) -> planner.Options:
    """Tests run in namespaces of their own: any namespace is allowed unless a test says otherwise."""
    kwargs.setdefault("repo_policy", policy.PolicySettings.of(allowed_namespaces="*"))
    kwargs.setdefault("policy", safety.Policy(force=force, allow_prune=allow_prune))
    return planner.Options(**kwargs)


def sync_dir(root: pathlib.Path, *, store: Store | None = None, state: pathlib.Path | None = None,
             kube_api: KubeApi | None = None, endpoints: Any = None, revision: str | None = None,
             **kwargs: Any) -> orchestrator.RunOutcome:
    """`bindy-agent sync DIR`: `state` is a FileStore directory when no `store` is given."""
    store = store or FileStore(state or root.parent / "state")
    source = revisions.DirectoryRevisions(root, revision=revision)
    return orchestrator.run(source, planner.Targets(store, kube_api, endpoints), options(**kwargs))


def sync_git(source: GitSource, *, store: Store, kube_api: KubeApi | None = None, endpoints: Any = None,
             forge: Any = None, alerts: Any = None, memory: Memory = ONE_SHOT, yield_to: Any = None,
             **kwargs: Any) -> orchestrator.RunOutcome:
    """`bindy-agent sync --repo URL`, or with `memory` (and `yield_to`: whether a push waits) one run of
    `bindy-agent run` (statuses, alerts)."""
    targets = planner.Targets(store, kube_api, endpoints, forge, alerts)
    try:
        return orchestrator.run(revisions.GitRevisions(source), targets, options(**kwargs), memory=memory,
                                yield_to=yield_to)
    finally:
        source.close()  # its `git cat-file` processes: a test makes a source per run (the agent one per life)


def idle_agent(tmp_path: pathlib.Path) -> run_agent.Agent:
    """A long-running agent (not started) whose repository does not exist and whose interval (an hour)
    never ticks in a test: only what the test triggers runs."""
    settings = config.load_settings({"repo": str(tmp_path / "gone"), "cache": str(tmp_path / "cache"),
                                     "listen": f"127.0.0.1:{free_port()}", "interval": 3600}, environ={})
    return run_agent.Agent(settings)
