"""Tenancy from the agent's settings: allowed namespaces, cross-namespace references, and which
Secrets a CR may reference (checked against the live labels the observe step reads)."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from agent.desired import hierarchy as desired
from agent.desired import policy, tenancy
from agent.load import admission
from agent.model import names, problems
from tests.conftest import Repo, load_dir

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
SOA = ("  soaRecord: {primaryNs: ns1.example.com., adminEmail: a.example.com., serial: 1, refresh: 3600,"
       " retry: 600, expire: 604800, negativeTtl: 300}\n")
OPTED_IN = {names.ALLOW_REFERENCE_LABEL: "true"}
MANAGED = {names.MANAGED_BY_KEY: names.MANAGED_BY_VALUE}


def _check(root: pathlib.Path, labels: Any = None, default_namespace: str = names.DEFAULT_NAMESPACE,
           **settings: Any) -> list[str]:
    manifest = load_dir(root, default_namespace=default_namespace)
    assert manifest.ok, [str(p) for p in manifest.problems]
    state = desired.build(manifest)
    found = problems.sorted_problems(
        policy.check(manifest, state, policy.PolicySettings.of(**settings), secret_labels=labels))
    return [("warning: " if p.severity.value == "warning" else "") + str(p) for p in found]


def _instance(namespace: str, spec: str, name: str = "i") -> str:
    return HEAD + f"kind: Bind9Instance\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n" \
        "  clusterRef: dns\n  role: primary\n" + spec


def _cluster(namespace: str) -> str:
    return HEAD + f"kind: Bind9Cluster\nmetadata: {{name: dns, namespace: {namespace}}}\n" \
        "spec: {primary: {replicas: 0}, secondary: {replicas: 0}}\n"


def test_a_cr_in_another_teams_namespace_cannot_read_its_secrets(repo: Repo) -> None:
    repo.add("c.yaml", _cluster("team-b"))
    repo.add("i.yaml", _instance("team-b", "  rndcSecretRef: {name: team-db-password}\n"))
    labels = {("team-b", "team-db-password"): {"app": "db"}}
    assert _check(repo.root, labels) == [
        "c.yaml:3: Bind9Cluster/team-b/dns: metadata.namespace: namespace team-b is not one this agent may manage "
        "(allowed: dns-system); the agent's setting allowed_namespaces (--allowed-namespaces) decides, not the repository",
        "i.yaml:3: Bind9Instance/team-b/i: metadata.namespace: namespace team-b is not one this agent may manage "
        "(allowed: dns-system); the agent's setting allowed_namespaces (--allowed-namespaces) decides, not the repository",
        "i.yaml:7: Bind9Instance/team-b/i: spec.rndcSecretRef.name: Secret team-b/team-db-password was not generated "
        "by the agent and is not labelled bindy.firestoned.io/allow-reference: \"true\"; a CR may reference only "
        "Secrets the agent generates or that opt in with that label"]
    assert _check(repo.root, {("team-b", "team-db-password"): OPTED_IN}, allowed_namespaces="dns-system,team-b") == []
    assert _check(repo.root, labels, allowed_namespaces="*")[0].startswith("i.yaml:7: ")


def test_objects_without_a_namespace_get_the_first_allowed_one_and_another_is_said_missing(repo: Repo) -> None:
    repo.add("r.yaml", HEAD + "kind: ARecord\nmetadata:\n  name: www\nspec: {name: www, ipv4Addresses: [192.0.2.1]}\n")
    assert policy.PolicySettings.of().default_namespace == "dns-system" == names.DEFAULT_NAMESPACE
    assert policy.PolicySettings.of(allowed_namespaces="team-a,dns-system").default_namespace == "team-a"
    assert policy.PolicySettings.of(allowed_namespaces="*").default_namespace == "dns-system"
    assert _check(repo.root) == []  # in dns-system, which the default policy allows
    # a --namespace the agent may not manage: the namespace the document lacks is named as missing, with the fix
    assert _check(repo.root, default_namespace="default") == [
        "r.yaml:3: ARecord/default/www: metadata.namespace: missing: the object was put in namespace default (from "
        "--namespace), which this agent may not manage (allowed: dns-system); write metadata.namespace: dns-system"]
    repo.add("r.yaml", HEAD + "kind: ARecord\nmetadata:\n  name: www\n  namespace: default\n"
             "spec: {name: www, ipv4Addresses: [192.0.2.1]}\n")
    assert _check(repo.root, default_namespace="default") == [
        "r.yaml:5: ARecord/default/www: metadata.namespace: namespace default is not one this agent may manage "
        "(allowed: dns-system); the agent's setting allowed_namespaces (--allowed-namespaces) decides, not the repository"]


def test_a_provider_may_only_target_allowed_namespaces(repo: Repo) -> None:
    repo.add("p.yaml", HEAD + "kind: ClusterBind9Provider\nmetadata: {name: global}\n"
             "spec:\n  namespaces: [dns-system, kube-system]\n")
    repo.add("q.yaml", HEAD + "kind: ClusterBind9Provider\nmetadata: {name: plain}\nspec: {}\n")
    assert _check(repo.root) == [
        "p.yaml:5: ClusterBind9Provider/global: spec.namespaces[1]: namespace kube-system is not one this agent may "
        "manage (allowed: dns-system); the agent's setting allowed_namespaces (--allowed-namespaces) decides, not "
        "the repository"]
    assert _check(repo.root, allowed_namespaces="kube-system") == [
        "p.yaml:5: ClusterBind9Provider/global: spec.namespaces[0]: namespace dns-system is not one this agent may "
        "manage (allowed: kube-system); the agent's setting allowed_namespaces (--allowed-namespaces) decides, not "
        "the repository",
        "q.yaml:4: ClusterBind9Provider/plain: spec: namespace dns-system (the default) is not one this agent may "
        "manage (allowed: kube-system); the agent's setting allowed_namespaces (--allowed-namespaces) decides, not "
        "the repository"]


def _zone_and_records(repo: Repo) -> None:
    repo.add("c.yaml", _cluster("dns-system"))
    repo.add("z.yaml", HEAD + "kind: DNSZone\nmetadata: {name: example-com, namespace: dns-system}\n"
             "spec:\n  zoneName: example.com\n  clusterRef: dns\n" + SOA)
    repo.add("r.yaml", HEAD + """kind: ARecord
