"""The classic DNS mistakes a new user makes are errors at file:line with the fix, and `validate` exits 1:
a relative name that repeats its zone, a record in no zone (whose values are checked all the same), an
in-zone name server without an address, data no server would answer with, an e-mail address as the SOA
mailbox, a misspelt zone, cluster or label, an IPv6 address in an ARecord, a missing namespace. What
Bindy accepts and serves still validates."""

from __future__ import annotations

import pathlib

from tests.conftest import SAMPLE, Repo
from tests.support import clirun

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
SOA = ("  soaRecord: {primaryNs: ns1.example.net., adminEmail: hostmaster.example.org., serial: 1, refresh: 3600,"
       " retry: 600, expire: 604800, negativeTtl: 300}\n")
CLUSTER = HEAD + "kind: Bind9Cluster\nmetadata: {name: dns, namespace: dns-system}\nspec: {}\n"


def _zone(name: str, zone: str, label: str, extra: str = "", soa: str = SOA) -> str:
    return (HEAD + f"kind: DNSZone\nmetadata: {{name: {name}, namespace: dns-system}}\nspec:\n  zoneName: {zone}\n"
            f"  clusterRef: dns\n{soa}  nameServers: [{{hostname: ns1.example.net.}}]\n"
            f"  recordsFrom: [{{selector: {{matchLabels: {{zone: {label}}}}}}}]\n" + extra)


def _a(name: str, owner: str, value: str = "192.0.2.1", labels: str = "{zone: org}", kind: str = "ARecord",
       field: str = "ipv4Addresses") -> str:
    return (HEAD + f"kind: {kind}\nmetadata: {{name: {name}, namespace: dns-system, labels: {labels}}}\n"
            f"spec: {{name: '{owner}', {field}: ['{value}']}}\n")


def _validate(root: pathlib.Path, *args: str) -> tuple[int, list[str]]:
    result = clirun.main("validate", str(root), *args)
    prefix = f"{root}/"
    lines = [line.replace(prefix, "") for line in result.stderr.splitlines() if not line.startswith(str(root) + ":")]
    return result.returncode, lines


def _repo(repo: Repo, *records: str, zones: str | None = None) -> Repo:
    repo.add("cluster.yaml", CLUSTER)
    repo.add("zones.yaml", zones if zones is not None else _zone("org", "example.org", "org"))
    repo.add("records.yaml", "---\n".join(records))
    return repo


def test_a_relative_name_that_repeats_its_zone_is_an_error_with_the_name_meant(repo: Repo) -> None:
    _repo(repo, _a("www", "www.example.org"), _a("apex", "Example.org"))
    assert _validate(repo.root) == (1, [
        "records.yaml:4: ARecord/dns-system/www: spec.name: 'www.example.org' is relative to the zone, so it names "
        "www.example.org.example.org., with the zone's name twice: write name: 'www', or the fully qualified "
        "'www.example.org.'",
        "records.yaml:9: ARecord/dns-system/apex: spec.name: 'Example.org' is relative to the zone, so it names "
        "Example.org.example.org., with the zone's name twice: write name: '@' (the zone apex), or the fully "
        "qualified 'Example.org.'"])
    _repo(repo, _a("www", "www"), _a("apex", "@"), _a("fqdn", "www2.example.org."), _a("sub", "www.example"))
    assert _validate(repo.root) == (0, [])


def test_a_record_in_no_zone_is_an_error_and_its_values_are_still_checked(repo: Repo) -> None:
    _repo(repo, _a("lost", "lost", "999.1.1.1", labels="{app: web}"), _a("typo", "typo", labels="{zone: ogr}"))
    assert _validate(repo.root) == (1, [
        "records.yaml:3: ARecord/dns-system/lost: metadata.labels: belongs to no DNSZone, so it would never be "
        "published (no DNSZone's recordsFrom selects its labels, it has no spec.zone, its name is relative): add the "
        "label 'zone: org' that DNSZone/dns-system/org selects",
        "records.yaml:4: ARecord/dns-system/lost: spec.ipv4Addresses[0]: '999.1.1.1' is not an IPv4 address",
        "records.yaml:8: ARecord/dns-system/typo: metadata.labels: belongs to no DNSZone, so it would never be "
        "published (no DNSZone's recordsFrom selects its labels, it has no spec.zone, its name is relative) (did you "
        "mean the label 'zone: org'? DNSZone/dns-system/org selects it)"])
    # nothing of it is planned, so nothing of it can be applied
    planned = clirun.main("plan", str(repo.root))
    assert planned.returncode == 1 and planned.stdout == ""
    assert "'999.1.1.1' is not an IPv4 address" in planned.stderr


