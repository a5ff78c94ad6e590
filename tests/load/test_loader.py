"""Bad input: each kind of mistake is reported with its exact file:line, object, field and message,
all of them in one run, and never as a traceback."""

from __future__ import annotations

import pathlib
import subprocess
import sys

from agent.desired import hierarchy as desired
from agent.model.problems import Severity
from tests.conftest import Repo, load_dir

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
ZONE = HEAD + """kind: DNSZone
metadata: {name: %(name)s, namespace: dns}
spec:
  zoneName: %(zone)s
  clusterRef: %(cluster)s
  soaRecord: {primaryNs: ns1.example.com., adminEmail: admin.example.com., serial: 1,
              refresh: 3600, retry: 600, expire: 604800, negativeTtl: 300}
"""
CLUSTER = HEAD + "kind: Bind9Cluster\nmetadata: {name: dns, namespace: dns}\nspec: {}\n"


def _problems(root: pathlib.Path) -> list[str]:
    manifest = load_dir(root)
    found = list(manifest.problems)
    if manifest.ok:
        found += desired.build(manifest).problems
    return [str(p) for p in found if p.severity is Severity.ERROR]


def test_syntax_shape_and_schema_errors_are_all_reported_with_file_and_line(repo: Repo) -> None:
    repo.add("a-syntax.yaml", "a: [1,\n  b: 2\n")
    repo.add("b-shapes.yaml", "- just\n- a list\n---\nplain scalar\n")
    repo.add("c-kinds.yaml", HEAD + "kind: ARecords\nmetadata: {name: x}\n---\n"
             "apiVersion: bindy.firestoned.io/v1alpha1\nkind: ARecord\nmetadata: {name: y}\n---\n"
             "apiVersion: v1\nkind: DNSZone\nmetadata: {name: z}\n")
    repo.add("d-fields.yaml", HEAD + """kind: MXRecord
metadata:
  name: mx
  namespace: dns
spec:
  name: "@"
  priorty: 10
  mailServer: mx.example.com.
  ttl: -5
---
""" + HEAD + """kind: Bind9Instance
metadata: {name: i, namespace: dns}
spec:
  clusterRef: dns
  role: leader
---
""" + HEAD + """kind: DNSZone
metadata: {name: soa, namespace: dns}
spec:
  zoneName: example.net
  soaRecord: {primaryNs: ns1.example.net, adminEmail: a.example.net., serial: 1, refresh: 0,
              retry: 1, expire: 1, negativeTtl: 1}
""")
    repo.add("e-meta.yaml", HEAD + "kind: TXTRecord\nmetadata: {name: Bad_Name, namespace: dns}\n"
             "spec: {name: t, text: [x]}\n---\n"
             + HEAD + "kind: ClusterBind9Provider\nmetadata: {name: p, namespace: dns}\nspec: {}\n---\n"
             + HEAD + "kind: ARecord\nmetadata: {name: dup, namespace: dns}\nspec:\n  name: a\n"
             "  name: b\n  ipv4Addresses: [192.0.2.1]\n")
    assert _problems(repo.root) == [
        "a-syntax.yaml:3: YAML syntax error: while parsing a flow sequence (opened at line 1): did not find expected ',' or ']'",
        "b-shapes.yaml:1: expected a mapping (a Kubernetes object), got list",
        "b-shapes.yaml:4: expected a mapping (a Kubernetes object), got str",
        "c-kinds.yaml:2: kind: unknown kind 'ARecords' in bindy.firestoned.io/v1beta1 (did you mean 'ARecord'?)",
        "c-kinds.yaml:5: apiVersion: unsupported version 'bindy.firestoned.io/v1alpha1'; use bindy.firestoned.io/v1beta1",
        "c-kinds.yaml:9: apiVersion: DNSZone needs apiVersion: bindy.firestoned.io/v1beta1",
        "d-fields.yaml:10: MXRecord/dns/mx: spec.ttl: input should be greater than or equal to 0 (got -5)",
        "d-fields.yaml:6: MXRecord/dns/mx: spec.priority: required field is missing",
        "d-fields.yaml:8: MXRecord/dns/mx: spec.priorty: unknown field (did you mean 'priority'?)",
        "d-fields.yaml:17: Bind9Instance/dns/i: spec.role: input should be 'primary' or 'secondary' (got 'leader')",
        "d-fields.yaml:24: DNSZone/dns/soa: spec.soaRecord.primaryNs: must be a fully qualified name ending with '.' (write 'ns1.example.net.')",
        "d-fields.yaml:24: DNSZone/dns/soa: spec.soaRecord.refresh: input should be greater than or equal to 1 (got 0)",
        "e-meta.yaml:3: TXTRecord/dns/Bad_Name: metadata.name: invalid name 'Bad_Name': use lowercase letters, digits, '-' (and '.' in names), starting and ending with a letter or digit",
        "e-meta.yaml:8: ClusterBind9Provider/p: metadata.namespace: ClusterBind9Provider is cluster-scoped; remove metadata.namespace",
        "e-meta.yaml:16: duplicate key 'name' in a mapping",
    ]


