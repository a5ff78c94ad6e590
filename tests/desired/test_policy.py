"""The workload policy of the agent's settings: what a repository puts into generated pods and
Services is refused with file:line and field path, in `validate` and in the plan."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from agent.desired import hierarchy as desired
from agent.desired import policy
from agent.load import admission
from tests.conftest import SAMPLE, Repo, load_dir

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
INSTANCE = HEAD + """kind: Bind9Instance
metadata: {name: i, namespace: dns-system}
spec:
  clusterRef: dns
  role: primary
"""
CLUSTER = HEAD + "kind: Bind9Cluster\nmetadata: {name: dns, namespace: dns-system}\nspec:\n"


def _check(root: pathlib.Path, labels: Any = None, **settings: Any) -> list[str]:
    manifest = load_dir(root)
    assert manifest.ok, [str(p) for p in manifest.problems]
    return _policy(manifest, labels, **settings)


def _policy(manifest: Any, labels: Any = None, **settings: Any) -> list[str]:
    state = desired.build(manifest)
    found = policy.check(manifest, state, policy.PolicySettings.of(**settings), secret_labels=labels)
    return [str(p) for p in found]


def _behind_bindy(root: pathlib.Path, monkeypatch: pytest.MonkeyPatch, refused_by_bindy: list[str],
                  **settings: Any) -> list[str]:
    """What Bindy's admission rules refuse at load, and what the agent's policy, the second line,
    finds on the same documents when the first line is taken away."""
    loaded = load_dir(root)
    assert [p.path for p in loaded.problems if "Bindy admission policy" in p.message] == refused_by_bindy
    monkeypatch.setattr(admission, "violations", lambda kind, data: [])
    return _policy(load_dir(root), **settings)


def _instance(repo: Repo, spec: str) -> pathlib.Path:
    repo.add("cluster.yaml", CLUSTER + "  primary: {replicas: 0}\n  secondary: {replicas: 0}\n")
    repo.add("i.yaml", INSTANCE + spec)
    return repo.root


def test_the_sample_repository_meets_the_default_policy() -> None:
    assert _check(SAMPLE) == []


def test_images_come_only_from_the_allowed_publishers(repo: Repo) -> None:
    # Bindy's own admission rules already refuse images outside its trusted publishers at load
    # (tests/load/test_admission.py); the agent's setting narrows that further.
    root = _instance(repo, "  image: {image: 'ghcr.io/firestoned/bind9:9.18'}\n"
                     "  bindcarConfig: {image: 'ghcr.io/firestoned/bindcar:v1'}\n")
    assert _check(root) == []
    assert _check(root, allowed_registries="docker.io/internetsystemsconsortium") == [
        "i.yaml:7: Bind9Instance/dns-system/i: spec.image.image: image ghcr.io/firestoned/bind9:9.18 "
        "(ghcr.io/firestoned/bind9) is not from an allowed registry (docker.io/internetsystemsconsortium); "
        "the agent's setting allowed_registries (--allowed-registries) decides",
        "i.yaml:8: Bind9Instance/dns-system/i: spec.bindcarConfig.image: image ghcr.io/firestoned/bindcar:v1 "
        "(ghcr.io/firestoned/bindcar) is not from an allowed registry (docker.io/internetsystemsconsortium); "
        "the agent's setting allowed_registries (--allowed-registries) decides"]
    assert _check(root, allowed_registries=["*"]) == []
    assert _check(root, allowed_registries="ghcr.io/firestoned/bindcar") == [
        _check(root, allowed_registries="docker.io/internetsystemsconsortium")[0].replace(
            "(docker.io/internetsystemsconsortium)", "(ghcr.io/firestoned/bindcar)")]


def test_an_image_the_cluster_sets_for_every_instance_is_checked(repo: Repo) -> None:
    repo.add("c.yaml", CLUSTER + "  image: {image: 'internetsystemsconsortium/bind9:9.18'}\n"
             "  global: {bindcarConfig: {image: 'ghcr.io/firestoned/bindcar:v1'}}\n")
    assert _check(repo.root) == []
    assert _check(repo.root, allowed_registries="ghcr.io/firestoned") == [
        "c.yaml:5: Bind9Cluster/dns-system/dns: spec.image.image: image internetsystemsconsortium/bind9:9.18 "
        "(docker.io/internetsystemsconsortium/bind9) is not from an allowed registry (ghcr.io/firestoned); the "
        "agent's setting allowed_registries (--allowed-registries) decides"]


@pytest.mark.parametrize("image, repository", [
    ("internetsystemsconsortium/bind9:9.18", "docker.io/internetsystemsconsortium/bind9"),
    ("index.docker.io/library/nginx", "docker.io/library/nginx"),
    ("localhost:5000/a/b@sha256:" + "a" * 64, "localhost:5000/a/b"),
    ("registry.example.com:443/team/bind9:1.0", "registry.example.com:443/team/bind9"),
    ("a//b", None), ("x:1:2", None), ("UPPER/case", None), ("x@sha256:short", None),
])
def test_image_references_are_normalised_like_docker_does(image: str, repository: str | None) -> None:
    assert policy.repository(image) == repository


def test_host_path_and_other_volume_types_follow_the_pod_security_level(repo: Repo,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = _instance(repo, """  volumes:
    - name: host
      hostPath: {path: /}
    - name: share
      nfs: {server: nfs.example, path: /export}
    - name: zones
      emptyDir: {}
    - name: nothing
  volumeMounts:
    - {name: host, mountPath: /host, mountPropagation: Bidirectional}
    - {name: share, mountPath: /etc/bind/keys}
