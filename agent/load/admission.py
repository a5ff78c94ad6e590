"""Bindy's admission rules (its ValidatingAdmissionPolicies) on one CR, checked after the schema (pure).

The rules read the validated object, by Bindy's field names (`spec.volumeMounts[*].mountPath`): a
value the rules did not see cannot reach the plan under another spelling."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

from agent.model import kinds
from agent.model.base import Model

Loc = tuple[str | int, ...]
Found = list[tuple[Loc, Any]]  # the values a rule reads, each with its location
RuleCheck = Callable[[Found], Iterator[tuple[Loc, str]]]  # yields (location, message) per violation


@dataclasses.dataclass(frozen=True)
class Rule:
    policy: str  # Bindy's ValidatingAdmissionPolicy (metadata.name)
    name: str  # which of its validations
    kinds: frozenset[str]
    fields: tuple[str, ...]  # Bindy's field paths; "[*]" is every list item
    check: RuleCheck


@dataclasses.dataclass(frozen=True)
class RuleViolation:
    rule: Rule
    loc: Loc
    message: str


def _each(test: Callable[[str], str | None]) -> RuleCheck:
    """A check of every string value on its own; `test` returns the message, or None when fine.
    Its answers are remembered: names, targets and images recur across a revision's documents."""
    remembered = functools.lru_cache(maxsize=16_384)(test)

    def check(found: Found) -> Iterator[tuple[Loc, str]]:
        for loc, value in found:
            message = remembered(value) if isinstance(value, str) else None
            if message:
                yield loc, message
    return check


# bindy-acl-validation: every allowQuery / allowTransfer entry
MAX_ACL_ENTRIES = MAX_ACL_ENTRY_BYTES = 256
_ACL_UNSAFE = re.compile(r'[;{}"\\\n\r]')
_ACL_TOKEN = re.compile(
    r"!?\s*((any|none|localhost|localnets)"
    r"|((25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)(/(3[0-2]|[12]?[0-9]))?"
    r"|[0-9a-fA-F:]+(/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))?"
    r'|key\s+"?[A-Za-z0-9._-]+"?)')


def _acl_list_size(found: Found) -> Iterator[tuple[Loc, str]]:
    if len(found) > MAX_ACL_ENTRIES:
        yield found[MAX_ACL_ENTRIES][0], (
            f"{len(found)} allowQuery/allowTransfer entries in this object; Bindy accepts at most "
            f"{MAX_ACL_ENTRIES}: merge addresses into wider prefixes")


def _acl_entry_length(entry: str) -> str | None:
    if not entry:
        return "an empty ACL entry: remove it"
    size = len(entry.encode())
    if size > MAX_ACL_ENTRY_BYTES:
        return (f"{entry[:40]!r}... is {size} bytes; an ACL entry must be 1 to {MAX_ACL_ENTRY_BYTES} bytes: "
                "shorten it")
    return None


def _acl_injection(entry: str) -> str | None:
    if _ACL_UNSAFE.search(entry):
        return (f"{entry!r} contains ';', '{{', '}}', '\"', '\\' or a line break, which would break out "
                "of named.conf's ACL block: write one address-match element per entry")
    return None


def _acl_token(entry: str) -> str | None:
    if not _ACL_TOKEN.fullmatch(entry):
        return (f"{entry!r} is not an ACL entry Bindy accepts: use any, none, localhost, localnets, an "
                "IPv4 or IPv6 address (optionally with /prefix) or 'key <name>', each optionally "
                "prefixed with '!'")
    return None


# bindy-zone-name-validation: zone names, and the names of records
MAX_NAME = 253
_NAME_UNSAFE = re.compile(r'[;{}"\\ \n\r\t]')
_IPV4 = re.compile(r"((25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.?")


def _name_length(name: str) -> str | None:
    if len(name) > MAX_NAME:
        return (f"{name[:40]!r}... is {len(name)} characters; Bindy allows at most {MAX_NAME}, a final dot "
                "included: shorten it")
    return None


