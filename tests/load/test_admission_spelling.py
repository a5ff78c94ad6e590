"""Bindy's admission rules cannot be side-stepped by how a field is spelled or
typed. Only Bindy's camelCase names are fields (a snake_case key is an unknown field, not a second
way past the admission rules), and types are the CRDs' (no TTL 1 from `true`, no 3600 from a string
or a float). Each such document goes through `validate` (exit 1) and `plan -o json` (exit 2, `plan DIR`'s error status),
with file:line, and nothing is planned.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from tests.conftest import SAMPLE, Repo
from tests.support import clirun

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
CLUSTER = HEAD + """kind: Bind9Cluster
metadata: {name: dns, namespace: dns-system}
spec:
  version: "9.18"
  primary: {replicas: 1}
"""
ZONE = HEAD + """kind: DNSZone
metadata: {name: example-com, namespace: dns-system}
spec:
  zoneName: example.com
  clusterRef: dns
  soaRecord: {primaryNs: ns1.example.com., adminEmail: admin.example.com., serial: 1,
              refresh: 3600, retry: 600, expire: 604800, negativeTtl: 300}
"""
RECORD = HEAD + """kind: ARecord
metadata: {name: www, namespace: dns-system}
spec:
  zone: example.com
  name: www
  ttl: 60
  ipv4Addresses: [192.0.2.1]
"""

# (id, file name, document, the line the problem is on, words the message must hold)
ATTACKS = [
    ("volume_mounts over /usr/sbin", "instance.yaml", HEAD + """kind: Bind9Instance
metadata: {name: i, namespace: dns-system}
spec:
  clusterRef: dns
  role: primary
  volumes:
    - {name: tools, emptyDir: {}}
  volume_mounts:
    - {name: tools, mountPath: /usr/sbin}
""", 9, ["spec.volume_mounts", "unknown field", "did you mean 'volumeMounts'"]),
    ("cluster volume_mounts", "cluster.yaml", HEAD + """kind: Bind9Cluster
metadata: {name: dns, namespace: dns-system}
spec:
  volumes: [{name: tools, emptyDir: {}}]
  volume_mounts: [{name: tools, mountPath: /usr/sbin}]
""", 6, ["spec.volume_mounts", "did you mean 'volumeMounts'"]),
    ("bindcar_config :latest", "instance.yaml", HEAD + """kind: Bind9Instance
metadata: {name: i, namespace: dns-system}
spec:
  clusterRef: dns
  role: primary
  bindcar_config:
    image: ghcr.io/firestoned/bindcar:latest
""", 7, ["spec.bindcar_config", "did you mean 'bindcarConfig'"]),
    ("env_vars BIND_API_TOKEN", "instance.yaml", HEAD + """kind: Bind9Instance
metadata: {name: i, namespace: dns-system}
spec:
  clusterRef: dns
  role: primary
  bindcarConfig:
    image: ghcr.io/firestoned/bindcar:v0.7.3
    env_vars:
      - {name: BIND_API_TOKEN, value: stolen}
""", 9, ["spec.bindcarConfig.env_vars", "did you mean 'envVars'"]),
    ("global_ bindcar env", "cluster.yaml", HEAD + """kind: Bind9Cluster
metadata: {name: dns, namespace: dns-system}
spec:
  global_:
    bindcarConfig:
      envVars: [{name: DISABLE_AUTH, value: "true"}]
""", 5, ["spec.global_", "did you mean 'global'"]),
    ("image_pull_policy", "cluster.yaml", HEAD + """kind: Bind9Cluster
metadata: {name: dns, namespace: dns-system}
spec:
  image: {image: "internetsystemsconsortium/bind9:9.18", image_pull_policy: Always}
""", 5, ["spec.image.image_pull_policy", "did you mean 'imagePullPolicy'"]),
    ("record ipv4_addresses", "record.yaml", HEAD + """kind: ARecord
metadata: {name: www, namespace: dns-system}
spec:
  name: www
  ipv4_addresses: [192.0.2.1]
""", 6, ["spec.ipv4_addresses", "did you mean 'ipv4Addresses'"]),
    ("ttl true", "record.yaml", HEAD + """kind: ARecord
metadata: {name: www, namespace: dns-system}
spec:
  name: www
  ttl: true
  ipv4Addresses: [192.0.2.1]
""", 6, ["spec.ttl", "must be an integer", "the boolean true"]),
    ("ttl quoted", "record.yaml", HEAD + """kind: ARecord
metadata: {name: www, namespace: dns-system}
spec:
  name: www
  ttl: "3600"
  ipv4Addresses: [192.0.2.1]
""", 6, ["spec.ttl", "must be an integer", "'3600'", "without quotes"]),
    ("ttl float", "record.yaml", HEAD + """kind: ARecord
metadata: {name: www, namespace: dns-system}
spec:
  name: www
  ttl: 3600.0
  ipv4Addresses: [192.0.2.1]
