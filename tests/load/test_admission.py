"""Bindy's admission policies (deploy/admission-policies) hold in `validate`: for every rule, a
document Bindy accepts validates cleanly and one Bindy rejects is refused at its file:line, with a
message naming what is wrong and how to fix it. The fixtures are written from the rules."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from agent.desired import hierarchy as desired
from agent.load import admission, parse
from agent.model.problems import Problem, Severity
from tests.support.documents import HEAD, MARK, _marked_line, _spec, cluster, instance

LONG = "a" * 63


def zone(body: str) -> str:
    return (cluster("version: '9.18'") + "---\n" + HEAD + "kind: DNSZone\n"
            "metadata: {name: zone, namespace: dns-system}\nspec:\n  clusterRef: dns\n"
            "  soaRecord: {primaryNs: ns1.example.com., adminEmail: hostmaster.example.com., serial: 1,\n"
            "              refresh: 3600, retry: 600, expire: 604800, negativeTtl: 86400}\n" + _spec(body))


def bare_record(kind: str, body: str) -> str:
    """A record alone (a zone of the same file takes it, or none does)."""
    return HEAD + f"kind: {kind}\nmetadata: {{name: rec, namespace: dns-system, labels: {{app: rec}}}}\nspec:\n" \
        + _spec(body)


def record(kind: str, body: str) -> str:
    """A record in a zone that holds none of the names its values point at: only its own fields can decide (a
    record in no zone is refused for that alone)."""
    return (zone("zoneName: records.test\nrecordsFrom: [{selector: {matchLabels: {app: rec}}}]") + "---\n"
            + bare_record(kind, body))


def acl_list(entries: int) -> str:
    lines = [f"      - 10.{i // 256}.{i % 256}.0/24" for i in range(entries)]
    lines[-1] += f"  {MARK}"
    return "global:\n  allowQuery:\n    - any\n  allowTransfer:\n" + "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class Case:
    rule: str  # Bindy's policy / our name for one of its validations
    accept: str
    reject: str
    path: str  # where the rejection points
    message: str  # part of the message a user reads

    def __str__(self) -> str:
        return f"{self.rule} {self.path}"


CASES = [
    # bindy-acl-validation (01-bindy-acl-policy.yaml)
    Case("bindy-acl-validation/acl-list-size", cluster(acl_list(255)), cluster(acl_list(256)),
         "spec.global.allowTransfer[255]",
         "257 allowQuery/allowTransfer entries in this object; Bindy accepts at most 256"),
    Case("bindy-acl-validation/acl-entry-length",
         cluster(f"global:\n  allowQuery:\n    - key {'k' * 252}"),
         cluster(f"global:\n  allowQuery:\n    - any\n    - key {'k' * 253}  {MARK}"),
         "spec.global.allowQuery[1]", "is 257 bytes; an ACL entry must be 1 to 256 bytes"),
    Case("bindy-acl-validation/acl-entry-length",
         cluster("primary:\n  allowTransfer: [10.0.0.0/8]"),
         cluster(f"primary:\n  allowTransfer:\n    - ''  {MARK}"),
         "spec.primary.allowTransfer[0]", "an empty ACL entry: remove it"),
    Case("bindy-acl-validation/acl-injection-chars",
         cluster("global:\n  allowQuery: [any]"),
         cluster("global:\n  allowQuery:\n"
                 f"    - 'any; }}; zone \"evil\" {{ type master; file \"/etc/passwd\"; }}; acl x {{ any'  {MARK}"),
         "spec.global.allowQuery[0]",
         "contains ';', '{', '}', '\"', '\\' or a line break, which would break out of named.conf's "
         "ACL block: write one address-match element per entry"),
    Case("bindy-acl-validation/acl-injection-chars",
         instance("config:\n  allowQuery: [10.0.0.0/8]"),
         instance(f"config:\n  allowQuery:\n    - '10.0.0.0/8; allow-recursion {{ any; }};'  {MARK}"),
         "spec.config.allowQuery[0]", "would break out of named.conf's ACL block"),
    Case("bindy-acl-validation/acl-token-grammar",
         cluster("primary:\n  allowTransfer: [10.0.0.0/8, 192.168.0.0/16, key bindy-operator]\n"
                 "global:\n  allowQuery: [any, '!10.0.0.0/8', '2001:db8::/32', '! localnets']\n"
                 "  allowTransfer: [localhost, localnets, none]"),
         cluster(f"global:\n  allowQuery:\n    - any\n    - anyone  {MARK}"),
         "spec.global.allowQuery[1]",
         "'anyone' is not an ACL entry Bindy accepts: use any, none, localhost, localnets, an IPv4 or "
         "IPv6 address (optionally with /prefix) or 'key <name>', each optionally prefixed with '!'"),
    Case("bindy-acl-validation/acl-token-grammar",
         cluster("secondary:\n  allowTransfer: [10.1.0.0/16]"),
         cluster(f"secondary:\n  allowTransfer:\n    - 10.1.0.0/33  {MARK}"),
         "spec.secondary.allowTransfer[0]", "'10.1.0.0/33' is not an ACL entry Bindy accepts"),
    # bindy-zone-name-validation (03-bindy-zone-name-policy.yaml)
    Case("bindy-zone-name-validation/dns-name-length",
         zone(f"zoneName: {LONG}.{LONG}.{LONG}.{'d' * 61}"),
         zone(f"zoneName: {LONG}.{LONG}.{LONG}.{'d' * 62}  {MARK}"),
         "spec.zoneName", "is 254 characters; Bindy allows at most 253, a final dot included"),
    Case("bindy-zone-name-validation/dns-name-chars",
         record("ARecord", "name: www\nipv4Addresses: [192.0.2.1]"),
         record("ARecord", f"name: www example  {MARK}\nipv4Addresses: [192.0.2.1]"),
         "spec.name", "'www example' contains ';', '{', '}', '\"', '\\', whitespace or a control character"),
    Case("bindy-zone-name-validation/dns-name-dots",
         record("SRVRecord", "name: _sip._tcp\nport: 5060\npriority: 10\nweight: 5\ntarget: sip.example.com."),
         record("TXTRecord", f"name: bad..www  {MARK}\ntext: [hello]"),
         "spec.name", "'bad..www' starts with '.' or '-' or contains '..': leave no empty label and start the name "
         "with a letter, digit or '_'"),
    Case("bindy-zone-name-validation/dns-name-dots",
         record("ARecord", "name: '@'\nipv4Addresses: [192.0.2.1]"),
         record("ARecord", f"name: -www  {MARK}\nipv4Addresses: [192.0.2.1]"),
         "spec.name", "'-www' starts with '.' or '-' or contains '..'"),
    Case("bindy-zone-name-validation/dns-name-not-ipv4",
         zone("zoneName: 0.0.10.in-addr.arpa"),
         zone(f"zoneName: 10.0.0.1  {MARK}"),
         "spec.zoneName",
         "'10.0.0.1' is an IPv4 address, not a DNS name: name a reverse zone like '0.0.10.in-addr.arpa'"),
    Case("bindy-zone-name-validation/dns-name-not-ipv4",
         zone("zoneName: example.com") + "---\n" + bare_record("ARecord", "name: www\nzone: example.com\n"
                                                              "ipv4Addresses: [192.0.2.1]"),
         bare_record("ARecord", f"name: www\nzone: 192.0.2.1.  {MARK}\nipv4Addresses: [192.0.2.1]"),
         "spec.zone", "'192.0.2.1.' is an IPv4 address, not a DNS name"),
    # bindy-rndc-algorithm-strict (05-bindy-rndc-strict-policy.yaml)
    Case("bindy-rndc-algorithm-strict/rndc-algorithm",
         instance("rndcSecretRef: {name: bindy-rndc, algorithm: hmac-sha256}"),
         instance(f"rndcSecretRef:\n  name: bindy-rndc\n  algorithm: hmac-sha1  {MARK}"),
         "spec.rndcSecretRef.algorithm",
         "hmac-sha1 is refused by Bindy (hmac-md5 and hmac-sha1 are deprecated, RFC 8945 §10): "
         "use hmac-sha256 or stronger"),
    Case("bindy-rndc-algorithm-strict/rndc-algorithm",
         cluster("primary:\n  rndcKey: {algorithm: hmac-sha512}"),
         cluster(f"primary:\n  rndcKey:\n    algorithm: hmac-sha1  {MARK}"),
         "spec.primary.rndcKey.algorithm", "hmac-sha1 is refused by Bindy"),
    # bindy-pod-shape-validation (07-bindy-pod-shape-policy.yaml)
    Case("bindy-pod-shape-validation/volume-sources",
         instance("volumes:\n  - {name: scratch, emptyDir: {}}\n  - {name: extra-keys, secret: {secretName: bindy-extra-tsig}}\n"
                  "  - {name: conf, configMap: {name: bindy-extra}}\n"
                  "  - {name: data, persistentVolumeClaim: {claimName: bindy-data}}"),
         instance(f"volumes:\n  - name: host-root\n    hostPath:  {MARK}\n      path: /\n      type: Directory"),
         "spec.volumes[0].hostPath",
         "volume 'host-root' uses hostPath, which Bindy forbids: use emptyDir, or a configMap, secret or "
         "persistentVolumeClaim whose name starts with 'bindy-'"),
    Case("bindy-pod-shape-validation/volume-sources",
         instance("volumes:\n  - {name: stolen, secret: {secretName: bindy-production-tsig}}"),
         instance(f"volumes:\n  - name: stolen\n    secret:\n      secretName: production-primary-rndc-key  {MARK}"),
         "spec.volumes[0].secret.secretName",
         "Secret 'production-primary-rndc-key' does not start with 'bindy-': Bindy mounts only Secrets, "
         "ConfigMaps and claims named bindy-* (e.g. 'bindy-production-primary-rndc-key')"),
    Case("bindy-pod-shape-validation/volume-sources",
         cluster("volumes:\n  - {name: zones, persistentVolumeClaim: {claimName: bindy-zones}}"),
         cluster(f"volumes:\n  - name: zones\n    persistentVolumeClaim:\n      claimName: zones  {MARK}"),
         "spec.volumes[0].persistentVolumeClaim.claimName", "claim 'zones' does not start with 'bindy-'"),
    Case("bindy-pod-shape-validation/volume-sources",
         cluster("volumes:\n  - {name: empty, emptyDir: {medium: Memory}}"),
         cluster(f"volumes:\n  - name: nothing  {MARK}"),
         "spec.volumes[0]", "volume 'nothing' names no source Bindy allows: use emptyDir, or a configMap"),
    Case("bindy-pod-shape-validation/mount-path-prefix",
         instance("volumes: [{name: s, emptyDir: {}}]\nvolumeMounts:\n  - {name: s, mountPath: /data/scratch}\n"
                  "  - {name: s, mountPath: /var/log/bind/extra}"),
         instance(f"volumes: [{{name: s, emptyDir: {{}}}}]\nvolumeMounts:\n  - name: s\n    mountPath: /etc/bind/keys  {MARK}"),
         "spec.volumeMounts[0].mountPath",
         "'/etc/bind/keys' is outside the paths Bindy lets users mount: mount under /data/ or "
         "/var/log/bind/ (the rest of the pod belongs to the operator)"),
    Case("bindy-pod-shape-validation/mount-path-traversal",
         instance("volumes: [{name: c, configMap: {name: bindy-c}}]\nvolumeMounts: [{name: c, mountPath: /data/c}]"),
         instance(f"volumes: [{{name: c, configMap: {{name: bindy-c}}}}]\nvolumeMounts:\n  - name: c\n"
                  f"    mountPath: /data/../etc/bind/named.conf  {MARK}\n    subPath: named.conf"),
         "spec.volumeMounts[0].mountPath",
         "'/data/../etc/bind/named.conf' contains '..': Bindy refuses path traversal; write the path without '..'"),
    Case("bindy-pod-shape-validation/subpath-traversal",
         cluster("volumes: [{name: c, configMap: {name: bindy-c}}]\n"
                 "volumeMounts: [{name: c, mountPath: /data/c, subPath: conf/extra.conf}]"),
         cluster(f"volumes: [{{name: c, configMap: {{name: bindy-c}}}}]\nvolumeMounts:\n  - name: c\n"
                 f"    mountPath: /data/c\n    subPathExpr: $(POD)/../../etc  {MARK}"),
         "spec.volumeMounts[0].subPathExpr", "'$(POD)/../../etc' contains '..': Bindy refuses path traversal"),
    Case("bindy-pod-shape-validation/dnssec-keys-secret-prefix",
         instance("config:\n  dnssec:\n    signing: {enabled: true, keysFrom: {secretRef: {name: bindy-dnssec-keys}}}"),
         instance("config:\n  dnssec:\n    signing:\n      enabled: true\n      keysFrom:\n        secretRef:\n"
                  f"          name: production-primary-rndc-key  {MARK}"),
         "spec.config.dnssec.signing.keysFrom.secretRef.name",
         "DNSSEC key Secret 'production-primary-rndc-key' does not start with 'bindy-': Bindy mounts only "
         "Secrets named bindy-* into the BIND9 pod (e.g. 'bindy-production-primary-rndc-key')"),
    Case("bindy-pod-shape-validation/dnssec-keys-secret-prefix",
         cluster("global:\n  dnssec:\n    signing: {enabled: true, keysFrom: {secretRef: {name: bindy-keys}}}"),
         cluster(f"global:\n  dnssec:\n    signing:\n      keysFrom:\n        secretRef: {{name: keys}}  {MARK}"),
         "spec.global.dnssec.signing.keysFrom.secretRef.name", "DNSSEC key Secret 'keys' does not start"),
    # bindy-dnssec-policy-validation (09): Bindy's CRD schema holds the same patterns, so the schema
    # (generated from the models) already refuses these before admission runs, as the API server does.
    Case("bindy-dnssec-policy-validation/dnssec-policy-name",
         # the policy is defined where the zone is created (a zone naming an undefined policy is an
         # error of its own: tests/desired/test_dnssecpolicy.py)
         zone("zoneName: example.com\ndnssecPolicy: high-security").replace(
             "version: '9.18'", "global: {dnssec: {signing: {enabled: true, policy: high-security}}}"),
         zone(f"zoneName: example.com\ndnssecPolicy: 'evil\"; }}; allow-update {{ any; }};'  {MARK}"),
         "spec.dnssecPolicy", "does not match the required pattern ^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$"),
    Case("bindy-dnssec-policy-validation/dnssec-signing-params",
         cluster("global:\n  dnssec:\n    signing: {enabled: true, policy: high-security, algorithm: ECDSAP256SHA256,"
                 " kskLifetime: 365d, zskLifetime: 90d}"),
         cluster("global:\n  dnssec:\n    signing:\n      enabled: true\n"
                 f"      kskLifetime: '365d; }}; zone \"evil\" {{ type master; }};'  {MARK}"),
         "spec.global.dnssec.signing.kskLifetime", "does not match the required pattern ^[A-Za-z0-9]{1,32}$"),
    # bindy-record-value-validation (13-bindy-record-value-policy.yaml)
    Case("bindy-record-value-validation/target-absolute",
         record("CNAMERecord", "name: blog\ntarget: example.github.io."),
         record("CNAMERecord", f"name: blog\ntarget: example.github.io  {MARK}"),
         "spec.target",
         "'example.github.io' must be fully qualified with a trailing dot (write 'example.github.io.'); "
         "without it a DNS server appends the zone name"),
    Case("bindy-record-value-validation/target-absolute",
         record("MXRecord", "name: '@'\npriority: 10\nmailServer: mail.example.com."),
         record("MXRecord", f"name: '@'\npriority: 10\nmailServer: mail.example.com  {MARK}"),
         "spec.mailServer", "'mail.example.com' must be fully qualified with a trailing dot"),
    Case("bindy-record-value-validation/target-charset",
         record("MXRecord", "name: '@'\npriority: 10\nmailServer: mail_1.example.com."),
         record("MXRecord", f"name: '@'\npriority: 10\nmailServer: mail example.com.  {MARK}"),
         "spec.mailServer", "'mail example.com.' may contain only letters, digits, '.', '-' and '_'"),
    Case("bindy-record-value-validation/target-length",
         record("NSRecord", f"name: sub\nnameserver: {LONG}.{LONG}.{LONG}.{'n' * 60}."),
         record("NSRecord", f"name: sub\nnameserver: {LONG}.{LONG}.{LONG}.{'n' * 61}.  {MARK}"),
         "spec.nameserver", "is 254 characters; Bindy allows at most 253, a final dot included"),
    Case("bindy-record-value-validation/target-dots",
         record("SRVRecord", "name: _sip._tcp\nport: 5060\npriority: 10\nweight: 5\ntarget: sip.example.com."),
         record("SRVRecord", f"name: _sip._tcp\nport: 5060\npriority: 10\nweight: 5\ntarget: sip..example.com.  {MARK}"),
         "spec.target", "'sip..example.com.' starts with '.' or contains '..': remove the empty label"),
    # bindy-image-provenance-validation (15-bindy-image-provenance-policy.yaml)
    Case("bindy-image-provenance-validation/bindcar-image-registry",
         instance("bindcarConfig: {image: 'ghcr.io/firestoned/bindcar:v0.7.3'}"),
         instance(f"bindcarConfig:\n  image: registry.example.com/bindcar:v0.7.3  {MARK}"),
         "spec.bindcarConfig.image",
         "'registry.example.com/bindcar:v0.7.3' is not from ghcr.io/firestoned/: Bindy trusts only "
         "firestoned's bindcar images (e.g. ghcr.io/firestoned/bindcar:v0.7.3)"),
    Case("bindy-image-provenance-validation/bindcar-image-registry",
         cluster("global:\n  bindcarConfig: {image: 'ghcr.io/firestoned/bindcar:v0.7.3'}"),
         cluster(f"global:\n  bindcarConfig:\n    image: docker.io/library/bindcar:v1  {MARK}"),
         "spec.global.bindcarConfig.image", "is not from ghcr.io/firestoned/"),
    Case("bindy-image-provenance-validation/bind9-image-registry",
         instance("image: {image: 'docker.io/internetsystemsconsortium/bind9:9.18'}"),
         instance(f"image:\n  image: quay.io/someone/bind9:9.18  {MARK}"),
         "spec.image.image",
         "'quay.io/someone/bind9:9.18' is not internetsystemsconsortium/bind9 (Docker Hub) or a "
         "ghcr.io/firestoned/ mirror, the only BIND9 images Bindy trusts"),
    Case("bindy-image-provenance-validation/image-immutable",
         instance("image: {image: 'internetsystemsconsortium/bind9:9.18'}"),
         instance(f"image:\n  image: internetsystemsconsortium/bind9:latest  {MARK}"),
         "spec.image.image",
         "'internetsystemsconsortium/bind9:latest' is mutable: pin a digest (@sha256:...) or a named "
         "tag other than :latest (e.g. internetsystemsconsortium/bind9:9.18)"),
    Case("bindy-image-provenance-validation/image-immutable",
         cluster("image: {image: 'ghcr.io/firestoned/bind9@sha256:" + "0" * 64 + "'}"),
         cluster(f"image:\n  image: ghcr.io/firestoned/bind9  {MARK}"),
         "spec.image.image", "'ghcr.io/firestoned/bind9' is mutable"),
    # bindy-bindcar-env-validation (19-bindy-bindcar-env-policy.yaml)
    Case("bindy-bindcar-env-validation/bindcar-env-reserved-names",
         instance("bindcarConfig:\n  envVars: [{name: RATE_LIMIT_REQUESTS, value: '600'}, {name: RATE_LIMIT_BURST, value: '50'}]"),
         instance(f"bindcarConfig:\n  envVars:\n    - name: BIND_API_TOKEN  {MARK}\n      value: attacker-chosen"),
         "spec.bindcarConfig.envVars[0].name",
         "BIND_API_TOKEN is set by the operator; Bindy refuses it in bindcarConfig.envVars (the last "
         "duplicate wins and could disable the sidecar's authentication): remove it"),
    Case("bindy-bindcar-env-validation/bindcar-env-reserved-prefixes",
         cluster("global:\n  bindcarConfig:\n    envVars: [{name: LOG_FORMAT, value: json}]"),
         cluster(f"global:\n  bindcarConfig:\n    envVars:\n      - name: KUBE_API_SERVER  {MARK}\n"
                 "        value: https://rogue.example.com"),
         "spec.global.bindcarConfig.envVars[0].name",
         "KUBE_API_SERVER is in an operator-managed family (BIND_TLS_*, KUBE_*); Bindy refuses it in "
         "bindcarConfig.envVars: remove it"),
    Case("bindy-bindcar-env-validation/bindcar-env-reserved-prefixes",
         instance("bindcarConfig:\n  envVars: [{name: RUST_LOG, value: info}]"),
         instance(f"bindcarConfig:\n  envVars:\n    - name: BIND_TLS_RELOAD_INTERVAL  {MARK}\n      value: '0'"),
         "spec.bindcarConfig.envVars[0].name", "BIND_TLS_RELOAD_INTERVAL is in an operator-managed family"),
]


def _validate(text: str) -> list[Problem]:
    """What `bindy-agent validate` reports for a one-file repository holding `text`."""
    manifest = parse.load_text(text, "crs.yaml")
    found = list(manifest.problems)
    if manifest.ok:
        found += desired.build(manifest).problems
    return [p for p in found if p.severity is Severity.ERROR]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_document_bindy_accepts_validates(case: Case) -> None:
    assert [str(p) for p in _validate(case.accept)] == []


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_document_bindy_rejects_is_refused_at_its_line(case: Case) -> None:
    found = _validate(case.reject)
    assert [(p.origin.line if p.origin else None, p.path) for p in found] == [
        (_marked_line(case.reject), case.path)], [str(p) for p in found]
    assert case.message in found[0].message, found[0].message


@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_admission_table_itself_flags_each_rejection(case: Case) -> None:
    """Also for rules the schema reaches first: the table holds every rule on its own."""
    docs = [d for d in yaml.safe_load_all(case.reject) if d]
    flagged = {f"{v.rule.policy}/{v.rule.name}" for d in docs for v in admission.violations(d["kind"], d)}
    assert flagged == {case.rule}


def _agrees(case: Case) -> bool:
    refused = [(p.origin.line if p.origin else None, p.path) for p in _validate(case.reject)]
    return refused == [(_marked_line(case.reject), case.path)] and not _validate(case.accept)


def test_every_bindy_rule_is_enforced() -> None:
    table = {f"{r.policy}/{r.name}" for r in admission.RULES}
    assert {c.rule for c in CASES} == table, "every rule in the table has its accept/reject fixtures"
    enforced = table - {c.rule for c in CASES if not _agrees(c)}
    assert f"{len(enforced)} of {len(table)} Bindy rules enforced" == "25 of 25 Bindy rules enforced"


def _fields_id(i: int) -> str:
    fields = admission._FIELDS[i]
    return fields.__name__ if callable(fields) else fields[0]


@pytest.mark.parametrize("fields", sorted(admission.FINE), ids=_fields_id)
def test_a_value_taken_as_fine_passes_every_rule_of_its_fields(fields: int) -> None:
    """The shortcut for common names and targets never hides a violation: 20,000 random strings built
    from the characters the rules care about (dots, dashes, digits, unsafe characters), plus edge
    cases; each one the shortcut waves through is checked against every rule reading those fields."""
    import random

    rng = random.Random(fields)
    alphabet = "a0.-_*9Z; \n\"{\\" + "1.2.3.4"
    values = ["a" * n for n in (1, 63, 251, 252, 253, 254, 255)] + [
        "1.2.3.4", "1.2.3.4.", "256.1.1.1", "a..b", ".a", "-a", "a.", "a.b.", "_srv._tcp.", "*.", "*"]
    values += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(20_000)]
    values += [v + "." for v in values]
    fine = admission.FINE[fields]
    rules = [r for r in admission.RULES if admission._FIELDS.index(r.fields) == fields]
    waved = [v for v in values if fine.fullmatch(v)]
    assert len(waved) > 100  # the shortcut is taken, and what it takes is checked
    for value in waved:
        for rule in rules:
            assert not list(rule.check([(("spec", "x"), value)])), (rule.name, value)