def test_a_fully_qualified_name_in_no_zone_and_a_misspelt_zone_get_the_zone_meant(repo: Repo) -> None:
    named = HEAD + ("kind: ARecord\nmetadata: {name: named, namespace: dns-system}\n"
                    "spec: {name: a, zone: exmaple.org, ipv4Addresses: [192.0.2.1]}\n")
    _repo(repo, _a("far", "www.exmaple.org.", labels="{}"), named, _a("other", "www.example.com.", labels="{}"))
    code, lines = _validate(repo.root)
    assert code == 1
    assert [line for line in lines if not line.startswith("warning: ")] == [
        "records.yaml:4: ARecord/dns-system/far: spec.name: belongs to no DNSZone, so it would never be published: no "
        "DNSZone's zoneName is a suffix of www.exmaple.org. (did you mean 'example.org.'?); add the zone's DNSZone, or "
        "correct the name",
        "records.yaml:9: ARecord/dns-system/named: spec.zone: no DNSZone with zoneName 'exmaple.org' (did you mean "
        "'example.org'?)",
        "records.yaml:14: ARecord/dns-system/other: spec.name: belongs to no DNSZone, so it would never be published: "
        "no DNSZone's zoneName is a suffix of www.example.com.; add the zone's DNSZone, or correct the name"]


def test_an_ipv6_address_in_an_arecord_suggests_an_aaaarecord_and_the_reverse(repo: Repo) -> None:
    _repo(repo, _a("v6", "v6", "2001:db8::1"),
          _a("v4", "v4", "192.0.2.1", kind="AAAARecord", field="ipv6Addresses"))
    assert _validate(repo.root) == (1, [
        "records.yaml:4: ARecord/dns-system/v6: spec.ipv4Addresses[0]: '2001:db8::1' is an IPv6 address, not an IPv4 "
        "one: publish it with an AAAARecord (spec.ipv6Addresses)",
        "records.yaml:9: AAAARecord/dns-system/v4: spec.ipv6Addresses[0]: '192.0.2.1' is an IPv4 address, not an IPv6 "
        "one: publish it with an ARecord (spec.ipv4Addresses)"])


def test_the_soa_mailbox_written_as_an_email_address_gets_the_dns_spelling(repo: Repo) -> None:
    for written, fix in (("hostmaster@example.org", "write 'hostmaster.example.org.'"),
                         ("hostmaster@example.org.", "write 'hostmaster.example.org.'"),
                         ("john.doe@example.org", "and Bindy's adminEmail takes only letters, digits and '-' before "
                          "it ('john.doe' has others): use a mailbox such as 'hostmaster.example.org.'")):
        _repo(repo, zones=_zone("org", "example.org", "org", soa=SOA.replace("hostmaster.example.org.", written)))
        code, lines = _validate(repo.root)
        assert (code, len(lines)) == (1, 1), lines
        assert lines[0].startswith(f"zones.yaml:7: DNSZone/dns-system/org: spec.soaRecord.adminEmail: {written!r} is "
                                   "an e-mail address; the SOA spells the mailbox as a DNS name, its '@' as a '.'")
        assert fix in lines[0]
        fixed = fix.split("'")[-2]
        _repo(repo, zones=_zone("org", "example.org", "org", soa=SOA.replace("hostmaster.example.org.", fixed)))
        assert _validate(repo.root) == (0, [])