""", 6, ["spec.ttl", "must be an integer", "3600.0", "write 3600"]),
    ("zone ttl quoted", "zone.yaml", ZONE + '  ttl: "300"\n', 9, ["spec.ttl", "must be an integer"]),
    ("soa serial float", "zone.yaml", ZONE.replace("serial: 1,", "serial: 1.0,"), 7,
     ["spec.soaRecord.serial", "must be an integer"]),
    ("replicas true", "cluster.yaml", CLUSTER.replace("replicas: 1", "replicas: true"), 6,
     ["spec.primary.replicas", "must be an integer", "the boolean true"]),
    ("mx priority quoted", "mx.yaml", HEAD + """kind: MXRecord
metadata: {name: mx, namespace: dns-system}
spec:
  name: "@"
  priority: "10"
  mailServer: mail.example.com.
""", 6, ["spec.priority", "must be an integer"]),
    ("bindcar port quoted", "instance.yaml", HEAD + """kind: Bind9Instance
metadata: {name: i, namespace: dns-system}
spec:
  clusterRef: dns
  role: primary
  bindcarConfig: {port: "8080"}
""", 7, ["spec.bindcarConfig.port", "must be an integer"]),
    ("recursion string", "cluster.yaml", HEAD + """kind: Bind9Cluster
metadata: {name: dns, namespace: dns-system}
spec:
  global:
    recursion: "false"
""", 6, ["spec.global.recursion", "must be true or false", "not the string", "write false without quotes"]),
    ("string field given an int", "mx.yaml", HEAD + """kind: CAARecord
metadata: {name: caa, namespace: dns-system}
spec:
  name: "@"
  flags: 0
  tag: 1234
  value: letsencrypt.org
""", 7, ["spec.tag", "must be a string", "the integer 1234", "quote it"]),
    ("label value an int", "record.yaml", HEAD + """kind: ARecord
metadata:
  name: www
  namespace: dns-system
  labels: {tier: 1}
spec:
  name: www
  ipv4Addresses: [192.0.2.1]
""", 6, ["metadata.labels.tier", "must be a string"]),
]


def _write(repo: Repo, name: str, text: str) -> None:
    """The attack, next to a valid cluster (unless the attack is the cluster)."""
    if name != "cluster.yaml":
        repo.add("cluster.yaml", CLUSTER)
    repo.add(name, text)


@pytest.mark.parametrize(("name", "text", "line", "words"), [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_validate_refuses_it_at_its_line(repo: Repo, name: str, text: str, line: int, words: list[str]) -> None:
    _write(repo, name, text)
    result = clirun.main("validate", str(repo.root))
    assert result.returncode == 1, result
    found = [ln for ln in result.stderr.splitlines() + result.stdout.splitlines() if f"{name}:{line}:" in ln]
    assert found, result
    assert any(all(w in ln for w in words) for ln in found), (found, words)
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(("name", "text"), [a[1:3] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_plan_refuses_it_and_plans_nothing(repo: Repo, name: str, text: str) -> None:
    _write(repo, name, text)
    result = clirun.main("plan", str(repo.root), "-o", "json")
    assert result.returncode == 1, result  # `plan`'s error status
    assert "nothing planned" in result.stderr and f"{name}:" in result.stderr
    assert json.loads(result.stdout)["summary"]["create"] == 0
    assert "/usr/sbin" not in result.stdout and ":latest" not in result.stdout
    assert "BIND_API_TOKEN" not in result.stdout and "DISABLE_AUTH" not in result.stdout
    assert "Traceback" not in result.stderr


def test_the_camelcase_spelling_of_the_same_attack_meets_the_admission_rules(repo: Repo) -> None:
    """The same values under Bindy's names are refused by its admission policies, as before."""
    repo.add("cluster.yaml", CLUSTER)
    repo.add("instance.yaml", HEAD + """kind: Bind9Instance
metadata: {name: i, namespace: dns-system}
spec:
  clusterRef: dns
  role: primary
  volumes: [{name: tools, emptyDir: {}}]
  volumeMounts: [{name: tools, mountPath: /usr/sbin}]
  bindcarConfig:
    image: ghcr.io/firestoned/bindcar:latest
    envVars: [{name: BIND_API_TOKEN, value: stolen}]
""")
    result = clirun.main("validate", str(repo.root))
    assert result.returncode == 1
    out = result.stderr + result.stdout
    assert "instance.yaml:8:" in out and "bindy-pod-shape-validation" in out
    assert "instance.yaml:10:" in out and "bindy-image-provenance-validation" in out
    assert "instance.yaml:11:" in out and "bindy-bindcar-env-validation" in out