""")
    restricted = [
        "i.yaml:9: Bind9Instance/dns-system/i: spec.volumes[0].hostPath: hostPath volumes are forbidden by Pod "
        "Security 'restricted' (they expose the node's files); the agent's setting pod_security (--pod-security) decides",
        "i.yaml:11: Bind9Instance/dns-system/i: spec.volumes[1].nfs: volume type 'nfs' is not allowed by Pod Security "
        "'restricted' (allowed: configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected, "
        "secret); the agent's setting pod_security (--pod-security) decides",
        "i.yaml:12: Bind9Instance/dns-system/i: spec.volumes[2].name: volume name 'zones' is used by the agent's own "
        "volumes; rename it",
        "i.yaml:14: Bind9Instance/dns-system/i: spec.volumes[3]: a volume needs exactly one source (emptyDir, "
        "configMap, secret ...)",
        "i.yaml:16: Bind9Instance/dns-system/i: spec.volumeMounts[0].mountPropagation: Bidirectional mount "
        "propagation needs a privileged container",
        "i.yaml:17: Bind9Instance/dns-system/i: spec.volumeMounts[1].mountPath: /etc/bind/keys is mounted by the agent "
        "(named.conf, RNDC key, zones, run)",
    ]
    bindy = ["spec.volumes[0].hostPath", "spec.volumes[1].nfs", "spec.volumes[3]", "spec.volumeMounts[0].mountPath",
             "spec.volumeMounts[1].mountPath"]
    assert _behind_bindy(root, monkeypatch, bindy) == restricted
    baseline = _behind_bindy(root, monkeypatch, [], pod_security="baseline")
    assert baseline == [restricted[0].replace("'restricted'", "'baseline'")] + restricted[2:]


def test_the_sidecar_env_cannot_override_the_agent_or_turn_off_authentication(repo: Repo,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    root = _instance(repo, """  config:
    bindcarConfig:
      envVars:
        - {name: DISABLE_AUTH, value: "true"}
        - {name: RNDC_SERVER, value: "attacker.example:953"}
        - {name: RUST_BACKTRACE, value: "1"}
""")
    assert _behind_bindy(root, monkeypatch, ["spec.config.bindcarConfig.envVars[0].name"]) == [
        "i.yaml:10: Bind9Instance/dns-system/i: spec.config.bindcarConfig.envVars[0].name: DISABLE_AUTH would turn off "
        "the zone API's authentication; remove it",
        "i.yaml:11: Bind9Instance/dns-system/i: spec.config.bindcarConfig.envVars[1].name: RNDC_SERVER is set by the "
        "agent; remove it"]


def test_resources_must_be_quantities_of_cpu_memory_or_storage_within_their_limits(repo: Repo) -> None:
    root = _instance(repo, """  resources:
    requests: {cpu: "2", memory: lots, nvidia.com/gpu: 1}
    limits: {cpu: 500m}
    claims: [{name: x}]
  bindcarConfig:
    port: 80
    resources: {requests: {memory: 64Mi}, limits: {memory: 0.5Gi}}
