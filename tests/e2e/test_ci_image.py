"""The agent's image as a CI image: a pod of it (as a CI job runs a container) reads a Git checkout that
another user owns, through its entrypoint (`docker run IMAGE plan ...`) and through a shell script with
the entrypoint set aside (GitLab CI's `entrypoint: [""]`, GitHub's container jobs), and says its version."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import time
import uuid
from typing import Any

from tests.conftest import SAMPLE
from tests.support.node import Node


def _checkout(root: pathlib.Path) -> pathlib.Path:
    """A repository as a CI runner clones it: owned by root, two commits (the second changes one address)."""
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    shutil.copytree(SAMPLE, root / "dns")
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "base"], check=True)
    web = root / "dns" / "records" / "example-com" / "web.yaml"
    web.write_text(web.read_text().replace("    - 192.0.2.10\n", "    - 192.0.2.20\n"))
    subprocess.run([*git, "commit", "-q", "-am", "head"], check=True)
    for path in [root, *root.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)  # readable by the image's user, owned by root
    return root


def _run_pod(core: Any, namespace: str, node: Node, workdir: pathlib.Path, **container: Any) -> tuple[str, str]:
    name = f"ci-{uuid.uuid4().hex[:8]}"
    core.create_namespaced_pod(namespace, {
        "metadata": {"name": name},
        "spec": {"restartPolicy": "Never", "automountServiceAccountToken": False,
                 "volumes": [{"name": "work", "hostPath": {"path": str(workdir), "type": "Directory"}}],
                 "containers": [{"name": "job", "image": node.image("agent"), "imagePullPolicy": "Never",
                                 "workingDir": "/builds/dns", "volumeMounts": [{"name": "work", "mountPath": "/builds/dns"}],
                                 "securityContext": {"runAsNonRoot": True}, **container}]}})
    deadline, phase = time.monotonic() + 120, None
    while time.monotonic() < deadline:
        phase = core.read_namespaced_pod(name, namespace).status.phase
        if phase in ("Succeeded", "Failed"):
            break
        time.sleep(0.5)
    log = core.read_namespaced_pod_log(name, namespace) if phase in ("Succeeded", "Failed") else ""
    core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
    return str(phase), log


def test_the_agent_image_plans_a_checkout_as_a_ci_job(node: Node, api: Any, tmp_path: pathlib.Path) -> None:
    from kubernetes import client

    core = client.CoreV1Api(api)
    namespace = f"ci-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": namespace}})
    work = _checkout(tmp_path / "checkout")
    os.chmod(tmp_path, 0o755)
    try:
        phase, log = _run_pod(core, namespace, node, work, args=["version"])
        assert phase == "Succeeded", log
        assert log.splitlines()[0] == "bindy-agent 0.1.0" and "CRD API version: bindy.firestoned.io/v1beta1" in log

        phase, log = _run_pod(core, namespace, node, work, args=["plan", "dns", "--base", "HEAD~1", "--head", "HEAD"])
        assert phase == "Succeeded", log  # the entrypoint is bindy-agent: `docker run IMAGE plan ...`
        assert "  ~ ARecord dns-system/www  changed: spec.ipv4Addresses[0]\n" in log
        assert log.endswith("Plan: 0 to create, 2 to update, 0 to delete.\n")

        script = "bindy-agent validate dns && bindy-agent plan dns --base HEAD~1 -o markdown --error-format github"
        phase, log = _run_pod(core, namespace, node, work, command=["sh", "-c", script])
        assert phase == "Succeeded", log  # a CI job's shell script, the entrypoint set aside
        assert "dns: 27 objects in 9 files: valid (0 warnings)" in log and "**1 edit to the repository's CRs**: 1 changed." in log
    finally:
        core.delete_namespace(namespace)
