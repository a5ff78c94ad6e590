"""Bindy's admission rules (its ValidatingAdmissionPolicies) on one CR, checked after the schema
(pure): the table of rules - policy, kinds, the fields Bindy reads - and `violations`. The rules
read the validated object by Bindy's field names (load/fieldvalues.py), so a value they did not see
cannot reach the plan under another spelling; the checks themselves, one function per CEL
validation, are load/rulechecks.py."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Container, Iterator
from typing import Any

from agent.load import fieldvalues, rulechecks
from agent.load.fieldvalues import Found, Loc
from agent.model import kinds, recordtypes
from agent.model.base import Model

RuleCheck = Callable[[Found], Iterator[tuple[Loc, str]]]  # yields (location, message) per violation


# Bindy's field paths, or those of a kind
Fields = tuple[str, ...] | Callable[[str], tuple[str, ...]]


@dataclasses.dataclass(frozen=True)
class Rule:
    policy: str  # Bindy's ValidatingAdmissionPolicy (metadata.name)
    name: str  # which of its validations
    kinds: Container[str]
    # Bindy's field paths ("[*]" is every list item), or the function giving a kind's
    fields: Fields
    check: RuleCheck

    def fields_of(self, kind: str) -> tuple[str, ...]:
        return self.fields(kind) if callable(self.fields) else self.fields


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


INFRA = frozenset({"ClusterBind9Provider", "Bind9Cluster", "Bind9Instance"})


class _Kinds(Container[str]):
    """Some kinds, and every record kind (model/recordtypes/: a type registered later too)."""

    def __init__(self, *others: str) -> None:
        self.others = frozenset(others)

    def __contains__(self, kind: object) -> bool:
        found = kinds.KINDS.get(kind) if isinstance(kind, str) else None
        return kind in self.others or (found is not None and found.record_type is not None)


RECORDS = _Kinds()
NAMED = _Kinds("DNSZone")
ACLS = ("spec.global.allowQuery[*]", "spec.global.allowTransfer[*]",
        "spec.primary.allowTransfer[*]", "spec.secondary.allowTransfer[*]",
        "spec.config.allowQuery[*]", "spec.config.allowTransfer[*]")
NAMES = ("spec.zoneName", "spec.zoneRef.zoneName", "spec.recordName", "spec.name",
         "spec.zone")  # spec.zone: the agent's record -> zone shorthand, Bindy's zoneRef.zoneName
RNDC = ("spec.rndcSecretRef.algorithm", "spec.rndcKey.algorithm",
        "spec.rndcKey.secretRef.algorithm", "spec.config.rndcSecretRef.algorithm",
        "spec.global.rndcSecretRef.algorithm", "spec.rndcSecretRefs[*].algorithm",
        *(f"spec.{role}.{key}.algorithm" for role in ("primary", "secondary")
          for key in ("rndcSecretRef", "rndcKey", "rndcKey.secretRef")))
RNDC_REFS = tuple(path.removesuffix(".algorithm") for path in RNDC
                  # every RNDC Secret reference
                  if path.endswith(("ecretRef.algorithm", "ecretRefs[*].algorithm")))
MOUNTS = ("spec.volumeMounts[*].mountPath",)
SIGNING = ("spec.global.dnssec.signing", "spec.config.dnssec.signing")
BIND9_IMAGES = ("spec.image.image",)
BINDCAR = ("spec.bindcarConfig", "spec.config.bindcarConfig", "spec.global.bindcarConfig")


def target_fields(kind: str) -> tuple[str, ...]:
    """The host fields of a record kind (CNAME, MX, NS, SRV: model/recordtypes/), read by Bindy's
    target rules; its type is imported by then, with the model of the document checked."""
    return recordtypes.of_kind(kind).targets

# One entry per CEL validation of the eight policies in Bindy's deploy/admission-policies/ that
# apply to the CRs a repository holds, with Bindy's policy name and the fields Bindy reads. Where
# Bindy's CEL reads `spec.common.*` (not a field of Bindy's CRDs: the common spec is flattened into
# `spec`) the rule reads `spec.*`; where the CRD lets users set the same value in a sibling place (a
# cluster's spec.global.bindcarConfig, an instance's spec.config.bindcarConfig, every RNDC key
# algorithm) the rule reads that too, since the value reaches the same pod. mount-path-traversal
# and dnssec-keys-secret-prefix come from Bindy's tests and README (its newer pod-shape policy).
# The API server runs these after the CRD schema; so does the loader.
RULES: tuple[Rule, ...] = (
    Rule("bindy-acl-validation", "acl-list-size", INFRA, ACLS, rulechecks.acl_list_size),
    Rule("bindy-acl-validation", "acl-entry-length", INFRA, ACLS,
         _each(rulechecks.acl_entry_length)),
    Rule("bindy-acl-validation", "acl-injection-chars", INFRA, ACLS,
         _each(rulechecks.acl_injection)),
    Rule("bindy-acl-validation", "acl-token-grammar", INFRA, ACLS, _each(rulechecks.acl_token)),
    Rule("bindy-zone-name-validation", "dns-name-length", NAMED, NAMES,
         _each(rulechecks.name_length)),
    Rule("bindy-zone-name-validation", "dns-name-chars", NAMED, NAMES,
         _each(rulechecks.name_chars)),
    Rule("bindy-zone-name-validation", "dns-name-dots", NAMED, NAMES, _each(rulechecks.name_dots)),
    Rule("bindy-zone-name-validation", "dns-name-not-ipv4", NAMED, NAMES,
         _each(rulechecks.name_not_ipv4)),
    Rule("bindy-rndc-algorithm-strict", "rndc-algorithm", INFRA | {"DNSZone"}, RNDC,
         _each(rulechecks.rndc_algorithm)),
    Rule("bindy-pod-shape-validation", "volume-sources", INFRA, ("spec.volumes[*]",),
         rulechecks.volume_sources),
    Rule("bindy-pod-shape-validation", "mount-path-prefix", INFRA, MOUNTS,
         _each(rulechecks.mount_prefix)),
    Rule("bindy-pod-shape-validation", "mount-path-traversal", INFRA, MOUNTS,
         _each(rulechecks.traversal)),
    Rule("bindy-pod-shape-validation", "subpath-traversal", INFRA,
         ("spec.volumeMounts[*].subPath", "spec.volumeMounts[*].subPathExpr"),
         _each(rulechecks.traversal)),
    Rule("bindy-pod-shape-validation", "dnssec-keys-secret-prefix", INFRA,
         tuple(f"{s}.keysFrom.secretRef.name" for s in SIGNING), _each(rulechecks.keys_secret)),
    Rule("bindy-dnssec-policy-validation", "dnssec-policy-name", INFRA | {"DNSZone"},
         ("spec.dnssecPolicy", *(f"{s}.policy" for s in SIGNING)), _each(rulechecks.policy_name)),
    Rule("bindy-dnssec-policy-validation", "dnssec-signing-params", INFRA,
         tuple(f"{s}.{p}" for s in SIGNING for p in ("algorithm", "kskLifetime", "zskLifetime")),
         _each(rulechecks.signing_token)),
    Rule("bindy-record-value-validation", "target-absolute", RECORDS, target_fields,
         _each(rulechecks.target_absolute)),
    Rule("bindy-record-value-validation", "target-charset", RECORDS, target_fields,
         _each(rulechecks.target_charset)),
    Rule("bindy-record-value-validation", "target-length", RECORDS, target_fields,
         _each(rulechecks.target_length)),
    Rule("bindy-record-value-validation", "target-dots", RECORDS, target_fields,
         _each(rulechecks.target_dots)),
    Rule("bindy-image-provenance-validation", "bindcar-image-registry", INFRA,
         tuple(f"{b}.image" for b in BINDCAR), _each(rulechecks.bindcar_registry)),
    Rule("bindy-image-provenance-validation", "bind9-image-registry", INFRA, BIND9_IMAGES,
         _each(rulechecks.bind9_registry)),
    Rule("bindy-image-provenance-validation", "image-immutable", INFRA,
         BIND9_IMAGES + tuple(f"{b}.image" for b in BINDCAR), _each(rulechecks.immutable)),
    # the same promise for the image a version makes (`version: latest` is bind9:latest)
    Rule("bindy-image-provenance-validation", "image-immutable", INFRA, ("spec.version",),
         _each(rulechecks.version_immutable)),
    Rule("bindy-bindcar-env-validation", "bindcar-env-reserved-names", INFRA,
         tuple(f"{b}.envVars[*].name" for b in BINDCAR), _each(rulechecks.env_name)),
    Rule("bindy-bindcar-env-validation", "bindcar-env-reserved-prefixes", INFRA,
         tuple(f"{b}.envVars[*].name" for b in BINDCAR), _each(rulechecks.env_prefix)),
)

# The agent's own rules, on values Bindy accepts that the agent would misuse (checked with Bindy's).
AGENT = "bindy-agent"
AGENT_RULES: tuple[Rule, ...] = (
    Rule(AGENT, "rndc-key-name-key", INFRA, RNDC_REFS, rulechecks.key_name_key),
)


def _source(rule: Rule) -> str:
    if rule.policy == AGENT:
        return f"{AGENT} rule {rule.name}"
    return f"Bindy admission policy {rule.policy}"


# The field lists the rules read, each selected once per document (the rules of one policy read the
# same fields).
_FIELDS = list(dict.fromkeys(r.fields for r in RULES + AGENT_RULES))

# Values that every rule reading those fields accepts, told apart by one match instead of a call per
# rule (every record has a name, and half of them a target): what matches here, each rule passes -
# a test asserts it. Anything else goes through the rules one by one, which word the message.
_NAME_FINE = re.compile(r"(?![.-])(?!(?:\d+\.){3}\d+\.?$)(?!.*\.\.)"
                        r"[A-Za-z0-9_*][A-Za-z0-9_*.-]{0,252}")
_TARGET_FINE = re.compile(r"(?!.*\.\.)[A-Za-z0-9_-][A-Za-z0-9._-]{0,251}\.")
FINE: dict[int, re.Pattern[str]] = {_FIELDS.index(NAMES): _NAME_FINE,
                                    _FIELDS.index(target_fields): _TARGET_FINE}


# split, and the attribute names it reads (if known)
Path = tuple[tuple[str, ...], tuple[str, ...] | None]
# paths, their _FIELDS index, the rules reading them
Run = tuple[tuple[Path, ...], int, tuple[Rule, ...]]


def _runs(kind: str, model: type | None) -> tuple[Run, ...]:
    """`kind`'s rules in RULES order, consecutive ones reading the same fields as one run, with
    their paths split once (this runs on every document of a revision). Given the class of the
    validated object, only the paths an object of that class can hold (fieldvalues.reachable), with
    the attribute names they read where the classes on the way are known: a record's rules read two
    of their five name fields, two attributes each; a run left with no path is not there."""
    runs: list[tuple[tuple[Path, ...], int, list[Rule]]] = []
    for rule in RULES + AGENT_RULES:
        if kind not in rule.kinds:
            continue
        fields = _FIELDS.index(rule.fields)
        if runs and runs[-1][1] == fields:
            runs[-1][2].append(rule)
            continue
        paths = tuple((steps, None if model is None else fieldvalues.attributes(model, steps))
                      for steps in map(fieldvalues.steps, rule.fields_of(kind))
                      if model is None or fieldvalues.reachable(model, steps))
        runs.append((paths, fields, [rule]))
    return tuple((paths, fields, tuple(rules)) for paths, fields, rules in runs if paths)


_RUNS: dict[tuple[str, type], tuple[Run, ...]] = {}  # by kind and the class of what is checked


def violations(kind: str, doc: Model | dict[str, Any]) -> list[RuleViolation]:
    """Every Bindy admission rule (and rule of the agent's own) `doc` breaks; at most one per field
    (the first in RULES). The loader hands it the validated object, so that a rule reads exactly the
    fields the plan is made of."""
    runs = _RUNS.get((kind, type(doc)))
    if runs is None:
        runs = _RUNS[(kind, type(doc))] = _runs(kind, type(doc) if isinstance(doc, Model) else None)
    out: list[RuleViolation] = []
    seen: list[Loc] = []
    selected: dict[int, Found] = {}
    for paths, fields, rules in runs:
        found = selected.get(fields)
        if found is None:
            found = [f for steps, names in paths
                     for f in (fieldvalues.select(doc, steps) if names is None
                               else fieldvalues.pick(doc, names, steps))]
            fine = FINE.get(fields)
            if fine is not None:
                found = [f for f in found if not (isinstance(f[1], str) and fine.fullmatch(f[1]))]
            selected[fields] = found
        if not found:
            continue
        for rule in rules:
            for loc, message in rule.check(found):
                if not any(loc[:len(s)] == s or s[:len(loc)] == loc for s in seen):
                    seen.append(loc)
                    out.append(RuleViolation(rule, loc, f"{message} ({_source(rule)})"))
    return out
