"""The seeds' older shorthand, rewritten to Bindy's canonical form before validation (pure).

Each rewrite yields a warning naming the canonical field, so users can modernise their files:

    ClusterBind9Provider/Bind9Cluster  primaryReplicas: 2    -> primary: {replicas: 2}
                                       secondaryReplicas: 3  -> secondary: {replicas: 3}
    ClusterBind9Provider               namespaces: [a]       -> namespace: a
    DNSZone                            soa: {primaryNameServer, adminEmail, ttl}
                                         -> soaRecord: {primaryNs, adminEmail, serial, ...} + ttl
    ARecord / AAAARecord               ipv4: x / ipv6: x
                                         -> ipv4Addresses: [x] / ipv6Addresses: [x]
                                       (a record type's `shorthand`: model/recordtypes/)

`role: Primary` is not among them: Bindy's CRD accepts only `primary` and `secondary`, so it is an
error naming the spelling to write.
"""

from __future__ import annotations

from typing import Any

from agent.model import recordtypes

# (path, message, is_error)
Note = tuple[str, str, bool]

SOA_DEFAULTS = {"serial": 1, "refresh": 3600, "retry": 600, "expire": 604800, "negativeTtl": 86400}


def _fqdn(value: Any) -> Any:
    if isinstance(value, str) and value and not value.endswith("."):
        return value + "."
    return value


def _replicas(spec: dict[str, Any], notes: list[Note]) -> None:
    for role in ("primary", "secondary"):
        old = f"{role}Replicas"
        if old not in spec:
            continue
        value = spec.pop(old)
        block = spec.get(role)
        if block is None:
            block = spec[role] = {}
        if not isinstance(block, dict):
            notes.append((f"spec.{old}", f"cannot move into spec.{role}: it is not a mapping",
                          True))
        elif "replicas" in block:
            notes.append((f"spec.{old}", f"both spec.{old} and spec.{role}.replicas are set; "
                          f"remove spec.{old}", True))
        else:
            block["replicas"] = value
            notes.append((f"spec.{old}", f"shorthand: use spec.{role}.replicas", False))


def _provider_namespaces(spec: dict[str, Any], notes: list[Note]) -> None:
    names = spec.get("namespaces")
    if not isinstance(names, list):
        return
    if "namespace" in spec:
        notes.append(("spec.namespaces", "both spec.namespace and spec.namespaces are set; "
                      "keep one", True))
    elif len(names) == 1:
        spec["namespace"] = spec.pop("namespaces")[0]
        notes.append(("spec.namespaces", "shorthand: use spec.namespace", False))
    else:
        notes.append(("spec.namespaces", "shorthand: Bindy's canonical field is spec.namespace "
                      "(one namespace); the agent creates one Bind9Cluster in each listed "
                      "namespace",
                      False))


def _role(spec: dict[str, Any], notes: list[Note]) -> None:
    role = spec.get("role")
    if isinstance(role, str) and role != role.lower() and role.lower() in ("primary", "secondary"):
        spec["role"] = role.lower()  # one message, not a second one from the schema's enum
        notes.append(("spec.role",
                      f"{role!r} is not a role Bindy accepts: write spec.role: {role.lower()} "
                      "(Bindy's CRD allows only 'primary' or 'secondary', in lowercase)", True))


def _soa(spec: dict[str, Any], notes: list[Note]) -> None:
    soa = spec.get("soa")
    if not isinstance(soa, dict):
        return
    if "soaRecord" in spec:
        notes.append(("spec.soa", "both spec.soa and spec.soaRecord are set; remove spec.soa",
                      True))
        return
    del spec["soa"]
    record: dict[str, Any] = {}
    for key, value in soa.items():
        if key == "primaryNameServer":
            record["primaryNs"] = _fqdn(value)
        elif key == "adminEmail":
            record["adminEmail"] = _fqdn(value.replace("@", ".") if isinstance(value, str)
                                         else value)
        elif key == "ttl":
            spec.setdefault("ttl", value)
        else:
            record[key] = value
    filled = [k for k in SOA_DEFAULTS if k not in record]
    for key in filled:
        record[key] = SOA_DEFAULTS[key]
    spec["soaRecord"] = record
    defaults = f"; defaults filled: {', '.join(filled)}" if filled else ""
    notes.append(("spec.soa",
                  "shorthand: use spec.soaRecord {primaryNs, adminEmail, serial, refresh, "
                  "retry, expire, negativeTtl} and spec.ttl" + defaults, False))


def _addresses(spec: dict[str, Any], notes: list[Note], old: str, new: str) -> None:
    if old not in spec:
        return
    if new in spec:
        notes.append((f"spec.{old}", f"both spec.{old} and spec.{new} are set; remove spec.{old}",
                      True))
        return
    value = spec.pop(old)
    spec[new] = value if isinstance(value, list) else [value]
    notes.append((f"spec.{old}", f"shorthand: use spec.{new}: [...]", False))


def normalise(kind: str, doc: dict[str, Any]) -> list[Note]:
    """Rewrites shorthand in `doc` in place; returns the notes to report."""
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return []
    notes: list[Note] = []
    if kind in ("ClusterBind9Provider", "Bind9Cluster"):
        _replicas(spec, notes)
    if kind == "ClusterBind9Provider":
        _provider_namespaces(spec, notes)
    elif kind == "Bind9Instance":
        _role(spec, notes)
    elif kind == "DNSZone":
        _soa(spec, notes)
    elif kind.endswith(recordtypes.SUFFIX):
        for old, new in recordtypes.of_kind(kind).shorthand:
            _addresses(spec, notes, old, new)
    if kind.endswith(recordtypes.SUFFIX) and "zone" in spec:
        notes.append(("spec.zone",
                      "shorthand: Bindy selects records with DNSZone spec.recordsFrom; "
                      "the agent places this record in the zone named here", False))
    return notes