metadata: {name: by-zone, namespace: team-a}
spec:
  zone: example.com
  name: www
  ipv4Addresses: [192.0.2.1]
---
""" + HEAD + """kind: ARecord
metadata: {name: by-suffix, namespace: team-a}
spec:
  name: api.example.com.
  ipv4Addresses: [192.0.2.2]
---
""" + HEAD + """kind: ARecord
metadata: {name: same-namespace, namespace: dns-system}
spec: {zone: example.com, name: mail, ipv4Addresses: [192.0.2.3]}
""")


def test_records_may_not_join_a_zone_of_another_namespace_unless_the_settings_allow_it(repo: Repo) -> None:
    _zone_and_records(repo)
    assert _check(repo.root, allowed_namespaces="dns-system,team-a") == [
        "r.yaml:5: ARecord/team-a/by-zone: spec.zone: joins DNSZone DNSZone/dns-system/example-com (example.com.) in "
        "another namespace; references across namespaces are off (the agent's setting allow_cross_namespace_refs, "
        "--allow-cross-namespace-refs)",
        "r.yaml:13: ARecord/team-a/by-suffix: spec.name: joins DNSZone DNSZone/dns-system/example-com (example.com.) "
        "in another namespace; references across namespaces are off (the agent's setting allow_cross_namespace_refs, "
        "--allow-cross-namespace-refs)"]
    assert _check(repo.root, allowed_namespaces="dns-system,team-a", allow_cross_namespace_refs=True) == []


def test_a_zone_served_by_a_provider_in_several_namespaces_is_the_providers_purpose(repo: Repo) -> None:
    repo.add("p.yaml", HEAD + "kind: ClusterBind9Provider\nmetadata: {name: global}\n"
             "spec: {namespaces: [dns-a, dns-b], secondary: {replicas: 0}}\n")
    repo.add("z.yaml", HEAD + "kind: DNSZone\nmetadata: {name: example-com, namespace: dns-a}\n"
             "spec:\n  zoneName: example.com\n  clusterProviderRef: global\n" + SOA)
    state = desired.build(load_dir(repo.root))
    assert [str(k) for k in state.zones[0].primaries] == ["Bind9Instance/dns-a/global-primary-0",
                                                          "Bind9Instance/dns-b/global-primary-0"]
    assert _check(repo.root, allowed_namespaces="dns-a,dns-b") == []


@pytest.fixture
def second_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bindy's admission rules refuse most of these volumes at load already (tests/load/test_admission.py);
    the tenancy check is the second line: these tests take the first away to see it work alone."""
    monkeypatch.setattr(admission, "violations", lambda kind, data: [])


