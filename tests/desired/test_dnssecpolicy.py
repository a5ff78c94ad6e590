"""DNSSEC as Bindy renders it: `dnssec.signing` -> `dnssec-policy` blocks and a key directory in the
generated named.conf, `dnssec.validation` -> `dnssec-validation`, a DNSZone's `dnssecPolicy` -> the
zone API's create body, an unknown policy -> a validation error, and the DS records a DNSZone's
status shows, computed from the served key-signing key."""

from __future__ import annotations

import pathlib

from agent.desired import hierarchy, zonebody
from agent.desired.placement import Zone
from agent.outcome import dnssecstatus, status
from agent.reconcile.dnsresult import DnsResult, ZoneResult
from tests.conftest import Repo, load_dir
from tests.support.clirun import main
from tests.support.dnssecworld import DS, HEAD, KSK, ZONE, ZSK, _served

# Bindy's template (src/bind9_resources.rs DNSSEC_POLICY_TEMPLATE) with these values, comments left out
POLICY = """dnssec-policy "strict" {
    keys {
        ksk lifetime 365d algorithm RSASHA256;
        zsk lifetime 30d algorithm RSASHA256;
    };
    nsec3param iterations 5 optout no salt-length 16;
    signatures-refresh 5d;
    signatures-validity 30d;
    signatures-validity-dnskey 30d;
    zone-propagation-delay 300;
    parent-propagation-delay 3600;
    max-zone-ttl 86400;
};"""


def _cluster(global_: str = "", primary_config: str = "") -> str:
    text = HEAD + "kind: Bind9Cluster\nmetadata: {name: dns, namespace: dns}\nspec:\n"
    if global_:
        text += "  global:\n" + "".join(f"    {line}\n" for line in global_.strip("\n").split("\n"))
    if primary_config:
        text += "  primary: {replicas: 0}\n"
        text += ("---\n" + HEAD + "kind: Bind9Instance\nmetadata: {name: dns-primary-0, namespace: dns}\n"
                 "spec:\n  clusterRef: dns\n  role: primary\n  config:\n"
                 + "".join(f"    {line}\n" for line in primary_config.strip("\n").split("\n")))
    return text


def _named_conf(root: pathlib.Path, instance: str = "dns-primary-0") -> str:
    desired = hierarchy.build(load_dir(root))
    found = desired.object("ConfigMap", "dns", f"{instance}-config") or next(
        o for o in desired.objects if o.key.kind == "ConfigMap" and o.key.name.startswith(instance))
    return str(found.body["data"]["named.conf"])


def _problems(root: pathlib.Path) -> list[str]:
    return [str(p) for p in hierarchy.build(load_dir(root)).problems]


def test_signing_renders_bindys_policy_block_and_a_key_directory(repo: Repo) -> None:
    repo.add("cluster.yaml", _cluster("""
dnssec:
  validation: true
  signing: {enabled: true, policy: strict, algorithm: RSASHA256, kskLifetime: 365d, zskLifetime: 30d,
            nsec3: true, nsec3Iterations: 5}
"""))
    conf = _named_conf(repo.root)
    assert POLICY in conf
    options = conf[conf.index("options {"):conf.index("\n};\n")]
    assert '    key-directory "/var/cache/bind";' in options.split("\n")  # the zones volume, as Bindy's cache
    assert "    dnssec-validation yes;" in options.split("\n")
    assert conf.index("options {") < conf.index('dnssec-policy "strict"')  # top level, after the options


def test_defaults_are_bindys_and_nsec_renders_no_nsec3param(repo: Repo) -> None:
    repo.add("cluster.yaml", _cluster("dnssec:\n  signing: {enabled: true, policy: plain}"))
    conf = _named_conf(repo.root)
    assert ("        ksk lifetime unlimited algorithm ECDSAP256SHA256;\n"
            "        zsk lifetime unlimited algorithm ECDSAP256SHA256;\n    };\n    signatures-refresh 5d;") in conf
    assert "nsec3param" not in conf
    repo.add("cluster.yaml", _cluster("dnssec:\n  signing: {enabled: false, policy: plain}"))
    conf = _named_conf(repo.root)
    assert "dnssec-policy" not in conf and "key-directory" not in conf  # not enabled: nothing


