"""Image pull secrets on the real node (issue 26, "Pods and storage"): a private registry that asks for
a password, and what a user sees with and without the Secret.

The registry (tests/support/registry.py): Debian's docker-registry with TLS and htpasswd basic auth,
holding the locally built bind9 image under a tag nothing else has
(`docker.io/internetsystemsconsortium/bind9:e2e-pull-<hash>`, the name Bindy's admission trusts; the
node's containerd has this registry as the mirror of docker.io, as a cluster without Internet access
would). Every pod of the repository pulls it with `imagePullPolicy: Always`, so every start asks the
registry, with the credentials of the pod's `imagePullSecrets` and no others. The repository,
installed as docs/install.md says, with the two Secrets created beforehand (kubernetes.io/dockerconfigjson,
labelled `bindy.firestoned.io/allow-reference: "true"` as the agent requires of a Secret a CR names):
  * Bind9Cluster `mirror`: `image: {image, imagePullPolicy: Always, imagePullSecrets: [bindy-mirror]}`;
    its generated instance mirror-primary-0 serves pull.example;
  * Bind9Instance `mirror-nosecret` of that cluster with its own image block without secrets (the
    instance's block is taken whole, as in Bindy: the cluster's secret does not fill it in);
  * Bind9Instance `mirror-wrongpass` naming `bindy-mirror-wrong`, a Secret with a wrong password;
  * ClusterBind9Provider `mirrorprov` with the image block and the secret: its cluster's instance pulls.
Then: the pods with the right Secret pull and serve; the other two instances' Ready conditions name
the pod and ErrImagePull/ImagePullBackOff with the registry's 401; adding the Secret in Git fixes one.
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agent.model import names
from tests.support import install
from tests.support.install import DNS_NS, Installation, kubectl
from tests.support.node import Node
from tests.support.registry import Registry

FIRST_SYNC_TIMEOUT = int(os.environ.get("BINDY_E2E_FIRST_SYNC", "420"))
PUSH_TIMEOUT = 120
RESYNC = 20 + 10 + 1
UPSTREAM = "docker.io"  # the registry host the images are named for; the test registry mirrors it
REPOSITORY = "internetsystemsconsortium/bind9"
SECRET, WRONG = "bindy-mirror", "bindy-mirror-wrong"
PULL_ERRORS = ("ErrImagePull", "ImagePullBackOff")


def _image(node: Node) -> str:
    return f"{UPSTREAM}/{REPOSITORY}:e2e-pull-{node.image('bind9').rpartition(':')[2]}"


def _block(node: Node, secrets: list[str] | None) -> str:
    pull = f", imagePullSecrets: [{', '.join(secrets)}]" if secrets else ""
    return f'{{image: "{_image(node)}", imagePullPolicy: Always{pull}}}'


def _instance(node: Node, name: str, secrets: list[str] | None) -> str:
    return f"""apiVersion: bindy.firestoned.io/v1beta1
kind: Bind9Instance
metadata: {{name: {name}, namespace: dns-system}}
spec:
  clusterRef: mirror
  role: secondary
  image: {_block(node, secrets)}
"""


def _files(node: Node) -> dict[str, str]:
    sidecar = f'{{image: "{node.mirror("zone-api")}", imagePullPolicy: Never}}'
    return {
        "infrastructure/cluster.yaml": f"""apiVersion: bindy.firestoned.io/v1beta1
kind: Bind9Cluster
metadata: {{name: mirror, namespace: dns-system}}
spec:
  version: "9.18"
  image: {_block(node, [SECRET])}
  primary: {{replicas: 1}}
  secondary: {{replicas: 0}}
  global:
    recursion: false
    allowQuery: ["any"]
    bindcarConfig: {sidecar}
""",
        "infrastructure/nosecret.yaml": _instance(node, "mirror-nosecret", None),
        "infrastructure/wrongpass.yaml": _instance(node, "mirror-wrongpass", [WRONG]),
        "infrastructure/provider.yaml": f"""apiVersion: bindy.firestoned.io/v1beta1
kind: ClusterBind9Provider
metadata: {{name: mirrorprov}}
spec:
  namespace: dns-system
  version: "9.18"
  image: {_block(node, [SECRET])}
  primary: {{replicas: 1}}
  secondary: {{replicas: 0}}
  global:
    recursion: false
    allowQuery: ["any"]
    bindcarConfig: {sidecar}
""",
        "zones/pull.yaml": """apiVersion: bindy.firestoned.io/v1beta1
