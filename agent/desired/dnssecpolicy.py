"""DNSSEC signing in a revision (pure): each zone's `dnssecPolicy` must exist where the zone is
created.

A DNSZone's `dnssecPolicy` reaches its primaries' zone API as `dnssecPolicy` with `inlineSigning`
(as Bindy sends it; agent/desired/zonebody.py); named accepts it only if the policy is one of BIND's
built-in ones (`default`, `insecure`, `none`) or a `dnssec-policy` statement of that server's
named.conf, which an instance gets from the `dnssec.signing` in effect for it (its own when enabled,
else its cluster's or provider's `global`: agent/desired/namedconf.signing_of). A zone naming any
other policy would fail at `rndc addzone` on the server: here it is an error with its file and line.

A signing policy also bounds the zone's TTLs (`max-zone-ttl` 86400 in Bindy's policy and in BIND's
`default`): named refuses to load a zone whose default TTL is higher and cuts an UPDATE's TTL to it,
so a record asking for more would be sent again on every run. Both are errors here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from agent.desired import namedconf, placement
from agent.load.manifest import Manifest
from agent.model.key import ObjectKey
from agent.model.problems import Problem, Severity

if TYPE_CHECKING:
    from agent.model.infra import Bind9Config, DnssecSigning

INFRA_KINDS = ("ClusterBind9Provider", "Bind9Cluster", "Bind9Instance")
# max-zone-ttl of Bindy's dnssec-policy template and of BIND's built-in `default`
MAX_ZONE_TTL = 86400
UNBOUNDED = frozenset({"none", "insecure"})  # policies with no max-zone-ttl


def _defined(signing: DnssecSigning | None) -> str | None:
    name = namedconf.policy_name(signing) if signing is not None else None
    return None if name in namedconf.BUILTIN_POLICIES else name


def zone_policies(zones: Iterable[placement.Zone],
                  signing: Mapping[ObjectKey, DnssecSigning | None],
                  manifest: Manifest) -> list[Problem]:
    """An error for each zone whose `dnssecPolicy` is neither built in nor defined on every primary
    it is created on. `signing`: each instance's signing in effect (None: not enabled)."""
    out: list[Problem] = []
    wrong: dict[ObjectKey, str] = {}
    for zone in zones:
        policy = zone.spec.dnssec_policy
        if policy is None or policy in namedconf.BUILTIN_POLICIES:
            continue
        lacking = [p for p in zone.primaries if _defined(signing.get(p)) != policy]
        if not lacking:
            continue
        defined = sorted({name for p in zone.primaries if (name := _defined(signing.get(p)))})
        where = ", ".join(f"{p.namespace}/{p.name}"
                          for p in lacking[:5]) + (" ..." if len(lacking) > 5 else "")
        wrong[zone.key] = (
            f"DNSSEC policy {policy!r} is not defined on primary instance(s) {where}, and it is "
            f"not one of BIND's built-in policies "
            f"({', '.join(sorted(namedconf.BUILTIN_POLICIES))}): named would refuse to create the "
            f"zone there. "
            + (f"Policies defined there: {', '.join(defined)}. " if defined else "")
            + f"Define it with `dnssec.signing: {{enabled: true, policy: {policy}}}` in the "
            "cluster's spec.global (or the instance's spec.config), or name a built-in policy")
    if wrong:
        for obj in manifest.of_kind("DNSZone"):
            if obj.key in wrong:
                out.append(Problem(obj.origin_at("spec.dnssecPolicy"), str(obj.key),
                                   "spec.dnssecPolicy", wrong[obj.key]))
    return out + _ttls(zones, manifest)


def _ttls(zones: Iterable[placement.Zone], manifest: Manifest) -> list[Problem]:
    """The zones and records of signed zones whose TTL exceeds the policy's max-zone-ttl."""
    found: dict[ObjectKey, tuple[str, int, str]] = {}  # CR -> (field, ttl, policy)
    for zone in zones:
        policy = zone.spec.dnssec_policy
        if policy is None or policy in UNBOUNDED:
            continue
        if zone.spec.ttl is not None and zone.spec.ttl > MAX_ZONE_TTL:
            found[zone.key] = ("spec.ttl", zone.spec.ttl, policy)
        for record, key in zone.records.items():
            rrset = zone.rrsets.get(key)
            if rrset is not None and rrset.ttl > MAX_ZONE_TTL:
                found[record] = ("spec.ttl", rrset.ttl, policy)
    out: list[Problem] = []
    kinds = sorted({k.kind for k in found})
    for obj in manifest.of_kind(*kinds) if kinds else []:
        if obj.key in found:
            path, ttl, policy = found[obj.key]
            own = getattr(obj.model.spec, "ttl", None)  # type: ignore[attr-defined]
            if obj.key.kind != "DNSZone" and (own is None or own <= MAX_ZONE_TTL):
                continue  # it has the zone's TTL: the zone's problem
            ttl = own if own is not None else ttl
            out.append(Problem(obj.origin_at(path), str(obj.key), path, (
                f"TTL {ttl} exceeds {MAX_ZONE_TTL}, the max-zone-ttl of the zone's DNSSEC policy "
                f"{policy!r}: named "
                "refuses to load a signed zone whose TTL is higher and cuts a record's to it (the "
                f"agent would send it again on every run). Use a TTL of at most {MAX_ZONE_TTL}")))
    return out


def builtin_names(manifest: Manifest) -> list[Problem]:
    """A warning for each enabled `dnssec.signing` naming one of BIND's built-in policies (Bindy
    names it `default` when `policy` is unset): named.conf may not redefine those (Bindy's would not
    load), so the agent writes no `dnssec-policy` for it and its algorithm, lifetimes and NSEC3
    settings do nothing."""
    out: list[Problem] = []
    for obj in manifest.of_kind(*INFRA_KINDS):
        spec = obj.model.spec  # type: ignore[attr-defined]
        places: list[tuple[str, Bind9Config | None]] = [("spec.config",
                                                         getattr(spec, "config", None)),
                                                        ("spec.global",
                                                         getattr(spec, "global_", None))]
        for path, config in places:
            signing = config.dnssec.signing if config and config.dnssec else None
            if signing is None or not signing.enabled or _defined(signing) is not None:
                continue
            name = namedconf.policy_name(signing)
            unset = " (Bindy's name when `policy` is unset)" if signing.policy is None else ""
            field = f"{path}.dnssec.signing" + (".policy" if signing.policy is not None else "")
            out.append(Problem(
                obj.origin_at(field), str(obj.key), field,
                f"signing names the policy {name!r}{unset}, one of BIND's built-in policies, which "
                "named.conf may not redefine (Bindy's named.conf would not load): no dnssec-policy "
                f"is written, zones with dnssecPolicy: {name} get BIND's built-in one, and "
                "algorithm, kskLifetime, zskLifetime and nsec3 have no effect. Set `policy` to a "
                "name of your own to use them", Severity.WARNING))
    return out