def test_a_record_inside_another_zone_of_the_same_servers_is_an_error(repo: Repo) -> None:
    zones = _zone("org", "example.org", "org") + "---\n" + _zone("sub", "sub.example.org", "sub")
    _repo(repo, _a("hidden", "www.sub"), _a("at-apex", "sub"), _a("fine", "www", labels="{zone: sub}"),
          HEAD + "kind: NSRecord\nmetadata: {name: deleg, namespace: dns-system, labels: {zone: org}}\n"
          "spec: {name: sub, nameserver: ns1.example.net.}\n", zones=zones)
    assert _validate(repo.root) == (1, [
        "records.yaml:4: ARecord/dns-system/hidden: spec.name: www.sub.example.org. A is inside zone sub.example.org. "
        "(DNSZone/dns-system/sub), which the same servers serve: they answer for it from that zone, never with this "
        "record; put it in sub.example.org. (a label its recordsFrom selects, or spec.zone), or remove it",
        "records.yaml:9: ARecord/dns-system/at-apex: spec.name: sub.example.org. A is inside zone sub.example.org. "
        "(DNSZone/dns-system/sub), which the same servers serve: they answer for it from that zone, never with this "
        "record; put it in sub.example.org. (a label its recordsFrom selects, or spec.zone), or remove it"])
    # on other servers and not delegated, the parent's records there are what its servers answer with: no error
    _repo(repo, _a("hidden", "www.sub"), _a("at-apex", "sub"), _a("fine", "www", labels="{zone: sub}"), zones=zones)
    repo.add("cluster.yaml", CLUSTER + "---\n" + CLUSTER.replace("name: dns,", "name: other,"))
    repo.add("zones.yaml", _zone("org", "example.org", "org") + "---\n"
             + _zone("sub", "sub.example.org", "sub").replace("clusterRef: dns", "clusterRef: other"))
    assert _validate(repo.root) == (0, [])


def test_data_below_a_delegation_is_an_error_but_its_glue_and_ds_are_not(repo: Repo) -> None:
    ns = HEAD + ("kind: NSRecord\nmetadata: {name: deleg, namespace: dns-system, labels: {zone: org}}\n"
                 "spec: {name: team, nameserver: ns.team.example.org.}\n")
    _repo(repo, ns, _a("glue", "ns.team"), _a("below", "www.team"), _a("at", "team"),
          _a("deep", "a.b.team", "2001:db8::5", kind="AAAARecord", field="ipv6Addresses"), _a("beside", "www"))
    code, lines = _validate(repo.root)
    assert code == 1
    tail = (" (the NS records at team.example.org. in example.org.): a server answers a query there with a referral "
            "to the delegated name servers, never with this record; move it to the zone team.example.org. is "
            "delegated to, or remove it")
    assert lines == [
        f"records.yaml:14: ARecord/dns-system/below: spec.name: www.team.example.org. A is below the delegation of "
        f"team.example.org.{tail}",
        f"records.yaml:19: ARecord/dns-system/at: spec.name: team.example.org. A is below the delegation of "
        f"team.example.org.{tail}",
        f"records.yaml:24: AAAARecord/dns-system/deep: spec.name: a.b.team.example.org. AAAA is below the delegation "
        f"of team.example.org.{tail}"]


def test_did_you_mean_for_cluster_references_and_instance_selectors(repo: Repo) -> None:
    repo.add("cluster.yaml", CLUSTER + "---\n" + HEAD + "kind: ClusterBind9Provider\nmetadata: {name: global}\n"
             "spec: {namespace: dns-system, primary: {replicas: 1, labels: {tier: edge}}}\n---\n"
             + HEAD + "kind: Bind9Instance\nmetadata: {name: extra, namespace: dns-system}\n"
             "spec: {clusterRef: dsn, role: primary}\n")
    zone = _zone("org", "example.org", "org")
    repo.add("zones.yaml", zone.replace("clusterRef: dns", "clusterRef: dsn") + "---\n"
             + _zone("edu", "example.edu", "edu").replace("clusterRef: dns", "clusterProviderRef: globl") + "---\n"
             + _zone("com", "example.com", "com").replace(
                 "clusterRef: dns", "bind9InstancesFrom: [{selector: {matchLabels: {tier: egde}}}]"))
    code, lines = _validate(repo.root)
    assert code == 1
    assert "cluster.yaml:14: Bind9Instance/dns-system/extra: spec.clusterRef: no Bind9Cluster 'dsn' in namespace " \
        "dns-system (did you mean 'dns'?)" in lines
    assert "zones.yaml:6: DNSZone/dns-system/org: spec.clusterRef: no Bind9Cluster 'dsn' in namespace dns-system and " \
        "no ClusterBind9Provider 'dsn' (did you mean 'dns'?)" in lines
    assert "zones.yaml:16: DNSZone/dns-system/edu: spec.clusterProviderRef: no ClusterBind9Provider 'globl' (did you " \
        "mean 'global'?)" in lines
    assert any(line.startswith("warning: zones.yaml:26: DNSZone/dns-system/com: spec.bind9InstancesFrom[0]: selects "
                               "no Bind9Instance in this namespace (did you mean 'tier: edge'? Bind9Instance/dns-system/"
                               "global-primary-0 has it)") for line in lines), lines


