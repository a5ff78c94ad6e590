"""The sample repository in a test's own namespace, synced onto a real control plane through the
orchestrator: the repository copy and one sync run."""

from __future__ import annotations

import pathlib
import shutil
from typing import Any

from agent.clients.kubeapi import KubeApi
from agent.run import orchestrator
from tests.conftest import SAMPLE, load_dir
from tests.support import agentrun
from tests.support.kube import KubeCluster


def _repo(tmp_path: pathlib.Path, namespace: str) -> pathlib.Path:
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root)
    for path in root.rglob("*.yaml"):
        path.write_text(path.read_text().replace("dns-system", namespace))
    return root


def _sync(kube: KubeCluster, root: pathlib.Path, namespace: str, revision: str = "rev-1",
          **kwargs: Any) -> tuple[KubeApi, orchestrator.RunOutcome]:
    manifest = load_dir(root)
    assert manifest.ok, [str(p) for p in manifest.problems]
    api = KubeApi.from_kubeconfig(str(kube.kubeconfig))
    run = agentrun.sync_dir(root, state=root.parent / "state", kube_api=api, agent_namespace=namespace,
                            revision=revision, **kwargs)
    assert run.plan is not None and run.plan.kube is not None, (run.outcome, run.message, run.problems)
    return api, run
