"""Hierarchy expansion and selection semantics (pure)."""

from __future__ import annotations

from agent.desired import hierarchy as desired
from agent.model.base import LabelSelector
from agent.model.problems import Severity
from tests.conftest import SAMPLE, Repo, load_dir

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
SOA = ("  soaRecord: {primaryNs: ns1.example.com., adminEmail: a.example.com., serial: 1, refresh: 1,"
       " retry: 1, expire: 1, negativeTtl: 1}\n")


def _build(repo: Repo) -> desired.Desired:
    manifest = load_dir(repo.root)
    assert manifest.ok, [str(p) for p in manifest.problems]
    return desired.build(manifest)


def _errors(state: desired.Desired) -> list[str]:
    return [str(p) for p in state.problems if p.severity is Severity.ERROR]


def test_label_selector_semantics() -> None:
    sel = LabelSelector.model_validate({
        "matchLabels": {"app": "dns"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["edge", "core"]},
            {"key": "env", "operator": "NotIn", "values": ["dev"]},
            {"key": "team", "operator": "Exists"},
            {"key": "legacy", "operator": "DoesNotExist"},
        ]})
    base = {"app": "dns", "tier": "edge", "team": "a"}
    assert sel.matches(base)
    assert sel.matches({**base, "env": "prod"})
    assert not sel.matches({**base, "env": "dev"})
    assert not sel.matches({**base, "tier": "other"})
    assert not sel.matches({k: v for k, v in base.items() if k != "team"})
    assert not sel.matches({**base, "legacy": "x"})
    assert not sel.matches({**base, "app": "web"})
    assert LabelSelector().matches({})


def test_sample_repo_expands_to_the_full_hierarchy() -> None:
    state = desired.build(load_dir(SAMPLE))
    assert _errors(state) == []
    kinds = sorted({o.key.kind for o in state.objects})
    assert kinds == ["AAAARecord", "ARecord", "Bind9Cluster", "Bind9Instance", "CAARecord", "CNAMERecord",
                     "ConfigMap", "DNSZone", "Deployment", "MXRecord", "NSRecord", "SRVRecord", "Secret",
                     "Service", "ServiceAccount", "TXTRecord"]
    methods = {z.name: z.selection_method for z in state.zones}
    assert methods == {"example.com.": "explicit", "example.org.": "explicit",
                       "internal.example.net.": "labelSelector"}
    rtypes = {r.rtype for z in state.zones for r in z.rrsets.values()}
    assert rtypes == {"A", "AAAA", "CNAME", "MX", "TXT", "NS", "SRV", "CAA"}


def test_instance_children_carry_owner_references_except_the_shared_service_account() -> None:
    state = desired.build(load_dir(SAMPLE))
    owners = {str(o.key): str(o.owner) if o.owner else None for o in state.objects}
    assert owners["Bind9Instance/dns-system/dns-primary-0"] == "Bind9Cluster/dns-system/dns"
    for kind in ("Deployment", "Service"):
        assert owners[f"{kind}/dns-system/dns-primary-0"] == "Bind9Instance/dns-system/dns-primary-0"
    assert owners["Secret/dns-system/dns-primary-0-rndc-key"] == "Bind9Instance/dns-system/dns-primary-0"
    assert owners["ConfigMap/dns-system/dns-primary-0-config"] == "Bind9Instance/dns-system/dns-primary-0"
    assert owners["ServiceAccount/dns-system/bind9"] is None
    secret = state.object("Secret", "dns-system", "dns-primary-0-rndc-key")
    assert secret is not None and secret.body["stringData"]["secret"] == "<secret>"
    service = state.object("Service", "dns-system", "dns-primary-0")
    assert service is not None
    assert [(p["port"], p["protocol"]) for p in service.body["spec"]["ports"]] == [
        (53, "UDP"), (53, "TCP"), (8080, "TCP")]
    conf = state.object("ConfigMap", "dns-system", "dns-primary-0-config")
    assert conf is not None and "allow-new-zones yes;" in conf.body["data"]["named.conf"]
    assert 'allow-transfer { key "dns-primary-0-rndc-key"; 10.0.0.0/8; };' in conf.body["data"]["named.conf"]


def test_explicit_objects_win_over_generated_ones(repo: Repo) -> None:
    repo.add("p.yaml", HEAD + "kind: ClusterBind9Provider\nmetadata: {name: global}\n"
             "spec: {namespace: dns, primary: {replicas: 2}, secondary: {replicas: 0}}\n---\n"
             + HEAD + "kind: Bind9Instance\nmetadata: {name: global-primary-1, namespace: dns, "
             "labels: {custom: 'yes'}}\nspec: {clusterRef: global, role: primary, replicas: 3}\n")
    state = _build(repo)
    instances = [o for o in state.objects if o.key.kind == "Bind9Instance"]
    assert [(o.key.name, o.origin is not None) for o in instances] == [
        ("global-primary-0", False), ("global-primary-1", True)]
    deploy = state.object("Deployment", "dns", "global-primary-1")
    assert deploy is not None and deploy.body["spec"]["replicas"] == 3