def _name_chars(name: str) -> str | None:
    if _NAME_UNSAFE.search(name):
        return (f"{name!r} contains ';', '{{', '}}', '\"', '\\', whitespace or a control character, "
                "which would break the zone declaration or a DNS UPDATE: remove it")
    return None


def _name_dots(name: str) -> str | None:
    if name.startswith((".", "-")) or ".." in name:
        return (f"{name!r} starts with '.' or '-' or contains '..': leave no empty label and start the "
                "name with a letter, digit or '_'")
    return None


def _name_not_ipv4(name: str) -> str | None:
    if _IPV4.fullmatch(name):
        octets = name.rstrip(".").split(".")
        reverse = ".".join(reversed(octets[:3])) + ".in-addr.arpa"
        return (f"{name!r} is an IPv4 address, not a DNS name: name a reverse zone like {reverse!r}; "
                "an address belongs in an ARecord")
    return None


# bindy-rndc-algorithm-strict
FORBIDDEN_ALGORITHMS = ("hmac-md5", "hmac-sha1")


def _rndc_algorithm(algorithm: str) -> str | None:
    if algorithm in FORBIDDEN_ALGORITHMS:
        return (f"{algorithm} is refused by Bindy (hmac-md5 and hmac-sha1 are deprecated, RFC 8945 §10): "
                "use hmac-sha256 or stronger")
    return None


# bindy-pod-shape-validation: user volumes and mounts in the BIND9 pod
PREFIX = "bindy-"  # Secrets, ConfigMaps and claims users may mount
MOUNT_PREFIXES = ("/data/", "/var/log/bind/")
_NAMED_SOURCES = {"configMap": ("name", "ConfigMap"), "secret": ("secretName", "Secret"),
                  "persistentVolumeClaim": ("claimName", "claim")}
_SOURCES_HINT = "use emptyDir, or a configMap, secret or persistentVolumeClaim whose name starts with 'bindy-'"


def _volume(loc: Loc, volume: dict[str, Any]) -> tuple[Loc, str] | None:
    name = volume.get("name")
    sources = [k for k in volume if k != "name"]
    forbidden = [k for k in sources if k != "emptyDir" and k not in _NAMED_SOURCES]
    if forbidden:
        return loc + (forbidden[0],), f"volume {name!r} uses {forbidden[0]}, which Bindy forbids: {_SOURCES_HINT}"
    if not sources:
        return loc, f"volume {name!r} names no source Bindy allows: {_SOURCES_HINT}"
    for key, (field, what) in _NAMED_SOURCES.items():
        source = volume.get(key, {})
        ref = source.get(field) if isinstance(source, dict) else None
        if key not in volume or (isinstance(ref, str) and ref.startswith(PREFIX)):
            continue
        if not isinstance(ref, str):
            return loc + (key,), f"{key} names no {field}: Bindy mounts only {what}s named bindy-*"
        return loc + (key, field), (f"{what} {ref!r} does not start with 'bindy-': Bindy mounts only "
                                    f"Secrets, ConfigMaps and claims named bindy-* (e.g. 'bindy-{ref}')")
    return None


def _volume_sources(found: Found) -> Iterator[tuple[Loc, str]]:
    for loc, volume in found:
        problem = _volume(loc, volume) if isinstance(volume, dict) else None
        if problem:
            yield problem


def _mount_prefix(path: str) -> str | None:
    if not path.startswith(MOUNT_PREFIXES):
        return (f"{path!r} is outside the paths Bindy lets users mount: mount under /data/ or "
                "/var/log/bind/ (the rest of the pod belongs to the operator)")
    return None


def _traversal(path: str) -> str | None:
    if ".." in path:
        return f"{path!r} contains '..': Bindy refuses path traversal; write the path without '..'"
    return None