def test_what_the_crds_accept_still_validates(repo: Repo) -> None:
    """Integers, booleans, strings and free-form Kubernetes objects of the right types pass."""
    repo.add("cluster.yaml", CLUSTER + """  secondary: {replicas: 0}
  global:
    recursion: false
    allowQuery: [any]
    bindcarConfig: {port: 8080, image: "ghcr.io/firestoned/bindcar:v0.7.3"}
  volumes: [{name: data, emptyDir: {sizeLimit: 1Gi}}]
  volumeMounts: [{name: data, mountPath: /data/x, readOnly: true}]
  resources: {limits: {cpu: 1, memory: 256Mi}, requests: {cpu: "500m"}}
""")
    repo.add("zone.yaml", ZONE + "  ttl: 300\n")
    repo.add("records.yaml", RECORD + "---\n" + HEAD + """kind: MXRecord
metadata: {name: mx, namespace: dns-system}
spec: {zone: example.com, name: "@", priority: 10, mailServer: mail.example.net.}
""")
    result = clirun.main("validate", str(repo.root))
    assert result.returncode == 0, result
    planned = clirun.main("plan", str(repo.root), "-o", "json")
    assert planned.returncode == 0, planned  # planned
    assert json.loads(planned.stdout)["summary"]["create"] > 0


def test_the_sample_repository_still_validates() -> None:
    result = clirun.main("validate", str(SAMPLE))
    assert result.returncode == 0, result
    assert "error" not in (result.stderr + result.stdout).lower()


def test_the_agent_still_builds_models_by_attribute_name() -> None:
    from agent.model.infra import Bind9Config, BindcarConfig

    config = Bind9Config.model_validate({"allow_transfer": ["10.0.0.0/8"], "bindcar_config": {"env_vars": []}})
    assert config.allow_transfer == ["10.0.0.0/8"]
    assert isinstance(config.bindcar_config, BindcarConfig)


def test_shorthand_still_rewrites_into_bindy_spelling(tmp_path: pathlib.Path) -> None:
    repo = Repo(tmp_path)
    repo.add("cluster.yaml", HEAD + "kind: Bind9Cluster\nmetadata: {name: dns, namespace: dns-system}\n"
             "spec: {primaryReplicas: 2}\n")
    result = clirun.main("validate", str(repo.root))
    assert result.returncode == 0, result


def test_the_admission_rules_read_the_validated_object() -> None:
    """However the object was spelled on its way in, the rules see its fields by Bindy's names."""
    from agent.load import admission
    from agent.model.infra import Bind9Instance

    model = Bind9Instance.model_validate({
        "api_version": "bindy.firestoned.io/v1beta1", "kind": "Bind9Instance", "metadata": {"name": "i"},
        "spec": {"cluster_ref": "dns", "role": "primary",
                 "volume_mounts": [{"name": "t", "mountPath": "/usr/sbin"}],
                 "bindcar_config": {"image": "ghcr.io/firestoned/bindcar:latest",
                                    "env_vars": [{"name": "BIND_API_TOKEN", "value": "x"}]}}})
    found = {v.rule.name: v.loc for v in admission.violations("Bind9Instance", model)}
    assert found["mount-path-prefix"] == ("spec", "volumeMounts", 0, "mountPath")
    assert found["image-immutable"] == ("spec", "bindcarConfig", "image")
    assert found["bindcar-env-reserved-names"] == ("spec", "bindcarConfig", "envVars", 0, "name")


VERSIONED = {
    "Bind9Instance": ("instance.yaml", HEAD + """kind: Bind9Instance
metadata: {name: i, namespace: dns-system}
spec:
  clusterRef: dns
  role: primary
  version: %s
"""),
    "Bind9Cluster": ("cluster.yaml", CLUSTER.replace('version: "9.18"', "version: %s")),
    "ClusterBind9Provider": ("provider.yaml", HEAD + """kind: ClusterBind9Provider
metadata: {name: p}
spec:
  version: %s
  primary: {replicas: 1}
"""),
}


@pytest.mark.parametrize("kind", sorted(VERSIONED))
@pytest.mark.parametrize(("version", "words"), [
    ("latest", "version 'latest' makes the BIND9 image 'internetsystemsconsortium/bind9:latest', which is mutable"),
    ('""', "an empty version makes the BIND9 image 'internetsystemsconsortium/bind9:', which names no tag"),
    ("'9.18'", None),
])
def test_a_version_that_makes_a_mutable_image_is_refused(repo: Repo, kind: str, version: str,
                                                         words: str | None) -> None:
    # the image-provenance rule read only spec.image.image: `version: latest` planned bind9:latest
    from agent.desired import workloads
    from agent.load import rulechecks

    assert rulechecks.BIND9_REPOSITORY == workloads.BIND9_IMAGE  # the image the rule checks is the one planned
    name, text = VERSIONED[kind]
    _write(repo, name, text % version)
    validated = clirun.main("validate", str(repo.root))
    planned = clirun.main("plan", str(repo.root), "-o", "json")
    if words is None:  # a named version: as before
        assert validated.returncode == 0 and planned.returncode == 0, validated.stderr + planned.stderr
        assert "internetsystemsconsortium/bind9:9.18" in planned.stdout
        return
    assert validated.returncode == 1 and planned.returncode == 1, validated.stderr + planned.stderr
    line = text.splitlines().index("  version: %s") + 1
    assert f"{name}:{line}: {kind}/" in validated.stderr and f": spec.version: {words}" in validated.stderr, (
        validated.stderr)
    assert "(Bindy admission policy bindy-image-provenance-validation)" in validated.stderr
    assert json.loads(planned.stdout)["changes"] == []