def test_duplicate_objects_name_both_places(repo: Repo) -> None:
    repo.add("one.yaml", CLUSTER)
    repo.add("two.yaml", "# the same cluster again\n" + CLUSTER)
    assert _problems(repo.root) == [
        "two.yaml:2: Bind9Cluster/dns/dns: duplicate object: already defined at one.yaml:1"]


def test_semantic_errors_are_all_reported_together(repo: Repo) -> None:
    repo.add("cluster.yaml", CLUSTER)
    repo.add("zones.yaml", ZONE % {"name": "z1", "zone": "example.com", "cluster": "dns"} + "---\n"
             + ZONE % {"name": "z2", "zone": "example.com", "cluster": "dns"} + "---\n"
             + ZONE % {"name": "z3", "zone": "example.org", "cluster": "nope"})
    repo.add("records.yaml", HEAD + """kind: ARecord
metadata: {name: bad-ip, namespace: dns}
spec:
  zone: example.com
  name: www
  ipv4Addresses: [192.0.2.1, 300.1.2.3]
---
""" + HEAD + """kind: CNAMERecord
metadata: {name: apex, namespace: dns}
spec: {zone: example.com, name: "@", target: www.example.com.}
---
""" + HEAD + """kind: CNAMERecord
metadata: {name: beside, namespace: dns}
spec: {zone: example.com, name: mail, target: www.example.com.}
---
""" + HEAD + """kind: TXTRecord
metadata: {name: beside-txt, namespace: dns}
spec: {zone: example.com, name: mail, text: ["hello"]}
---
""" + HEAD + """kind: ARecord
metadata: {name: outside, namespace: dns}
spec: {zone: example.com, name: www.example.org., ipv4Addresses: [192.0.2.1]}
---
""" + HEAD + """kind: TXTRecord
metadata: {name: control, namespace: dns}
spec: {zone: example.com, name: t, text: ["bell\\u0007"]}
---
""" + HEAD + """kind: ARecord
metadata: {name: no-zone, namespace: dns}
spec: {zone: example.biz, name: x, ipv4Addresses: [192.0.2.1]}
""")
    assert sorted(_problems(repo.root)) == sorted([
        "records.yaml:7: ARecord/dns/bad-ip: spec.ipv4Addresses[1]: '300.1.2.3' is not an IPv4 address",
        "records.yaml:12: CNAMERecord/dns/apex: spec.name: a CNAME cannot be at the zone apex (it would hide the SOA and NS)",
        "records.yaml:17: CNAMERecord/dns/beside: spec.name: a CNAME cannot share its name with other records (TXT): "
        "TXTRecord dns/beside-txt at records.yaml:22",
        # the other record (perhaps the one just added) says where the CNAME is
        "records.yaml:22: TXTRecord/dns/beside-txt: spec.name: mail.example.com. also has a CNAME (CNAMERecord "
        "dns/beside at records.yaml:17), and a CNAME cannot share its name with other records (RFC 1034 3.6.2): "
        "remove one of them, or give it another name",
        "records.yaml:27: ARecord/dns/outside: spec.name: 'www.example.org.' is outside its zone example.com.",
        "records.yaml:32: TXTRecord/dns/control: spec.text[0]: contains a control character",
        "records.yaml:37: ARecord/dns/no-zone: spec.zone: no DNSZone with zoneName 'example.biz'",
        "zones.yaml:14: DNSZone/dns/z2: spec.zoneName: zone example.com is already declared by DNSZone/dns/z1 at zones.yaml:1",
        "zones.yaml:24: DNSZone/dns/z3: spec.clusterRef: no Bind9Cluster 'nope' in namespace dns and no ClusterBind9Provider 'nope'",
    ])


def test_values_bindy_admission_refuses_are_load_errors_reported_all_at_once(repo: Repo) -> None:
    """Bindy's record-value and zone-name policies refuse these before any zone is involved, as the
    API server would; the rest of the revision is then not expanded."""
    repo.add("cluster.yaml", CLUSTER)
    repo.add("records.yaml", HEAD + """kind: CNAMERecord
metadata: {name: no-dot, namespace: dns}
spec: {zone: example.com, name: alias, target: www.example.com}
---
""" + HEAD + """kind: ARecord
metadata: {name: label, namespace: dns}
spec: {zone: example.com, name: "bad label", ipv4Addresses: [192.0.2.1]}
---
""" + HEAD + """kind: MXRecord
metadata: {name: braces, namespace: dns}
spec: {zone: example.com, name: "@", priority: 1, mailServer: "mx{1}.example.com."}
""")
    assert _problems(repo.root) == [
        "records.yaml:4: CNAMERecord/dns/no-dot: spec.target: 'www.example.com' must be fully qualified with "
        "a trailing dot (write 'www.example.com.'); without it a DNS server appends the zone name "
        "(Bindy admission policy bindy-record-value-validation)",
        "records.yaml:9: ARecord/dns/label: spec.name: 'bad label' contains ';', '{', '}', '\"', '\\', "
        "whitespace or a control character, which would break the zone declaration or a DNS UPDATE: "
        "remove it (Bindy admission policy bindy-zone-name-validation)",
        "records.yaml:14: MXRecord/dns/braces: spec.mailServer: 'mx{1}.example.com.' may contain only "
        "letters, digits, '.', '-' and '_' (no whitespace, control characters, ';', '{', '}', '\"', "
        "'\\' or '$') (Bindy admission policy bindy-record-value-validation)",
    ]