def _keys_secret(name: str) -> str | None:
    if not name.startswith(PREFIX):
        return (f"DNSSEC key Secret {name!r} does not start with 'bindy-': Bindy mounts only Secrets "
                f"named bindy-* into the BIND9 pod (e.g. 'bindy-{name}')")
    return None


# bindy-dnssec-policy-validation (Bindy's CRD schema holds the same patterns)
_POLICY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}")
_SIGNING_TOKEN = re.compile(r"[A-Za-z0-9]{1,32}")


def _policy_name(name: str) -> str | None:
    if not _POLICY_NAME.fullmatch(name):
        return (f"{name!r} is not a DNSSEC policy name Bindy accepts: start with a letter or digit, then "
                "letters, digits, '_' or '-', at most 63 characters")
    return None


def _signing_token(value: str) -> str | None:
    if not _SIGNING_TOKEN.fullmatch(value):
        return (f"{value!r} must be 1 to 32 letters or digits (an algorithm such as ECDSAP256SHA256 or a "
                "duration such as 90d)")
    return None


# bindy-record-value-validation: names a record points at
_TARGET_CHARS = re.compile(r"[A-Za-z0-9._-]+")


def _target_absolute(target: str) -> str | None:
    if not target.endswith("."):
        return (f"{target!r} must be fully qualified with a trailing dot (write '{target}.'); without it "
                "a DNS server appends the zone name")
    return None


def _target_charset(target: str) -> str | None:
    if not _TARGET_CHARS.fullmatch(target):
        return (f"{target!r} may contain only letters, digits, '.', '-' and '_' (no whitespace, control "
                "characters, ';', '{', '}', '\"', '\\' or '$')")
    return None


def _target_length(target: str) -> str | None:
    if len(target) > MAX_NAME:
        return (f"{target[:40]!r}... is {len(target)} characters; Bindy allows at most {MAX_NAME}, a final dot "
                "included: shorten it")
    return None


def _target_dots(target: str) -> str | None:
    if target.startswith(".") or ".." in target:
        return f"{target!r} starts with '.' or contains '..': remove the empty label"
    return None


# bindy-image-provenance-validation: image overrides
BINDCAR_REGISTRY = "ghcr.io/firestoned/"
BIND9_SOURCES = ("internetsystemsconsortium/bind9", "docker.io/internetsystemsconsortium/bind9", BINDCAR_REGISTRY)


def _bindcar_registry(image: str) -> str | None:
    if image and not image.startswith(BINDCAR_REGISTRY):
        return (f"{image!r} is not from {BINDCAR_REGISTRY}: Bindy trusts only firestoned's bindcar images "
                "(e.g. ghcr.io/firestoned/bindcar:v0.7.3)")
    return None


def _bind9_registry(image: str) -> str | None:
    if image and not image.startswith(BIND9_SOURCES):
        return (f"{image!r} is not internetsystemsconsortium/bind9 (Docker Hub) or a {BINDCAR_REGISTRY} "
                "mirror, the only BIND9 images Bindy trusts")
    return None


def _immutable(image: str) -> str | None:
    tagged = ":" in image[image.rfind("/") + 1:] and not image.endswith(":latest")
    if image and not ("@sha256:" in image or tagged):
        return (f"{image!r} is mutable: pin a digest (@sha256:...) or a named tag other than :latest "
                "(e.g. internetsystemsconsortium/bind9:9.18)")
    return None


BIND9_REPOSITORY = BIND9_SOURCES[0]  # the image a version without spec.image.image makes (desired/hierarchy.py)


def _version_immutable(version: str) -> str | None:
    """`spec.version` is the tag of the BIND9 image when spec.image.image does not name one."""
    image = f"{BIND9_REPOSITORY}:{version}"
    if not version.strip():
        return (f"an empty version makes the BIND9 image {image!r}, which names no tag: write a version "
                "(e.g. 9.18), or leave the field out")
    if _immutable(image):
        return (f"version {version!r} makes the BIND9 image {image!r}, which is mutable: write a named version "
                "other than latest (e.g. 9.18), or pin a digest (@sha256:...) in spec.image.image")
    return None