def test_bindy_itself_refuses_secret_volumes_outside_its_prefix(repo: Repo) -> None:
    repo.add("c.yaml", _cluster("dns-system"))
    repo.add("i.yaml", _instance("dns-system", SECRET_REFS))
    refused = [p.path for p in load_dir(repo.root).problems if "Bindy admission policy" in p.message]
    assert refused == ["spec.volumes[0].secret.secretName", "spec.volumes[1].projected", "spec.volumes[2].csi"]


SECRET_REFS = """  rndcSecretRef: {name: dns-secondary-0-rndc-key}
  image: {imagePullSecrets: [registry-login]}
  volumes:
    - {name: certs, secret: {secretName: tls-certs}}
    - name: bundle
      projected: {sources: [{secret: {name: ca-bundle}}, {configMap: {name: ca}}]}
    - name: csi
      csi: {driver: secrets-store.csi.k8s.io, nodePublishSecretRef: {name: vault-creds}}
  bindcarConfig:
    envVars:
      - name: TOKEN
        valueFrom: {secretKeyRef: {name: api-token, key: token}}
"""


@pytest.mark.usefixtures("second_line")
def test_every_kind_of_secret_reference_is_found_and_warned_about_without_a_cluster(repo: Repo) -> None:
    repo.add("c.yaml", HEAD + "kind: Bind9Cluster\nmetadata: {name: dns, namespace: dns-system}\n"
             "spec:\n  primary: {replicas: 0}\n  rndcSecretRefs: [{name: shared-key}]\n")
    repo.add("i.yaml", _instance("dns-system", SECRET_REFS))
    found = _check(repo.root)
    # the reference to the secondary's generated RNDC key is fine; every other one needs the cluster's labels
    assert [p.split(": ")[3] for p in found] == [
        "spec.rndcSecretRefs[0].name", "spec.image.imagePullSecrets[0]", "spec.volumes[0].secret.secretName",
        "spec.volumes[1].projected.sources[0].secret.name", "spec.volumes[2].csi.nodePublishSecretRef.name",
        "spec.bindcarConfig.envVars[0].valueFrom.secretKeyRef.name"]
    assert all(p.startswith("warning: ") for p in found)
    assert found[1] == ("warning: i.yaml:8: Bind9Instance/dns-system/i: spec.image.imagePullSecrets[0]: Secret "
                        "dns-system/registry-login is not generated by the agent; a sync accepts the reference only if "
                        "that Secret is labelled bindy.firestoned.io/allow-reference: \"true\"")
    manifest = load_dir(repo.root)
    assert tenancy.secrets_to_observe(manifest) == {("dns-system", n) for n in (
        "shared-key", "dns-secondary-0-rndc-key", "registry-login", "tls-certs", "ca-bundle", "vault-creds",
        "api-token")}


