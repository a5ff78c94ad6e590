"""Did-you-mean hints cost a run no more than a valid revision does: the first 20 problems of each kind get
one, every later problem of that kind is told without it (and every problem is still told)."""

from __future__ import annotations

from tests.conftest import Repo
from tests.support import clirun

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
SOA = ("  soaRecord: {primaryNs: ns1.example.net., adminEmail: hostmaster.example.org., serial: 1, refresh: 3600,"
       " retry: 600, expire: 604800, negativeTtl: 300}\n")
ZONE = (HEAD + "kind: DNSZone\nmetadata: {name: org, namespace: dns-system}\nspec:\n  zoneName: example.org\n"
        f"  clusterRef: dns\n{SOA}  nameServers: [{{hostname: ns1.example.net.}}]\n"
        "  recordsFrom: [{selector: {matchLabels: {zone: org}}}]\n")
CLUSTER = HEAD + "kind: Bind9Cluster\nmetadata: {name: dns, namespace: dns-system}\nspec: {}\n"


def _record(name: str, spec: str, labels: str = "{}") -> str:
    return (HEAD + f"kind: ARecord\nmetadata: {{name: {name}, namespace: dns-system, labels: {labels}}}\n"
            f"spec: {{{spec}, ipv4Addresses: [192.0.2.1]}}\n")


def test_the_first_twenty_problems_of_each_kind_get_a_hint(repo: Repo) -> None:
    repo.add("cluster.yaml", CLUSTER)
    repo.add("zones.yaml", ZONE)
    records = [_record(f"z{i}", "name: www, zone: exmaple.org") for i in range(30)]
    records += [_record(f"f{i}", f"name: h{i}.exmaple.org.") for i in range(25)]
    records += [_record(f"l{i}", "name: www", "{zone: ogr}") for i in range(21)]
    repo.add("records.yaml", "---\n".join(records))
    result = clirun.main("validate", str(repo.root))
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    zone = [line for line in lines if "spec.zone: no DNSZone with zoneName 'exmaple.org'" in line]
    fqdn = [line for line in lines if "no DNSZone's zoneName is a suffix of h" in line]
    label = [line for line in lines if "no DNSZone's recordsFrom selects its labels" in line]
    assert (len(zone), len(fqdn), len(label)) == (30, 25, 21)  # every problem told
    assert ["(did you mean 'example.org'?)" in line for line in zone] == [True] * 20 + [False] * 10
    assert ["(did you mean 'example.org.'?)" in line for line in fqdn] == [True] * 20 + [False] * 5
    assert ["(did you mean the label 'zone: org'?" in line for line in label] == [True] * 20 + [False]
    assert label[-1].endswith("add the label 'zone: org' that DNSZone/dns-system/org selects")