def test_zone_selection_union_of_cluster_ref_and_instance_selectors(repo: Repo) -> None:
    repo.add("c.yaml", HEAD + "kind: Bind9Cluster\nmetadata: {name: a, namespace: dns}\n"
             "spec: {secondary: {replicas: 2}}\n---\n"
             + HEAD + "kind: Bind9Cluster\nmetadata: {name: b, namespace: dns}\n"
             "spec: {secondary: {replicas: 0, labels: {x: 'y'}}}\n")
    repo.add("z.yaml", HEAD + "kind: DNSZone\nmetadata: {name: z, namespace: dns}\nspec:\n"
             "  zoneName: example.com\n  clusterRef: a\n  bind9InstancesFrom:\n"
             "    - selector: {matchLabels: {bindy.firestoned.io/cluster: b}}\n"
             "    - selector: {matchLabels: {bindy.firestoned.io/cluster: a}}\n" + SOA)
    zone = _build(repo).zones[0]
    assert [k.name for k in zone.primaries] == ["a-primary-0", "b-primary-0"]
    assert [k.name for k in zone.secondaries] == ["a-secondary-0", "a-secondary-1"]


def test_cluster_ref_may_name_a_provider_and_zones_from_conflicts_are_errors(repo: Repo) -> None:
    repo.add("p.yaml", HEAD + "kind: ClusterBind9Provider\nmetadata: {name: global}\n"
             "spec: {namespaces: [one, two], secondary: {replicas: 0}}\n")
    repo.add("c.yaml", HEAD + "kind: Bind9Cluster\nmetadata: {name: a, namespace: dns}\n"
             "spec: {zonesFrom: [{selector: {matchLabels: {team: web}}}]}\n---\n"
             + HEAD + "kind: Bind9Cluster\nmetadata: {name: b, namespace: dns}\n"
             "spec: {zonesFrom: [{selector: {matchExpressions: [{key: team, operator: Exists}]}}]}\n")
    repo.add("z.yaml", HEAD + "kind: DNSZone\nmetadata: {name: p, namespace: dns}\n"
             "spec:\n  zoneName: provider.example\n  clusterRef: global\n" + SOA + "---\n"
             + HEAD + "kind: DNSZone\nmetadata: {name: both, namespace: dns, labels: {team: web}}\n"
             "spec:\n  zoneName: both.example\n" + SOA + "---\n"
             + HEAD + "kind: DNSZone\nmetadata: {name: explicit, namespace: dns, labels: {team: web}}\n"
             "spec:\n  zoneName: explicit.example\n  clusterRef: a\n" + SOA)
    state = _build(repo)
    zones = {z.name: z for z in state.zones}
    assert [str(k) for k in zones["provider.example."].primaries] == [
        "Bind9Instance/one/global-primary-0", "Bind9Instance/two/global-primary-0"]
    assert _errors(state) == [
        "z.yaml:11: DNSZone/dns/both: metadata.labels: conflict: selected by the zonesFrom of several "
        "clusters (a, b); add spec.clusterRef or change the labels"]
    assert zones["explicit.example."].selection_method == "explicit"
    assert any("also matched by zonesFrom of b; the explicit reference wins" in str(p) for p in state.problems)


def test_records_adopted_by_longest_suffix_and_double_selection_is_an_error(repo: Repo) -> None:
    repo.add("c.yaml", HEAD + "kind: Bind9Cluster\nmetadata: {name: a, namespace: dns}\nspec: {}\n")
    zone = HEAD + "kind: DNSZone\nmetadata: {name: %s, namespace: dns}\nspec:\n  zoneName: %s\n  clusterRef: a\n%s" + SOA
    repo.add("z.yaml", zone % ("parent", "example.org", "  recordsFrom: [{selector: {matchLabels: {app: x}}}]\n")
             + "---\n" + zone % ("child", "sub.example.org", "  recordsFrom: [{selector: {matchLabels: {app: 'y'}}}]\n"))
    repo.add("r.yaml", HEAD + "kind: ARecord\nmetadata: {name: deep, namespace: dns}\n"
             "spec: {name: www.sub.example.org., ipv4Addresses: [192.0.2.1]}\n---\n"
             + HEAD + "kind: ARecord\nmetadata: {name: twice, namespace: dns, labels: {app: x}}\n"
             "spec: {name: two, zone: sub.example.org, ipv4Addresses: [192.0.2.2]}\n---\n"
             + HEAD + "kind: ARecord\nmetadata: {name: lost, namespace: dns}\n"
             "spec: {name: lost, ipv4Addresses: [192.0.2.3]}\n")
    state = _build(repo)
    child = next(z for z in state.zones if z.name == "sub.example.org.")
    assert [k for k in child.rrsets if k[1] != "NS"] == [("www.sub.example.org.", "A")]  # NS: the zone's own
    # a record no zone takes is an error: it would never be published (it was a warning that validate passed)
    assert _errors(state) == [
        "r.yaml:8: ARecord/dns/twice: metadata.labels: selected by more than one zone: "
        "DNSZone/dns/parent (z.yaml:1), DNSZone/dns/child (z.yaml:10)",
        "r.yaml:11: ARecord/dns/lost: belongs to no DNSZone, so it would never be published (no DNSZone's "
        "recordsFrom selects its labels, it has no spec.zone, its name is relative): add the label 'app: x' that "
        "DNSZone/dns/parent selects"]


def test_a_reused_zone_placement_keeps_every_field_but_the_rrsets() -> None:
    """A zone's placement is reused across revisions (Zone.fresh); a field added to Zone and not
    copied there would silently vanish on the second revision."""
    import dataclasses

    zone = desired.build(load_dir(SAMPLE)).zones[0]
    marks = {f.name: object() for f in dataclasses.fields(zone)}  # every field set to something only it holds
    for name, mark in marks.items():
        setattr(zone, name, mark)
    fresh = zone.fresh()
    per_revision = {"rrsets": {}, "records": {}, "from_other_namespaces": [], "digest_kept": None}
    assert {n: getattr(fresh, n) for n in marks} == {n: per_revision.get(n, mark) for n, mark in marks.items()}