kind: DNSZone
metadata: {name: pull, namespace: dns-system}
spec:
  zoneName: pull.example
  clusterRef: mirror
  soaRecord: {primaryNs: ns1.pull.example., adminEmail: hostmaster.pull.example., serial: 1, refresh: 3600,
              retry: 600, expire: 604800, negativeTtl: 300}
  nameServers:
    - {hostname: ns1.pull.example., ipv4Address: 192.0.2.53}
""",
        "records/www.yaml": """apiVersion: bindy.firestoned.io/v1beta1
kind: ARecord
metadata: {name: pull-www, namespace: dns-system}
spec: {name: "www.pull.example.", ipv4Addresses: ["192.0.2.81"]}
""",
    }


class Pulling(Installation):
    registry: Registry
    image: str
    push_seconds = 0.0

    def diagnose(self) -> str:
        return f"{super().diagnose()}\nregistry log:\n{self.registry.log(15)}"


def _pull_secret(inst: Installation, name: str, config: str) -> None:
    kubectl(inst.node, "-n", DNS_NS, "apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": name, "labels": {names.ALLOW_REFERENCE_LABEL: names.ALLOW_REFERENCE_VALUE}},
        "data": {".dockerconfigjson": base64.b64encode(config.encode()).decode()}}))


@pytest.fixture(scope="module")
def installed(node: Node, api: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pulling]:
    tmp = tmp_path_factory.mktemp("pull")
    inst = Pulling(node, api, tmp)
    inst.clean()
    inst.registry = Registry(node, tmp / "registry")
    inst.registry.start()
    try:
        started = time.monotonic()
        inst.image = _image(node)
        inst.registry.push("bind9", REPOSITORY, inst.image.rpartition(":")[2])
        inst.push_seconds = time.monotonic() - started
        node.ctr("images", "rm", inst.image, check=False)  # an earlier run's pull: every pod must pull it now
        inst.registry.mirror(UPSTREAM)
        # the user's part, before the agent's first run: the namespace and the two pull Secrets
        kubectl(node, "create", "namespace", DNS_NS)
        _pull_secret(inst, SECRET, inst.registry.dockerconfigjson(UPSTREAM))
        _pull_secret(inst, WRONG, inst.registry.dockerconfigjson(UPSTREAM, password="not-the-password"))
        inst.sha = inst.push(_files(node), "BIND9 from a private registry, with and without its pull Secret")
        started = time.monotonic()
        inst.install(agent_env={"BINDY_AGENT_INTERVAL": "10", "BINDY_AGENT_JITTER": "1",
                                "BINDY_AGENT_RESYNC_AFTER": "20"})
        inst.first_sync = inst.wait_zones(inst.desired(), FIRST_SYNC_TIMEOUT, roles=("primary",))
        print(f"\n[e2e] bind9 pushed to the registry in {inst.push_seconds:.1f} s; kubectl apply -k -> pull.example "
              f"served by the pod that pulled it {time.monotonic() - started:.1f} s")
        yield inst
    finally:
        try:
            if not os.environ.get("BINDY_E2E_KEEP"):
                inst.uninstall()
        finally:
            inst.registry.stop()
            node.ctr("images", "rm", _image(node), check=False)


def _wait(check: Any, timeout: float, what: str, inst: Pulling, pause: float = 1) -> Any:
    return inst.wait(check, timeout, what, pause=pause)


def _pulled(inst: Installation, instance: str) -> list[float]:
    """The kubelet's `Successfully pulled image ... in <d>` of the instance's pods, in seconds."""
    out = []
    for event in inst.core().list_namespaced_event(DNS_NS).items:
        if event.reason == "Pulled" and event.involved_object.name.startswith(f"{instance}-"):
            found = re.search(r"Successfully pulled image .* in ([0-9.]+)(ms|s)", event.message or "")
            if found:
                out.append(float(found[1]) / (1000 if found[2] == "ms" else 1))
    return out


def _failed_pulls(inst: Installation, instance: str) -> list[str]:
    """The kubelet's `Failed to pull image ...` event messages of the instance's pods."""
    return [e.message for e in inst.core().list_namespaced_event(DNS_NS).items
            if e.reason == "Failed" and e.involved_object.name.startswith(f"{instance}-")
            and (e.message or "").startswith("Failed to pull image")]


def _ready(inst: Installation, instance: str) -> bool:
    return inst.instance_conditions(instance).get("Ready", ("", "", ""))[0] == "True"


def _pull_failure(inst: Installation, instance: str) -> tuple[str, str, str] | None:
    """The instance's Ready condition once it says the pull failed."""
    ready = inst.instance_conditions(instance).get("Ready")
    if ready and ready[0] == "False" and any(r in ready[2] for r in PULL_ERRORS):
        return ready
    return None