@pytest.mark.usefixtures("second_line")
def test_with_live_labels_only_generated_or_opted_in_secrets_may_be_referenced(repo: Repo) -> None:
    repo.add("c.yaml", _cluster("dns-system").replace("secondary: {replicas: 0}", "secondary: {replicas: 1}"))
    repo.add("i.yaml", _instance("dns-system", SECRET_REFS))
    labels: dict[tuple[str, str], Any] = {
        ("dns-system", "dns-secondary-0-rndc-key"): {**MANAGED, "app": "bind9"},  # generated by the agent
        ("dns-system", "registry-login"): OPTED_IN,
        ("dns-system", "tls-certs"): {names.ALLOW_REFERENCE_LABEL: "yes"},  # not the opt-in value
        ("dns-system", "ca-bundle"): None,  # does not exist
        ("dns-system", "vault-creds"): {},
        # api-token: not observed
    }
    assert _check(repo.root, labels) == [
        "i.yaml:10: Bind9Instance/dns-system/i: spec.volumes[0].secret.secretName: Secret dns-system/tls-certs was not "
        "generated by the agent and is not labelled bindy.firestoned.io/allow-reference: \"true\"; a CR may reference "
        "only Secrets the agent generates or that opt in with that label",
        "i.yaml:12: Bind9Instance/dns-system/i: spec.volumes[1].projected.sources[0].secret.name: Secret "
        "dns-system/ca-bundle does not exist",
        "i.yaml:14: Bind9Instance/dns-system/i: spec.volumes[2].csi.nodePublishSecretRef.name: Secret "
        "dns-system/vault-creds was not generated by the agent and is not labelled "
        "bindy.firestoned.io/allow-reference: \"true\"; a CR may reference only Secrets the agent generates or that "
        "opt in with that label",
        "i.yaml:18: Bind9Instance/dns-system/i: spec.bindcarConfig.envVars[0].valueFrom.secretKeyRef.name: Secret "
        "dns-system/api-token was not observed, so the reference cannot be checked"]


def test_a_generated_secret_name_taken_by_a_foreign_secret_is_refused(repo: Repo) -> None:
    repo.add("c.yaml", _cluster("dns-system"))
    repo.add("i.yaml", _instance("dns-system", "  rndcKey:\n    secret:\n      metadata: {name: db-password}\n"
                                 "---\n" + _instance("dns-system", "  rndcSecretRef: {name: db-password}\n", "j")))
    assert _check(repo.root, {("dns-system", "db-password"): None}) == []  # created by the agent on apply
    assert _check(repo.root, {("dns-system", "db-password"): MANAGED}) == []
    assert _check(repo.root, {("dns-system", "db-password"): {"team": "db"}}) == [
        "i.yaml:17: Bind9Instance/dns-system/j: spec.rndcSecretRef.name: Secret dns-system/db-password is one the "
        "agent generates, but a Secret of that name exists that the agent did not make; rename one, or label it "
        "bindy.firestoned.io/allow-reference: \"true\""]


@pytest.mark.usefixtures("second_line")
def test_a_secret_reference_naming_another_namespace_is_cross_namespace(repo: Repo) -> None:
    repo.add("c.yaml", _cluster("dns-system"))
    repo.add("i.yaml", _instance("dns-system", """  config:
    dnssec:
      signing:
        enabled: true
        keysFrom: {secretRef: {name: dnssec-keys, namespace: team-b}}
"""))
    labels = {("team-b", "dnssec-keys"): OPTED_IN}
    cross = ("i.yaml:11: Bind9Instance/dns-system/i: spec.config.dnssec.signing.keysFrom.secretRef.name: Secret "
             "team-b/dnssec-keys is in another namespace; references across namespaces are off (the agent's setting "
             "allow_cross_namespace_refs, --allow-cross-namespace-refs)")
    assert _check(repo.root, labels) == [cross]
    assert _check(repo.root, labels, allow_cross_namespace_refs=True) == [
        "i.yaml:11: Bind9Instance/dns-system/i: spec.config.dnssec.signing.keysFrom.secretRef.name: Secret "
        "team-b/dnssec-keys: namespace team-b is not one this agent may manage (the agent's setting "
        "allowed_namespaces, --allowed-namespaces)"]
    assert _check(repo.root, labels, allow_cross_namespace_refs=True, allowed_namespaces="dns-system,team-b") == []