def test_instance_signing_wins_and_falls_back_to_the_clusters_as_bindy_does(repo: Repo) -> None:
    repo.add("cluster.yaml", _cluster("dnssec:\n  signing: {enabled: true, policy: cluster-wide}",
                                      "dnssec:\n  signing: {enabled: true, policy: mine}"))
    assert 'dnssec-policy "mine"' in _named_conf(repo.root)
    assert 'dnssec-policy "cluster-wide"' in _named_conf(repo.root, "dns-secondary-0")
    # an instance whose own `dnssec` enables no signing still gets the cluster's (only validation is replaced)
    repo.add("cluster.yaml", _cluster("dnssec:\n  signing: {enabled: true, policy: cluster-wide}",
                                      "dnssec:\n  validation: true"))
    conf = _named_conf(repo.root)
    assert 'dnssec-policy "cluster-wide"' in conf and "    dnssec-validation yes;" in conf


def test_validation_means_what_it_means_in_bindy(repo: Repo) -> None:
    """true -> yes, false -> no, no `dnssec` at all -> nothing (BIND's own default, auto)."""
    cases = {"dnssec: {validation: true}": "    dnssec-validation yes;",
             "dnssec: {validation: false}": "    dnssec-validation no;",
             "dnssec: {signing: {enabled: false}}": "    dnssec-validation no;",
             "recursion: false": None}
    for global_, line in cases.items():
        repo.add("cluster.yaml", _cluster(global_))
        rendered = [x for x in _named_conf(repo.root).split("\n") if "dnssec-validation" in x]
        assert rendered == ([line] if line else []), global_
    # the instance's `dnssec` replaces the cluster's
    repo.add("cluster.yaml", _cluster("dnssec: {validation: true}", "dnssec: {validation: false}"))
    assert "    dnssec-validation no;" in _named_conf(repo.root)


def test_builtin_policy_name_writes_no_block_and_warns_where(repo: Repo) -> None:
    """BIND refuses to redefine `default` (Bindy's name when `policy` is unset): named.conf would not load."""
    repo.add("cluster.yaml", _cluster("dnssec:\n  signing:\n    enabled: true\n    algorithm: RSASHA256"))
    assert "dnssec-policy" not in _named_conf(repo.root)
    assert _problems(repo.root) == [
        "cluster.yaml:7: Bind9Cluster/dns/dns: spec.global.dnssec.signing: signing names the policy 'default' "
        "(Bindy's name when `policy` is unset), one of BIND's built-in policies, which named.conf may not redefine "
        "(Bindy's named.conf would not load): no dnssec-policy is written, zones with dnssecPolicy: default get "
        "BIND's built-in one, and algorithm, kskLifetime, zskLifetime and nsec3 have no effect. Set `policy` to a "
        "name of your own to use them"]


def test_a_zone_naming_an_undefined_policy_is_refused_with_its_line(repo: Repo) -> None:
    repo.add("cluster.yaml", _cluster("dnssec:\n  signing: {enabled: true, policy: strict}"))
    repo.add("zone.yaml", ZONE + "  dnssecPolicy: stirct\n")
    result = main("validate", str(repo.root))
    assert result.returncode != 0
    assert ("zone.yaml:10: DNSZone/dns/secure: spec.dnssecPolicy: DNSSEC policy 'stirct' is not defined on primary "
            "instance(s) dns/dns-primary-0, and it is not one of BIND's built-in policies (default, insecure, none): "
            "named would refuse to create the zone there. Policies defined there: strict.") in result.stdout + result.stderr
    for ok in ("strict", "default", "insecure", "none"):  # defined on the primary, or built in
        repo.add("zone.yaml", ZONE + f"  dnssecPolicy: {ok}\n")
        assert _problems(repo.root) == [], ok


def _zone(repo: Repo, policy: str | None) -> Zone:
    repo.add("cluster.yaml", _cluster("dnssec:\n  signing: {enabled: true, policy: strict}"))
    repo.add("zone.yaml", ZONE + (f"  dnssecPolicy: {policy}\n" if policy else ""))
    return hierarchy.build(load_dir(repo.root)).zones[0]