# bindy-bindcar-env-validation: sidecar variables the operator sets
RESERVED_ENV = frozenset({
    "BIND_API_TOKEN", "DISABLE_AUTH", "BIND_ALLOW_ANY_SERVICEACCOUNT", "BIND_ALLOWED_SERVICE_ACCOUNTS",
    "BIND_ALLOWED_NAMESPACES", "BIND_TOKEN_AUDIENCES", "BIND_ZONE_DIR", "RNDC_SECRET", "RNDC_ALGORITHM",
    "RNDC_KEY_NAME"})
RESERVED_ENV_PREFIXES = ("BIND_TLS_", "KUBE_")


def _env_name(name: str) -> str | None:
    if name in RESERVED_ENV:
        return (f"{name} is set by the operator; Bindy refuses it in bindcarConfig.envVars (the last "
                "duplicate wins and could disable the sidecar's authentication): remove it")
    return None


def _env_prefix(name: str) -> str | None:
    if name.startswith(RESERVED_ENV_PREFIXES):
        return (f"{name} is in an operator-managed family (BIND_TLS_*, KUBE_*); Bindy refuses it in "
                "bindcarConfig.envVars: remove it")
    return None


INFRA = frozenset({"ClusterBind9Provider", "Bind9Cluster", "Bind9Instance"})
NAMED = frozenset({"DNSZone", *(k.name for k in kinds.RECORD_KINDS)})
TARGETS = frozenset({"CNAMERecord", "MXRecord", "NSRecord", "SRVRecord"})
ACLS = ("spec.global.allowQuery[*]", "spec.global.allowTransfer[*]", "spec.primary.allowTransfer[*]",
        "spec.secondary.allowTransfer[*]", "spec.config.allowQuery[*]", "spec.config.allowTransfer[*]")
NAMES = ("spec.zoneName", "spec.zoneRef.zoneName", "spec.recordName", "spec.name",
         "spec.zone")  # spec.zone: the agent's record -> zone shorthand, Bindy's zoneRef.zoneName
RNDC = ("spec.rndcSecretRef.algorithm", "spec.rndcKey.algorithm", "spec.rndcKey.secretRef.algorithm",
        "spec.config.rndcSecretRef.algorithm", "spec.global.rndcSecretRef.algorithm",
        "spec.rndcSecretRefs[*].algorithm",
        *(f"spec.{role}.{key}.algorithm" for role in ("primary", "secondary")
          for key in ("rndcSecretRef", "rndcKey", "rndcKey.secretRef")))
MOUNTS = ("spec.volumeMounts[*].mountPath",)
SIGNING = ("spec.global.dnssec.signing", "spec.config.dnssec.signing")
BIND9_IMAGES = ("spec.image.image",)
BINDCAR = ("spec.bindcarConfig", "spec.config.bindcarConfig", "spec.global.bindcarConfig")
TARGET_FIELDS = ("spec.target", "spec.mailServer", "spec.nameserver")

