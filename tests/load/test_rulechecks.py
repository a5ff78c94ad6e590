"""Everything the servers would refuse fails at `validate`, with file:line: Kubernetes names,
namespaces and labels, DNS labels and names on the wire (owners and every target, zone names, SOA
fields), TXT data, RRsets too big for an UPDATE, and names that grow too long down the hierarchy.
Each limit is tried at its edge and one past it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agent.desired import hierarchy as desired
from agent.model.problems import Severity
from tests.conftest import ROOT, Repo, load_dir

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
CLUSTER = HEAD + "kind: Bind9Cluster\nmetadata: {name: dns, namespace: dns}\nspec: {}\n"
SOA = ("{primaryNs: %s, adminEmail: %s, serial: 1, refresh: 3600, retry: 600, expire: 604800, "
       "negativeTtl: 300}")
L63 = "a" * 63


def _zone(zone: str, name: str = "z", primary: str = "ns1.example.com.", admin: str = "admin.example.com.",
          extra: str = "") -> str:
    return (HEAD + f"kind: DNSZone\nmetadata: {{name: {name}, namespace: dns}}\nspec:\n  zoneName: {zone}\n"
            f"  clusterRef: dns\n  soaRecord: {SOA % (primary, admin)}\n{extra}")


def _record(kind: str, name: str, spec: str, obj: str = "r") -> str:
    return HEAD + f"kind: {kind}\nmetadata: {{name: {obj}, namespace: dns}}\nspec: {{zone: example.com, name: {name}, {spec}}}\n"


def _errors(repo: Repo) -> list[str]:
    manifest = load_dir(repo.root)
    found = list(manifest.problems) + (desired.build(manifest).problems if manifest.ok else [])
    return [str(p) for p in found if p.severity is Severity.ERROR]


def _fqdn(octets: int) -> str:
    """A name of `octets` on the wire (labels of at most 63), written with the final dot."""
    text_length = octets - 2
    labels = []
    while text_length > 0:
        take = min(63, text_length)
        labels.append("b" * take)
        text_length -= take + 1
    name = ".".join(labels)
    assert len(name) + 2 == octets
    return name + "."


def test_the_issues_reproduction_four_63_octet_labels_fail_validate(repo: Repo) -> None:
    repo.add("cluster.yaml", CLUSTER)
    repo.add("zone.yaml", _zone(".".join([L63] * 4)))
    done = subprocess.run([sys.executable, "-m", "agent", "validate", str(repo.root)], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 1  # Bindy's own rule (at most 253 characters) refuses it before the wire check
    assert f"{repo.root}/zone.yaml:5: DNSZone/dns/z: spec.zoneName: '{'a' * 40}'... is 255 characters; Bindy allows " \
           "at most 253, a final dot included: shorten it (Bindy admission policy bindy-zone-name-validation)" \
           in done.stderr


def test_kubernetes_names_and_labels_at_and_over_their_limits(repo: Repo) -> None:
    subdomain_253 = ".".join([L63] * 3 + ["c" * 61])
    repo.add("ok.yaml", _record("ARecord", "ok", "ipv4Addresses: [192.0.2.1]", obj=subdomain_253)
             .replace("namespace: dns}", "namespace: dns, labels: {team: " + "t" * 63 + "}}"))
    repo.add("bad.yaml", HEAD + f"kind: ARecord\nmetadata:\n  name: {subdomain_253}x\n  namespace: {'n' * 64}\n"
             f"  labels: {{team: {'t' * 64}, 'bad key!': x, ok/: 'y'}}\n"
             "spec: {zone: example.com, name: bad, ipv4Addresses: [192.0.2.1]}\n---\n"
             + HEAD + 'kind: ARecord\nmetadata: {name: "www\\n", namespace: dns}\n'
             "spec: {zone: example.com, name: www, ipv4Addresses: [192.0.2.1]}\n")
    bad = f"ARecord/{'n' * 64}/{subdomain_253}x"
    assert sorted(e for e in _errors(repo) if e.startswith("bad.yaml")) == sorted([
        f"bad.yaml:4: {bad}: metadata.name: string should have at most 253 characters (got '{subdomain_253}x')",
        f"bad.yaml:5: {bad}: metadata.namespace: string should have at most 63 characters (got '{'n' * 64}')",
        f"bad.yaml:6: {bad}: metadata.labels.team: invalid label value '{'t' * 64}': is 64 characters long; a label "
        "value may have at most 63",
        f"bad.yaml:6: {bad}: metadata.labels.bad key!: invalid key 'bad key!': use letters, digits, '-', '_' and '.', "
        "starting and ending with a letter or digit",
        f"bad.yaml:6: {bad}: metadata.labels.ok/: invalid key 'ok/': use letters, digits, '-', '_' and '.', starting "
        "and ending with a letter or digit",
        # a trailing newline passed `re.match(r"...$")`; the object is named escaped, on one line
        "bad.yaml:11: ARecord/dns/www\\n: metadata.name: invalid name 'www\\n': use lowercase letters, digits, '-' "
        "(and '.' in names), starting and ending with a letter or digit",
    ])
    assert not [e for e in _errors(repo) if e.startswith("ok.yaml")]


def test_owner_names_at_255_octets_pass_and_at_256_fail(repo: Repo) -> None:
    repo.add("cluster.yaml", CLUSTER)
    repo.add("zone.yaml", _zone("example.com"))
    at_limit, over = _fqdn(255 - len("example.com.")), _fqdn(256 - len("example.com."))
    repo.add("records.yaml", _record("ARecord", at_limit.rstrip("."), "ipv4Addresses: [192.0.2.1]", obj="fits")
             + "---\n" + _record("ARecord", over.rstrip("."), "ipv4Addresses: [192.0.2.1]", obj="over")
             + "---\n" + _record("ARecord", "c" * 64, "ipv4Addresses: [192.0.2.1]", obj="label"))
    errors = _errors(repo)
    assert len(errors) == 2
    assert errors[0].startswith("records.yaml:9: ARecord/dns/over: spec.name: ") and errors[0].endswith(
        "in zone 'example.com.' makes the owner name 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'... (255 characters), "
        "which is 256 octets on the wire; a DNS name may have at most 255 (253 characters without the final dot)")
    assert errors[1] == (f"records.yaml:14: ARecord/dns/label: spec.name: '{'c' * 64}' is not a valid DNS name (label "
                         f"'{'c' * 63}': 1-63 letters, digits, '-' or '_'; '*' only as the first label)")


@pytest.mark.parametrize("kind, field, spec", [
    ("CNAMERecord", "target", "target: %s"),
    ("MXRecord", "mailServer", "priority: 10, mailServer: %s"),
    ("NSRecord", "nameserver", "nameserver: %s"),
    ("SRVRecord", "target", "priority: 1, weight: 1, port: 443, target: %s"),
])
def test_every_target_is_checked_on_the_wire(repo: Repo, kind: str, field: str, spec: str) -> None:
    repo.add("cluster.yaml", CLUSTER)
    repo.add("zone.yaml", _zone("example.com"))
    repo.add("fits.yaml", _record(kind, "sub", spec % _fqdn(254), obj="fits"))  # 253 characters with the dot
    repo.add("over.yaml", _record(kind, "sub", spec % _fqdn(255), obj="over"))
    # a 255-octet name is legal DNS, but Bindy counts the final dot and allows 253 characters
    assert _errors(repo) == [
        f"over.yaml:4: {kind}/dns/over: spec.{field}: 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'... is 254 characters; "
        "Bindy allows at most 253, a final dot included: shorten it (Bindy admission policy "
        "bindy-record-value-validation)"]


def test_zone_names_and_soa_fields(repo: Repo) -> None:
    repo.add("cluster.yaml", CLUSTER)
    repo.add("fits.yaml", _zone(_fqdn(254).rstrip("."), name="fits", primary=_fqdn(255), admin=_fqdn(255),
                                extra=f"  nameServers: [{{hostname: {_fqdn(255)}}}]\n"))
    repo.add("over.yaml", _zone("example.org", name="over", primary=_fqdn(256), admin=_fqdn(256),
                                extra=f"  nameServers: [{{hostname: {_fqdn(256)}}}]\n"))
    wire = "'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'... ({}) is 256 octets on the wire; a DNS name may have at " \
           "most 255 (253 characters without the final dot)"
    assert sorted(_errors(repo)) == [
        f"over.yaml:7: DNSZone/dns/over: spec.soaRecord.adminEmail: {wire.format('255 characters')}",
        f"over.yaml:7: DNSZone/dns/over: spec.soaRecord.primaryNs: {wire.format('255 characters')}",
        f"over.yaml:8: DNSZone/dns/over: spec.nameServers[0].hostname: {wire.format('255 characters')}",
    ]
    long = Repo(repo.root / "long")
    long.add("zone.yaml", _zone(_fqdn(256).rstrip("."), name="long"))  # 254 characters: Bindy refuses it first
    assert _errors(long) == [
        "zone.yaml:5: DNSZone/dns/long: spec.zoneName: 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'... is 254 "
        "characters; Bindy allows at most 253, a final dot included: shorten it (Bindy admission policy "
        "bindy-zone-name-validation)"]


def test_txt_strings_are_split_at_255_and_data_over_one_record_is_refused(repo: Repo) -> None:
    repo.add("cluster.yaml", CLUSTER)
    repo.add("zone.yaml", _zone("example.com"))
    repo.add("dkim.yaml", _record("TXTRecord", "dkim", f"text: ['{'k' * 300}']", obj="dkim"))
    repo.add("huge.yaml", _record("TXTRecord", "huge", f"text: ['{'x' * 65_300}']", obj="huge"))
    manifest = load_dir(repo.root)
    state = desired.build(manifest)
    assert [str(p) for p in state.problems if p.severity is Severity.ERROR] == [
        "huge.yaml:4: TXTRecord/dns/huge: spec.text: is 65,557 octets as TXT data (strings split at 255); one record "
        "holds at most 65,535 - publish less, or split it across names"]
    dkim = state.zones[0].rrsets[("dkim.example.com.", "TXT")]
    assert dkim.rdatas == (f'"{"k" * 255}" "{"k" * 45}"',)


def test_an_rrset_too_big_for_one_update_is_refused(repo: Repo) -> None:
    repo.add("cluster.yaml", CLUSTER)
    repo.add("zone.yaml", _zone("example.com"))
    def addresses(count: int, last: int) -> str:
        return ", ".join(f"10.{i // 250}.{i % 250}.{last}" for i in range(count))

    repo.add("fits.yaml", _record("ARecord", "fits", f"ipv4Addresses: [{addresses(1995, 1)}]", obj="fits"))
    repo.add("big.yaml", _record("ARecord", "big", f"ipv4Addresses: [{addresses(1200, 1)}]", obj="big-1")
             + "---\n" + _record("ARecord", "big", f"ipv4Addresses: [{addresses(1200, 2)}]", obj="big-2"))
    message = ("spec: the RRset 'big.example.com.' A is 38,417 octets on the wire; at most 32,000 fit in a DNS UPDATE "
               "next to the RRset it replaces - spread the values over more names")
    assert _errors(repo) == [f"big.yaml:4: ARecord/dns/big-1: {message}", f"big.yaml:9: ARecord/dns/big-2: {message}"]


def test_a_caa_tag_with_a_trailing_newline_is_an_error_not_a_traceback(repo: Repo) -> None:
    repo.add("cluster.yaml", CLUSTER)
    repo.add("zone.yaml", _zone("example.com"))
    repo.add("caa.yaml", _record("CAARecord", '"@"', 'flags: 0, tag: "issue\\n", value: letsencrypt.org'))
    assert _errors(repo) == [
        "caa.yaml:4: CAARecord/dns/r: spec.tag: 'issue\\n' is not a CAA tag (1-15 letters or digits, such as issue, "
        "issuewild, iodef)"]


def test_names_that_grow_too_long_down_the_hierarchy(repo: Repo) -> None:
    repo.add("cluster.yaml", HEAD + f"kind: Bind9Cluster\nmetadata: {{name: {'c' * 52}, namespace: dns}}\nspec: {{}}\n")
    repo.add("instance.yaml", CLUSTER + "---\n" + HEAD + f"kind: Bind9Instance\nmetadata: {{name: {'i' * 63}, "
             "namespace: dns}\nspec: {clusterRef: dns, role: primary}\n")
    assert sorted(_errors(repo)) == [  # c * 52 + "-secondary-0" is 64 characters; the instance's own 63 are fine
        f"cluster.yaml:3: Bind9Cluster/dns/{'c' * 52}: metadata.name: generates the Service "
        f"'{'c' * 40}'... (64 characters), which Kubernetes refuses: the name is 64 characters long; at most 63; "
        "shorten the name (or label) it comes from",
        f"cluster.yaml:3: Bind9Cluster/dns/{'c' * 52}: metadata.name: generates the label "
        f"app.kubernetes.io/instance='{'c' * 40}'... (64 characters), which Kubernetes refuses: it is 64 characters "
        "long; a label value may have at most 63; shorten the name (or label) it comes from",
    ]
