"""Every CR example in the seeds loads, with the older shorthand rewritten to Bindy's canonical
fields and a warning naming each canonical field, except the seed's `role: Primary`: Bindy's CRD
refuses that spelling, so the agent does too, saying what to write. The examples are embedded
verbatim in tests/seeds/."""

from __future__ import annotations

import pathlib

import pytest

from agent.desired import hierarchy as desired
from agent.load import parse
from agent.load.manifest import Manifest
from agent.model.problems import Severity

SEEDS = pathlib.Path(__file__).parents[1] / "seeds"


def _load(name: str) -> Manifest:
    return parse.load_text((SEEDS / name).read_text(), name)


@pytest.mark.parametrize("name", sorted(p.name for p in SEEDS.glob("000_*.yaml") if p.name != "000_instance.yaml"))
def test_every_api_example_of_the_seeds_loads(name: str) -> None:
    manifest = _load(name)
    assert [p for p in manifest.problems if p.severity is Severity.ERROR] == []
    assert len(manifest.objects) == 1


def test_the_seeds_role_primary_is_refused_with_bindys_spelling() -> None:
    manifest = _load("000_instance.yaml")
    assert [str(p) for p in manifest.problems] == [
        "000_instance.yaml:8: Bind9Instance/platform-dns/my-cluster-primary-0: spec.role: 'Primary' is not a "
        "role Bindy accepts: write spec.role: primary (Bindy's CRD allows only 'primary' or 'secondary', "
        "in lowercase)"]
    assert manifest.objects == []
    fixed = (SEEDS / "000_instance.yaml").read_text().replace("role: Primary", "role: primary")
    instance = parse.load_text(fixed, "000_instance.yaml")
    assert instance.problems == [] and instance.objects[0].model.spec.role == "primary"  # type: ignore[attr-defined]


def test_shorthand_is_normalised_with_warnings_naming_the_canonical_field() -> None:
    cases = {
        "000_provider.yaml": ["spec.primaryReplicas: shorthand: use spec.primary.replicas",
                              "spec.secondaryReplicas: shorthand: use spec.secondary.replicas",
                              "spec.namespaces: shorthand: Bindy's canonical field is spec.namespace"],
        "000_cluster.yaml": ["spec.primaryReplicas: shorthand: use spec.primary.replicas"],
        "000_dnszone.yaml": ["spec.soa: shorthand: use spec.soaRecord"],
        "000_arecord.yaml": ["spec.ipv4: shorthand: use spec.ipv4Addresses", "spec.zone: shorthand"],
    }
    for name, expected in cases.items():
        warnings = [str(p) for p in _load(name).problems]
        for text in expected:
            assert any(text in w for w in warnings), (name, text, warnings)


def test_normalised_values_are_canonical() -> None:
    zone = _load("000_dnszone.yaml").objects[0].model
    assert zone.spec.soa_record.primary_ns == "ns1.example.com."  # type: ignore[attr-defined]
    assert zone.spec.soa_record.admin_email == "admin.example.com."  # type: ignore[attr-defined]
    assert zone.spec.ttl == 3600  # type: ignore[attr-defined]
    record = _load("000_arecord.yaml").objects[0].model
    assert record.spec.ipv4_addresses == ["192.0.2.1"]  # type: ignore[attr-defined]
    cluster = _load("000_cluster.yaml").objects[0].model
    assert (cluster.spec.primary.replicas, cluster.spec.secondary.replicas) == (2, 3)  # type: ignore[attr-defined]


def test_the_seed_examples_together_expand_like_the_seed_describes() -> None:
    docs = "\n---\n".join((SEEDS / n).read_text() for n in
                          ("000_provider.yaml", "000_cluster.yaml", "000_dnszone.yaml", "000_arecord.yaml"))
    manifest = parse.load_text(docs, "seeds.yaml")
    state = desired.build(manifest)
    clusters = sorted(str(o.key) for o in state.objects if o.key.kind == "Bind9Cluster")
    # The provider makes one Bind9Cluster per listed namespace; platform-dns/my-cluster is explicit.
    assert clusters == ["Bind9Cluster/platform-dns/global-dns", "Bind9Cluster/platform-dns/my-cluster",
                        "Bind9Cluster/team-api/global-dns", "Bind9Cluster/team-web/global-dns"]
    mine = sorted(k.name for k in state.instances if k.namespace == "platform-dns" and "my-cluster" in k.name)
    assert mine == ["my-cluster-primary-0", "my-cluster-primary-1", "my-cluster-secondary-0",
                    "my-cluster-secondary-1", "my-cluster-secondary-2"]
    zone = state.zones[0]
    assert [k.name for k in zone.primaries] == ["my-cluster-primary-0", "my-cluster-primary-1"]
    assert len(zone.secondaries) == 3
    assert [(r.name, r.rtype, r.rdatas) for r in zone.rrsets.values()] == [
        ("example.com.", "NS", ("ns1.example.com.",)),  # the DNSZone's own apex NS (its SOA's primaryNs)
        ("www.example.com.", "A", ("192.0.2.1",))]


@pytest.mark.parametrize("name, expected", [
    ("003_future_0.yaml", ["metadata: required field is missing",
                           "spec.zoneSelectionStrategy: unknown field"]),
    ("003_future_1.yaml", ["metadata.name: required field is missing",
                           "spec.soaRecord: required field is missing"]),
    ("003_future_2.yaml", ["metadata: required field is missing",
                           "spec.zonesFrom[0].namespaces: unknown field"]),
    ("003_future_3.yaml", ["metadata: required field is missing", "spec.sharding: unknown field"]),
])
def test_future_proposals_of_the_zonesfrom_seed_are_reported_precisely(name: str, expected: list[str]) -> None:
    """Seed 003's 'Future Enhancements' sketch fields Bindy does not have, in documents without a
    name; the agent rejects them with the exact field, never with a traceback."""
    found = [str(p) for p in _load(name).problems]
    for text in expected:
        assert any(text in f for f in found), (text, found)