# One entry per CEL validation of the eight policies in Bindy's deploy/admission-policies/ that apply
# to the CRs a repository holds, with Bindy's policy name and the fields Bindy reads. Where Bindy's
# CEL reads `spec.common.*` (not a field of Bindy's CRDs: the common spec is flattened into `spec`)
# the rule reads `spec.*`; where the CRD lets users set the same value in a sibling place (a
# cluster's spec.global.bindcarConfig, an instance's spec.config.bindcarConfig, every RNDC key
# algorithm) the rule reads that too, since the value reaches the same pod. mount-path-traversal
# and dnssec-keys-secret-prefix come from Bindy's tests and README (its newer pod-shape policy).
# The API server runs these after the CRD schema; so does the loader.
RULES: tuple[Rule, ...] = (
    Rule("bindy-acl-validation", "acl-list-size", INFRA, ACLS, _acl_list_size),
    Rule("bindy-acl-validation", "acl-entry-length", INFRA, ACLS, _each(_acl_entry_length)),
    Rule("bindy-acl-validation", "acl-injection-chars", INFRA, ACLS, _each(_acl_injection)),
    Rule("bindy-acl-validation", "acl-token-grammar", INFRA, ACLS, _each(_acl_token)),
    Rule("bindy-zone-name-validation", "dns-name-length", NAMED, NAMES, _each(_name_length)),
    Rule("bindy-zone-name-validation", "dns-name-chars", NAMED, NAMES, _each(_name_chars)),
    Rule("bindy-zone-name-validation", "dns-name-dots", NAMED, NAMES, _each(_name_dots)),
    Rule("bindy-zone-name-validation", "dns-name-not-ipv4", NAMED, NAMES, _each(_name_not_ipv4)),
    Rule("bindy-rndc-algorithm-strict", "rndc-algorithm", INFRA | {"DNSZone"}, RNDC, _each(_rndc_algorithm)),
    Rule("bindy-pod-shape-validation", "volume-sources", INFRA, ("spec.volumes[*]",), _volume_sources),
    Rule("bindy-pod-shape-validation", "mount-path-prefix", INFRA, MOUNTS, _each(_mount_prefix)),
    Rule("bindy-pod-shape-validation", "mount-path-traversal", INFRA, MOUNTS, _each(_traversal)),
    Rule("bindy-pod-shape-validation", "subpath-traversal", INFRA,
         ("spec.volumeMounts[*].subPath", "spec.volumeMounts[*].subPathExpr"), _each(_traversal)),
    Rule("bindy-pod-shape-validation", "dnssec-keys-secret-prefix", INFRA,
         tuple(f"{s}.keysFrom.secretRef.name" for s in SIGNING), _each(_keys_secret)),
    Rule("bindy-dnssec-policy-validation", "dnssec-policy-name", INFRA | {"DNSZone"},
         ("spec.dnssecPolicy", *(f"{s}.policy" for s in SIGNING)), _each(_policy_name)),
    Rule("bindy-dnssec-policy-validation", "dnssec-signing-params", INFRA,
         tuple(f"{s}.{p}" for s in SIGNING for p in ("algorithm", "kskLifetime", "zskLifetime")),
         _each(_signing_token)),
    Rule("bindy-record-value-validation", "target-absolute", TARGETS, TARGET_FIELDS, _each(_target_absolute)),
    Rule("bindy-record-value-validation", "target-charset", TARGETS, TARGET_FIELDS, _each(_target_charset)),
    Rule("bindy-record-value-validation", "target-length", TARGETS, TARGET_FIELDS, _each(_target_length)),
    Rule("bindy-record-value-validation", "target-dots", TARGETS, TARGET_FIELDS, _each(_target_dots)),
    Rule("bindy-image-provenance-validation", "bindcar-image-registry", INFRA,
         tuple(f"{b}.image" for b in BINDCAR), _each(_bindcar_registry)),
    Rule("bindy-image-provenance-validation", "bind9-image-registry", INFRA, BIND9_IMAGES, _each(_bind9_registry)),
    Rule("bindy-image-provenance-validation", "image-immutable", INFRA,
         BIND9_IMAGES + tuple(f"{b}.image" for b in BINDCAR), _each(_immutable)),
    # the same promise for the image a version makes (`version: latest` is bind9:latest)
    Rule("bindy-image-provenance-validation", "image-immutable", INFRA, ("spec.version",),
         _each(_version_immutable)),
    Rule("bindy-bindcar-env-validation", "bindcar-env-reserved-names", INFRA,
         tuple(f"{b}.envVars[*].name" for b in BINDCAR), _each(_env_name)),
    Rule("bindy-bindcar-env-validation", "bindcar-env-reserved-prefixes", INFRA,
         tuple(f"{b}.envVars[*].name" for b in BINDCAR), _each(_env_prefix)),
)