def test_the_clusters_pull_secret_pulls_the_image_and_the_pod_serves(installed: Pulling) -> None:
    inst = installed
    desired = inst.desired()
    inst.wait_served(desired, PUSH_TIMEOUT, want_pods={"mirror-nosecret": 0, "mirror-wrongpass": 0})
    pods = inst.core().list_namespaced_pod(DNS_NS, label_selector="app.kubernetes.io/instance=mirror-primary-0").items
    assert len(pods) == 1
    spec = pods[0].spec
    assert [s.name for s in spec.image_pull_secrets or []] == [SECRET]
    bind9 = next(c for c in spec.containers if c.name == "bind9")
    assert (bind9.image, bind9.image_pull_policy) == (inst.image, "Always")
    took = _wait(lambda: _pulled(inst, "mirror-primary-0"), 30, "the kubelet's Pulled event", inst)
    # the registry was asked, and let the Secret's user in
    answered = [line for line in inst.registry.requests() if f"/v2/{REPOSITORY}/manifests/" in line
                and "containerd/" in line]
    assert any('" 401 ' in line for line in answered) and any('" 200 ' in line for line in answered), answered
    _wait(lambda: _ready(inst, "mirror-primary-0"), RESYNC + 30, "mirror-primary-0 Ready", inst)
    print(f"\n[e2e] pulled with the cluster's Secret in {took[0]:.2f} s; pull.example served by the pod")


def test_without_the_secret_or_with_a_wrong_password_the_status_names_the_pull_error(installed: Pulling) -> None:
    inst = installed
    started = time.monotonic()
    found = {}
    for name in ("mirror-nosecret", "mirror-wrongpass"):
        found[name] = _wait(lambda n=name: _pull_failure(inst, n), RESYNC + 60,  # type: ignore[misc]
                            f"{name}'s Ready condition naming the pull error", inst)
    shown = time.monotonic() - started
    for name, (status, reason, message) in found.items():
        # what `kubectl get bind9instance -o yaml` shows: the pod, the kubelet's reason, the image; an
        # ErrImagePull message ends with the registry's answer (ImagePullBackOff's says only "Back-off")
        assert reason == "NotReady" and f"pod {name}-" in message, (name, reason, message)
        assert "container bind9:" in message and (inst.image in message or "401 Unauthorized" in message), message
        if ": ErrImagePull: " in message:
            assert message.endswith("401 Unauthorized"), message
        degraded = inst.instance_conditions(name)["Degraded"]
        assert degraded[0] == "True" and degraded[2] == message, degraded
        # and `kubectl describe pod` (the kubelet's events): the registry refused the credentials, or none
        refused = _wait(lambda n=name: _failed_pulls(inst, n), 30, f"{name}'s Failed pull event", inst)  # type: ignore[misc]
        assert any(m.endswith("401 Unauthorized") for m in refused), refused
        print(f"\n[e2e] {name}: Ready {status} {reason}: {message}\n      event: {refused[-1]}")
    pods = inst.core().list_namespaced_pod(DNS_NS, label_selector="app.kubernetes.io/instance=mirror-nosecret").items
    assert not pods[0].spec.image_pull_secrets, "the instance's image block is taken whole: no secret from the cluster"
    print(f"[e2e] both failures shown in the status {shown:.1f} s after the test began waiting")

    # the fix a user makes: name the Secret in Git
    inst.push({"infrastructure/nosecret.yaml": _instance(inst.node, "mirror-nosecret", [SECRET])},
              "mirror-nosecret names the pull Secret")
    fixed = time.monotonic()
    assert inst.webhook() in (200, 202)
    _wait(lambda: _ready(inst, "mirror-nosecret"), RESYNC + PUSH_TIMEOUT, "mirror-nosecret Ready once it names the Secret",
          inst)
    pod = inst.pods("mirror-nosecret")[0]
    assert install.query(pod.ip, "pull.example.", "SOA").answer, pod
    print(f"[e2e] imagePullSecrets added in Git -> mirror-nosecret Ready and serving {time.monotonic() - fixed:.1f} s "
          "later")


def test_a_providers_pull_secret_reaches_its_clusters_pods(installed: Pulling) -> None:
    inst = installed
    name = "mirrorprov-primary-0"
    _wait(lambda: _ready(inst, name), RESYNC + PUSH_TIMEOUT, f"{name} Ready", inst)
    pod = inst.core().list_namespaced_pod(DNS_NS, label_selector=f"app.kubernetes.io/instance={name}").items[0]
    assert [s.name for s in pod.spec.image_pull_secrets or []] == [SECRET]
    assert next(c for c in pod.spec.containers if c.name == "bind9").image == inst.image
    assert _pulled(inst, name), "the provider's pod pulled the image"