""")
    assert _check(root) == [
        "i.yaml:8: Bind9Instance/dns-system/i: spec.resources.requests.memory: 'lots' is not a Kubernetes quantity "
        "(e.g. 100m, 128Mi)",
        "i.yaml:8: Bind9Instance/dns-system/i: spec.resources.requests.nvidia.com/gpu: resource 'nvidia.com/gpu' is not "
        "one of cpu, memory, ephemeral-storage",
        "i.yaml:10: Bind9Instance/dns-system/i: spec.resources.claims: only `requests` and `limits` (mappings of cpu, "
        "memory, ephemeral-storage)",
        "i.yaml:8: Bind9Instance/dns-system/i: spec.resources.requests.cpu: request 2 exceeds the limit 500m",
        "i.yaml:12: Bind9Instance/dns-system/i: spec.bindcarConfig.port: port 80: the sidecar runs as a non-root user "
        "without capabilities, so its port must be between 1024 and 65535"]


def test_the_sidecar_port_cannot_take_nameds(repo: Repo) -> None:
    root = _instance(repo, "  bindcarConfig: {port: 5353}\n")
    assert _check(root) == ["i.yaml:7: Bind9Instance/dns-system/i: spec.bindcarConfig.port: port 5353 is used by "
                            "named in the same pod"]


def test_service_types_and_external_ips_come_from_the_settings(repo: Repo) -> None:
    repo.add("c.yaml", CLUSTER + """  primary:
    service:
      spec:
        type: NodePort
        externalIPs: [203.0.113.7, not-an-ip]
        ports: [{port: 53, nodePort: 30053}]
  secondary:
    service:
      spec: {loadBalancerIP: 198.51.100.1}
""")
    assert _check(repo.root) == [
        "c.yaml:8: Bind9Cluster/dns-system/dns: spec.primary.service.spec.type: Service type NodePort is not allowed "
        "(allowed: ClusterIP); the agent's setting allowed_service_types (--allowed-service-types) decides",
        "c.yaml:9: Bind9Cluster/dns-system/dns: spec.primary.service.spec.externalIPs[0]: external IP 203.0.113.7 is "
        "not allowed (allowed: none); the agent's setting allowed_external_ips (--allowed-external-ips) decides",
        "c.yaml:9: Bind9Cluster/dns-system/dns: spec.primary.service.spec.externalIPs[1]: 'not-an-ip' is not an IP "
        "address",
        "c.yaml:10: Bind9Cluster/dns-system/dns: spec.primary.service.spec.ports: set by the agent (DNS 53/udp and "
        "53/tcp and the zone API 8080 to this instance's pods; node ports are allocated by Kubernetes); remove it",
        "c.yaml:13: Bind9Cluster/dns-system/dns: spec.secondary.service.spec.loadBalancerIP: only applies to a "
        "Service of type LoadBalancer"]
    widened = _check(repo.root, allowed_service_types="ClusterIP,NodePort", allowed_external_ips=["203.0.113.0/24"])
    assert [p.split(": ")[2] for p in widened] == ["spec.primary.service.spec.externalIPs[1]",
                                                    "spec.primary.service.spec.ports",
                                                    "spec.secondary.service.spec.loadBalancerIP"]


def test_settings_that_mean_nothing_are_refused() -> None:
    with pytest.raises(ValueError, match="pod_security: expected one of baseline, restricted, got 'privileged'"):
        policy.PolicySettings.of(pod_security="privileged")
    with pytest.raises(ValueError, match="allowed_service_types: 'Ingress' is not a Service type"):
        policy.PolicySettings.of(allowed_service_types="ClusterIP,Ingress")
    with pytest.raises(ValueError, match="allowed_external_ips: '10.0.0.0/33' is not an IP address or CIDR"):
        policy.PolicySettings.of(allowed_external_ips=["10.0.0.0/33"])
