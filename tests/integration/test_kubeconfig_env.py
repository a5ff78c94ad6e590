"""install-crds finds the cluster the way kubectl does - $KUBECONFIG, then ~/.kube/config - against
the real API server, and `plan` stays offline unless the cluster is asked for."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

from tests.conftest import ROOT
from tests.support.kube import KubeCluster


def _cli(*args: str, home: pathlib.Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    return subprocess.run([sys.executable, "-m", "agent", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**base, "HOME": str(home), **env}, timeout=120)


def test_install_crds_and_plan_find_the_cluster_like_kubectl(kube: KubeCluster, tmp_path: pathlib.Path) -> None:
    home = tmp_path / "home"
    from_env = _cli("install-crds", home=home, KUBECONFIG=str(kube.kubeconfig))
    assert (from_env.returncode, from_env.stderr.splitlines()[-1][-18:]) == (0, "all 12 Established")
    (home / ".kube").mkdir(parents=True)
    shutil.copy(kube.kubeconfig, home / ".kube" / "config")
    from_home = _cli("install-crds", home=home)
    assert from_home.returncode == 0, from_home.stderr

    offline = _cli("plan", "sample-repo", home=home)  # a kubeconfig lies around: the plan stays offline
    assert offline.returncode == 0 and "Kubernetes objects (38)" in offline.stdout
    assert "not observed" not in offline.stdout
    online = _cli("plan", "sample-repo", "--context", _current_context(kube.kubeconfig), home=home)
    assert online.returncode == 0, online.stderr  # asked for: the live cluster is observed
    assert "Note: DNS (zones and records) is not observed without zone endpoints; only the Kubernetes layer is " \
           "planned." in online.stdout
    explicit = _cli("plan", "sample-repo", "--kubeconfig", str(kube.kubeconfig), home=tmp_path / "elsewhere")
    assert explicit.returncode == 0 and explicit.stdout == online.stdout


def _current_context(kubeconfig: pathlib.Path) -> str:
    import yaml

    return str(yaml.safe_load(kubeconfig.read_text())["current-context"])