def _steps(path: str) -> tuple[str, ...]:
    return tuple(path.replace("[*]", ".[*]").split("."))


_ABSENT: Any = object()
_ATTRIBUTES: dict[type, dict[str, str]] = {}  # per model class: Bindy's field name -> attribute name


def _child(node: Any, step: str) -> Any:
    """A field of a validated object (by Bindy's name; unset is absent) or a key of a mapping."""
    if type(node) is dict:
        return node.get(step, _ABSENT)
    names = _ATTRIBUTES.get(type(node))
    if names is None:
        if not isinstance(node, Model):
            return _ABSENT
        names = _ATTRIBUTES[type(node)] = {f.alias or n: n for n, f in type(node).model_fields.items()}
    value = node.__dict__.get(names.get(step, ""))  # where pydantic keeps a model's field values
    return _ABSENT if value is None else value


def _select(doc: Any, steps: tuple[str, ...]) -> Found:
    """The values at a path ("spec.volumes[*].name": every item of the list) with their locations,
    in a validated object (or a plain mapping, as a document's data)."""
    if "[*]" not in steps:  # the common case: one value or none
        node = doc
        for step in steps:
            node = _child(node, step)
            if node is _ABSENT:
                return []
        return [(steps, node)]
    found: Found = [((), doc)]
    for step in steps:
        deeper: Found = []
        for loc, node in found:
            if step == "[*]":
                if isinstance(node, list):
                    deeper += [((*loc, i), item) for i, item in enumerate(node)]
            elif (child := _child(node, step)) is not _ABSENT:
                deeper.append(((*loc, step), child))
        found = deeper
    return found


# Per kind, its rules with their paths split once (this runs on every document of a revision), and
# the index of their field list: the rules of one policy read the same fields, selected once.
_FIELDS = list(dict.fromkeys(r.fields for r in RULES))
_BY_KIND = {kind: tuple((r, tuple(_steps(f) for f in r.fields), _FIELDS.index(r.fields))
                        for r in RULES if kind in r.kinds) for kind in kinds.KINDS}

# Values that every rule reading those fields accepts, told apart by one match instead of a call per
# rule (every record has a name, and half of them a target): what matches here, each rule passes -
# a test asserts it. Anything else goes through the rules one by one, which word the message.
_NAME_FINE = re.compile(r"(?![.-])(?!(?:\d+\.){3}\d+\.?$)(?!.*\.\.)[A-Za-z0-9_*][A-Za-z0-9_*.-]{0,252}")
_TARGET_FINE = re.compile(r"(?!.*\.\.)[A-Za-z0-9_-][A-Za-z0-9._-]{0,251}\.")
FINE: dict[int, re.Pattern[str]] = {_FIELDS.index(NAMES): _NAME_FINE, _FIELDS.index(TARGET_FIELDS): _TARGET_FINE}


def violations(kind: str, doc: Model | dict[str, Any]) -> list[RuleViolation]:
    """Every Bindy admission rule `doc` breaks; at most one per field (the first in RULES). The loader
    hands it the validated object, so that a rule reads exactly the fields the plan is made of."""
    out: list[RuleViolation] = []
    seen: list[Loc] = []
    selected: dict[int, Found] = {}
    for rule, paths, fields in _BY_KIND.get(kind, ()):
        found = selected.get(fields)
        if found is None:
            found = [f for steps in paths for f in _select(doc, steps)]
            fine = FINE.get(fields)
            if fine is not None:
                found = [f for f in found if not (isinstance(f[1], str) and fine.fullmatch(f[1]))]
            selected[fields] = found
        for loc, message in rule.check(found) if found else ():
            if not any(loc[:len(s)] == s or s[:len(loc)] == loc for s in seen):
                seen.append(loc)
                out.append(RuleViolation(rule, loc, f"{message} (Bindy admission policy {rule.policy})"))
    return out