def test_a_zone_no_zones_from_selects_gets_the_label_meant(repo: Repo) -> None:
    repo.add("cluster.yaml", HEAD + "kind: Bind9Cluster\nmetadata: {name: dns, namespace: dns-system}\n"
             "spec: {zonesFrom: [{selector: {matchLabels: {serve: 'yes'}}}]}\n")
    repo.add("zones.yaml", _zone("org", "example.org", "org").replace("  clusterRef: dns\n", "").replace(
        "namespace: dns-system}", "namespace: dns-system, labels: {serve: 'yse'}}"))
    code, lines = _validate(repo.root)
    assert code == 0
    assert lines[0] == ("warning: zones.yaml:3: DNSZone/dns-system/org: metadata.labels: selects no Bind9Instance; the "
                        "zone will not be served (did you mean the label 'serve: yes'? the zonesFrom of "
                        "Bind9Instance/dns-system/dns-primary-0 selects it)")


def test_a_missing_namespace_defaults_to_the_first_allowed_one_or_is_said_missing(repo: Repo) -> None:
    bare = (HEAD + "kind: ARecord\nmetadata: {name: www, labels: {zone: org}}\n"
            "spec: {name: www, ipv4Addresses: [192.0.2.1]}\n")
    _repo(repo, bare)
    assert _validate(repo.root) == (0, [])  # in dns-system, the first allowed namespace, where its zone is
    planned = clirun.main("plan", str(repo.root))
    assert planned.returncode == 0 and "  + ARecord dns-system/www\n" in planned.stdout
    code, lines = _validate(repo.root, "--allowed-namespaces", "team-a,dns-system")
    assert (code, lines) == (1, [
        "records.yaml:3: ARecord/team-a/www: metadata.labels: belongs to no DNSZone, so it would never be published "
        "(no DNSZone's recordsFrom selects its labels, it has no spec.zone, its name is relative): there is no DNSZone "
        "in namespace team-a; add one, or give the record the namespace of its DNSZone"])
    code, lines = _validate(repo.root, "--namespace", "default")
    assert code == 1
    assert (
        "records.yaml:3: ARecord/default/www: metadata.namespace: missing: the object was put in namespace default "
        "(from --namespace), which this agent may not manage (allowed: dns-system); write metadata.namespace: "
        "dns-system") in lines


def test_the_sample_repository_still_validates_without_a_warning() -> None:
    assert _validate(SAMPLE) == (0, [])


def test_a_long_running_agent_finds_and_forgets_hidden_records_as_a_cold_one(tmp_path: pathlib.Path) -> None:
    """The memoized check (a zone whose inputs did not change keeps its findings) says what a cold one says."""
    from tests.support.warmrepo import Warm

    world = Warm(tmp_path / "repo")
    world.build()
    below = ("---\napiVersion: bindy.firestoned.io/v1beta1\nkind: ARecord\n"
             "metadata: {name: hidden, namespace: dns-system, labels: {zone: example-com}}\n"
             "spec: {name: www.lab, ipv4Addresses: [192.0.2.1]}\n")
    services = world.root / "records" / "example-com" / "services.yaml"
    services.write_text(services.read_text() + below)
    warm, cold = world.build()
    hidden = [str(p) for p in warm.problems if "below the delegation of lab.example.com." in str(p)]
    assert len(hidden) == 1 and hidden[0].startswith("records/example-com/services.yaml:")
    assert sorted(map(str, warm.problems)) == sorted(map(str, cold.problems))
    world.edit("records/example-org/site.yaml", "[198.51.100.80]", "[198.51.100.81]")  # another zone changes
    warm, cold = world.build()
    assert sorted(map(str, warm.problems)) == sorted(map(str, cold.problems)) and len(
        [p for p in warm.problems if "below the delegation" in str(p)]) == 1
    services.write_text(services.read_text().replace(below, ""))
    warm, cold = world.build()
    assert [str(p) for p in warm.problems if "below the delegation" in str(p)] == []
