"""Apply 500 generated objects with bindy-agent vs `kubectl apply --server-side`, same run.

    .venv/bin/python bench/kube_apply_bench.py [--instances 100]

Starts the test control plane (tests/support; build it first with scripts/install-test-deps).
A Bind9Cluster with 50 primaries + 50 secondaries expands to 500 objects (each instance: the
Bind9Instance CR, Secret, ConfigMap, Deployment, Service) plus the cluster and a ServiceAccount.
bindy-agent syncs them into one namespace; kubectl applies the very same manifests (rendered by
the agent, without owner references, which need UIDs) into another. Both runs then repeat with
nothing to change. Prints both times and the ratio kubectl/agent (goal: >= 1.0x).
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile
import time

import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from agent.desired import hierarchy as desired
from agent.gate import safety
from agent.load import loader
from agent.plan import kubediff
from agent.reconcile import crds
from agent.reconcile.kubeapi import KubeApi
from agent.reconcile.statestore import FileStore
from agent.run import orchestrator, revisions
from agent.sources import localdir
from tests.support.kube import KubeCluster


def localdir_load(root: pathlib.Path, **kwargs: str) -> loader.Manifest:
    return loader.load_files(localdir.files(root), **kwargs)


def _state(root: pathlib.Path, namespace: str, instances: int) -> desired.Desired:
    half = instances // 2
    (root / "cluster.yaml").write_text(
        "apiVersion: bindy.firestoned.io/v1beta1\nkind: Bind9Cluster\n"
        f"metadata: {{name: bench, namespace: {namespace}}}\n"
        f"spec: {{primary: {{replicas: {half}}}, secondary: {{replicas: {instances - half}}}}}\n")
    manifest = localdir_load(root)
    assert manifest.ok
    return desired.build(manifest)


def _kubectl(kubeconfig: pathlib.Path, manifest: pathlib.Path) -> float:
    start = time.perf_counter()
    argv = ["kubectl", "--kubeconfig", str(kubeconfig), "apply", "--server-side",
            "--field-manager", "kubectl-bench", "-f", str(manifest)]
    result = subprocess.run(argv, check=False, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"kubectl failed: {result.stderr[-2000:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        cluster = KubeCluster(work / "kube").start()
        try:
            api = KubeApi.from_kubeconfig(str(cluster.kubeconfig))
            crds.install_crds(api)
            for ns in ("bench-agent", "bench-kubectl"):
                api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            (work / "a").mkdir()
            (work / "k").mkdir()
            ours = _state(work / "a", "bench-agent", args.instances)
            theirs = _state(work / "k", "bench-kubectl", args.instances)
            count = len(ours.objects)

            def sync(client: KubeApi) -> orchestrator.RunOutcome:
                options = orchestrator.Options(agent_namespace="bench-agent", install_crds=False,
                                               policy=safety.Policy(force=True))
                targets = orchestrator.Targets(FileStore(work / "state"), client)
                return orchestrator.run(revisions.DirectoryRevisions(work / "a", revision="bench"), targets, options)

            start = time.perf_counter()
            first = sync(api)
            agent_first = time.perf_counter() - start
            assert first.kube is not None and first.kube.ok, (first.outcome, first.message)
            api2 = KubeApi.from_kubeconfig(str(cluster.kubeconfig))
            start = time.perf_counter()
            sync(api2)
            agent_again = time.perf_counter() - start

            docs = []
            for obj in theirs.objects:
                body = kubediff.manifest(obj, "bench-kubectl")
                body["metadata"].pop("ownerReferences", None)
                if obj.key.kind == "Secret":
                    body["stringData"] = {**body["stringData"], "secret": "YmVuY2g="}
                docs.append(yaml.safe_dump(body, sort_keys=False))
            manifest = work / "objects.yaml"
            manifest.write_text("\n---\n".join(docs))
            kubectl_first = _kubectl(cluster.kubeconfig, manifest)
            kubectl_again = _kubectl(cluster.kubeconfig, manifest)
        finally:
            cluster.stop()
    print(f"objects: {count} (a Bind9Cluster with {args.instances} instances, 5 objects each)")
    applied = len(first.result.applied)
    print(f"first apply   bindy-agent {agent_first:6.2f} s ({applied} applied + statuses)   "
          f"kubectl --server-side {kubectl_first:6.2f} s   ratio {kubectl_first / agent_first:.2f}x")
    print(f"nothing to do bindy-agent {agent_again:6.2f} s ({api2.write_count} writes)               "
          f"kubectl --server-side {kubectl_again:6.2f} s   ratio {kubectl_again / agent_again:.2f}x")
    print("ratio = kubectl time / bindy-agent time (goal >= 1.0x)")


if __name__ == "__main__":
    main()