def test_in_zone_targets_without_address_records_are_refused_before_bind_does(repo: Repo) -> None:
    repo.add("cluster.yaml", CLUSTER)
    repo.add("zone.yaml", ZONE % {"name": "z", "zone": "example.com", "cluster": "dns"})
    repo.add("mx.yaml", HEAD + """kind: MXRecord
metadata: {name: mx, namespace: dns}
spec: {zone: example.com, name: "@", priority: 10, mailServer: mx9.example.com.}
---
""" + HEAD + """kind: MXRecord
metadata: {name: mx-outside, namespace: dns}
spec: {zone: example.com, name: "@", priority: 20, mailServer: mx.example.net.}
""")
    assert _problems(repo.root) == [
        "mx.yaml:4: MXRecord/dns/mx: spec.mailServer: mx9.example.com. is inside zone example.com. but has no "
        "A or AAAA record; BIND refuses such an update (check-integrity). Add an ARecord for it"]


def test_unsafe_named_conf_values_are_refused(repo: Repo) -> None:
    """Bindy's ACL policy covers allowQuery/allowTransfer (tests/load/test_admission.py); the other
    named.conf values are checked when the configuration is built."""
    repo.add("cluster.yaml", HEAD + """kind: Bind9Cluster
metadata: {name: dns, namespace: dns}
spec:
  global:
    forwarders: ['192.0.2.1; }; include "/etc/passwd"']
""")
    assert _problems(repo.root) == [
        "cluster.yaml:1: Bind9Cluster/dns/dns: forwarders[0]: '192.0.2.1; }; include \"/etc/passwd\"' contains a "
        "quote, ';', '{', '}' or a control character, which would break named.conf",
    ] * 2  # once for each generated instance (primary-0, secondary-0)


def test_non_bindy_documents_are_skipped_with_a_warning(repo: Repo) -> None:
    repo.add("kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n")
    manifest = load_dir(repo.root)
    assert manifest.ok
    assert [str(p) for p in manifest.problems] == [
        "kustomization.yaml:1: skipped: not a Bindy object (kustomize.config.k8s.io/v1beta1 Kustomization)"]


def test_no_traceback_for_binary_or_empty_files(repo: Repo) -> None:
    (repo.root / "blob.yaml").write_bytes(b"\xff\xfe\x00garbage")
    (repo.root / "empty.yml").write_text("")
    repo.add("tabs.yaml", "a:\n\tb: 1\n")
    result = subprocess.run([sys.executable, "-m", "agent", "validate", str(repo.root)],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{repo.root}/blob.yaml:1: cannot read file" in result.stderr
    assert f"{repo.root}/tabs.yaml:2: YAML syntax error" in result.stderr


def test_a_warning_repeated_in_a_file_is_listed_once_with_a_count_and_errors_are_all_kept(repo: Repo) -> None:
    def record(name: str, extra: str = "") -> str:
        return HEAD + (f"kind: ARecord\nmetadata: {{name: {name}, namespace: dns}}\n"
                       f"spec: {{name: {name}, zone: example.com, ipv4Addresses: [192.0.2.1]{extra}}}\n")

    repo.add("a.yaml", "---\n".join([record("a1"), record("a2", ", ttl: -5"), record("a3"), record("a4", ", ttl: -6")]))
    repo.add("b.yaml", record("b1"))
    found = [str(p) for p in load_dir(repo.root).problems]
    shorthand = [p for p in found if "shorthand" in p]
    assert len(shorthand) == 2, found  # one per file, each at its first record
    assert shorthand[0].startswith("a.yaml:4: ARecord/dns/a1: spec.zone: shorthand: ")
    assert shorthand[0].endswith(" (and 3 more like it in this file)")
    assert shorthand[1].startswith("b.yaml:4: ARecord/dns/b1: spec.zone: ") and "more like it" not in shorthand[1]
    errors = [p for p in found if "spec.ttl" in p]
    assert [e.split(":")[:2] for e in errors] == [["a.yaml", "9"], ["a.yaml", "19"]], found  # each error, its own line