def test_zone_body_carries_the_policy_and_inline_signing_as_bindy_sends_them(repo: Repo) -> None:
    zone = _zone(repo, "strict")
    body = zonebody.primary(zone, also_notify=["127.0.0.11:53"], update_key="k")
    assert body == {"zoneName": "example.net", "zoneType": "primary", "updateKeyName": "k", "zoneConfig": {
        "ttl": zone.default_ttl, "soa": {"primaryNs": "ns1.example.net.", "adminEmail": "hostmaster.example.net.", "serial": 1,
                             "refresh": 3600, "retry": 600, "expire": 604800, "negativeTtl": 300},
        "nameServers": ["ns1.example.net."], "nameServerIps": {"ns1.example.net.": "192.0.2.53"},
        "alsoNotify": ["127.0.0.11:53"], "dnssecPolicy": "strict", "inlineSigning": True}}
    # secondaries receive the signed zone by transfer; a zone without a policy is not signed
    assert zonebody.secondary("example.net.", primaries=["127.0.0.10:53"]) == {
        "zoneName": "example.net", "zoneType": "secondary", "zoneConfig": {"primaries": ["127.0.0.10:53"]}}
    unsigned = zonebody.primary(_zone(repo, None), also_notify=[], update_key=None)["zoneConfig"]
    assert isinstance(unsigned, dict) and "dnssecPolicy" not in unsigned and "inlineSigning" not in unsigned


def test_ds_records_are_computed_from_the_served_ksk(repo: Repo) -> None:
    zone = _zone(repo, "strict")
    assert dnssecstatus.status(zone, [_served(KSK, ZSK)]) == {
        "signed": True, "algorithm": "ECDSAP256SHA256", "keyTag": 55648, "dsRecords": [DS]}
    assert dnssecstatus.status(zone, [{}]) == {"signed": False, "dsRecords": []}  # not signed (yet)
    assert dnssecstatus.status(_zone(repo, None), [{}]) is None  # no policy, not signed: no field


def test_zone_status_shows_the_ds_records_of_what_the_primary_serves(repo: Repo) -> None:
    from agent.model.observed import ZoneObserved

    zone = _zone(repo, "strict")
    desired = hierarchy.build(load_dir(repo.root))
    result = ZoneResult(zone.key, zone.name, instances={"dns/dns-primary-0": ("Configured", "")},
                        primaries={"dns/dns-primary-0"},
                        after={"dns/dns-primary-0": ZoneObserved(_served(KSK, ZSK))})
    shown = status.statuses(desired, {}, revisions={}, generations={},
                            dns=DnsResult([result], []))[zone.key]
    assert shown["dnssec"] == {"signed": True, "algorithm": "ECDSAP256SHA256", "keyTag": 55648, "dsRecords": [DS]}


def test_ttls_above_the_policys_max_zone_ttl_are_refused_where_they_are_written(repo: Repo) -> None:
    """named refuses to load a signed zone with a higher TTL ("out of range") and cuts an UPDATE's TTL to
    86400, so the record would be sent again on every run (both seen on named 9.18)."""
    repo.add("cluster.yaml", _cluster("dnssec:\n  signing: {enabled: true, policy: strict}"))
    repo.add("zone.yaml", ZONE + "  dnssecPolicy: strict\n  ttl: 172800\n  recordsFrom: [{selector: {matchLabels: "
             "{zone: secure}}}]\n")
    repo.add("www.yaml", HEAD + "kind: ARecord\nmetadata: {name: www, namespace: dns, labels: {zone: secure}}\n"
             "spec:\n  name: www\n  ttl: 604800\n  ipv4Addresses: [192.0.2.80]\n")
    repo.add("api.yaml", HEAD + "kind: ARecord\nmetadata: {name: api, namespace: dns, labels: {zone: secure}}\n"
             "spec: {name: api, ttl: 3600, ipv4Addresses: [192.0.2.81]}\n")
    tail = "Use a TTL of at most 86400"
    assert sorted(_problems(repo.root)) == sorted([
        "zone.yaml:11: DNSZone/dns/secure: spec.ttl: TTL 172800 exceeds 86400, the max-zone-ttl of the zone's "
        "DNSSEC policy 'strict': named refuses to load a signed zone whose TTL is higher and cuts a record's to it "
        f"(the agent would send it again on every run). {tail}",
        "www.yaml:6: ARecord/dns/www: spec.ttl: TTL 604800 exceeds 86400, the max-zone-ttl of the zone's DNSSEC "
        "policy 'strict': named refuses to load a signed zone whose TTL is higher and cuts a record's to it (the "
        f"agent would send it again on every run). {tail}"])
    repo.add("zone.yaml", ZONE + "  dnssecPolicy: none\n  ttl: 172800\n  recordsFrom: [{selector: {matchLabels: "
             "{zone: secure}}}]\n")
    assert _problems(repo.root) == []  # not signed: no bound
