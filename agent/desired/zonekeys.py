"""One DNSSEC key set per signed zone, whatever the number of primaries and pod replacements (pure).

A zone with a `dnssecPolicy` is signed by every primary pod that serves it (inline signing, by
named's dnssec-policy). Left to itself each pod's named would make keys of its own in its own
emptyDir: every pod a different KSK, and a new one on every pod replacement, so the DS a user
publishes would validate on some servers only. Instead the zone's keys are made once, by the agent
(reconcile/zonekeys.py), and kept in a Secret of the zone's namespace, `<zone CR>-dnssec-keys`;
every Deployment of a primary instance the zone is placed on mounts it, and an init container copies
the key files into named's key directory before named starts, so every pod - and every replacement -
signs with the same keys and serves the same DNSKEY set.

Why every primary signs with shared keys rather than one signer feeding the others by transfer:
each primary keeps taking the agent's UPDATEs and serving on its own (no pod depends on another
being up), and the keys outlive any pod. What this cannot make consistent, `validate` says at the
DNSZone's line: key lifetimes that are not unlimited on a zone served by more than one primary pod
(each named would roll its own successor keys), a primary in another namespace than the zone (a pod
can mount only its own namespace's Secrets), and one policy name meaning different keys on two
primaries.

The DS a user publishes in the parent zone points at these keys for as long as it stays there, so
the Secret outlives everything but a deliberate deletion: the agent never deletes it
(plan/kubediff.py `prunable`). A zone with no primary for a while (its only instance left Git,
scaled to 0, moved) has no key set here - its policy and algorithm are those of primaries it does
not have - and its Secret is kept as it is; when primaries return, the same keys are mounted again.
Neither the zone leaving Git nor its `dnssecPolicy` removed deletes it: a zone restored signs with
the same keys. Where an instance's key directory already holds keys of the zone (its claim: a
rollover's successors, or keys named made before the agent kept the zone's keys), those win over the
Secret's (`COPY`).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent.desired import dnssecpolicy, namedconf, placement, storage, workloads
from agent.load.manifest import Manifest
from agent.model.key import ObjectKey
from agent.model.names import MANAGED_BY
from agent.model.problems import Problem, Severity

if TYPE_CHECKING:
    from agent.desired.hierarchy import Cluster, Instance
    from agent.model.infra import DnssecSigning

# "true" on a zone's key Secret (reconcile/zonekeys.py fills it)
LABEL = "bindy.firestoned.io/dnssec-keys"
VOLUME = "dnssec-keys"
MOUNT = "/etc/bind/dnssec-keys"
INIT = "dnssec-keys"
UNSIGNED = frozenset({"none", "insecure"})
ALGORITHMS = {"RSASHA256": 8, "RSASHA512": 10, "ECDSAP256SHA256": 13, "ECDSAP384SHA384": 14,
              "ED25519": 15, "ED448": 16}
UNLIMITED = frozenset({None, "unlimited"})
# per role: the base name (K<zone>+<alg>+<tag>), .key, .private, .state
FILES = ("file", "key", "private", "state")
# The init container: each zone's key files under their BIND names, into the key directory (an
# emptyDir kept across container restarts, or the instance's claim). A file already there is left as
# named last wrote it, and a zone whose key directory holds a key of its algorithm that is not one
# of the Secret's (named's own: a rollover's successor, or keys it made before the agent kept the
# zone's keys) gets nothing copied: the keys on the claim win. Each file is copied whole (a
# temporary name, then a rename), so a copy cut short is finished by the next start.
COPY = "\n".join((
    "set -eu",
    f"keys={namedconf.KEY_DIRECTORY}",
    f"for zone in {MOUNT}/*/; do",
    '  [ -d "$zone" ] || continue',
    '  ours=" "',
    '  for role in $(cat "$zone/roles"); do base=$(cat "$zone/$role-file"); '
    'ours="$ours$base "; done',
    '  own=""',
    '  for found in "$keys/${base%+*}"+*.key; do',
    '    [ -e "$found" ] || continue',
    '    found=${found##*/}',
    '    case "$ours" in *" ${found%.key} "*) ;; *) own="$own ${found%.key}";; esac',
    '  done',
    '  if [ -n "$own" ]; then echo "$zone: the key directory has keys of its own:$own; '
    'none copied"; continue; fi',
    '  for role in $(cat "$zone/roles"); do',
    '    to="$keys/$(cat "$zone/$role-file")"',
    '    for ext in private state key; do',
    '      [ -e "$to.$ext" ] || { cp "$zone/$role.$ext" "$keys/.dnssec-copy"; '
    'mv "$keys/.dnssec-copy" "$to.$ext"; }',
    '    done',
    '  done',
    'done',
    "",
))


@dataclasses.dataclass(frozen=True)
class KeySet:
    """What one signed zone's keys are: the Secret that holds them and the roles it holds."""

    zone: placement.Zone
    secret: str
    algorithm: int
    roles: tuple[str, ...]  # ("ksk", "zsk"), or ("csk",) for BIND's built-in `default` policy
    rolls: bool = False  # its policy sets key lifetimes: named rolls the keys itself


@dataclasses.dataclass
class Keys:
    problems: list[Problem]
    secrets: list[tuple[ObjectKey, dict[str, Any], ObjectKey]]  # (Secret, body, its DNSZone)


def _key_file(role: str, field: str) -> str:
    """The Secret key of one of a role's files: `ksk-file` for the key's name, `ksk.private` ..."""
    return f"{role}{'-' if field == 'file' else '.'}{field}"


def secret_name(zone: placement.Zone) -> str:
    return f"{zone.key.name}-dnssec-keys"


def signing_of(instances: Mapping[ObjectKey, Instance], clusters: Mapping[ObjectKey, Cluster]
               ) -> dict[ObjectKey, DnssecSigning | None]:
    """Each instance's dnssec.signing in effect (None: signing not enabled)."""
    out: dict[ObjectKey, DnssecSigning | None] = {}
    for key, inst in instances.items():
        cluster = clusters.get(ObjectKey("Bind9Cluster", key.namespace, inst.cluster))
        out[key] = namedconf.signing_of(cluster.spec.global_ if cluster else None, inst.spec.config)
    return out


def attach(zones: list[placement.Zone], instances: Mapping[ObjectKey, Instance],
           deployments: Mapping[ObjectKey, dict[str, Any]],
           policies: Mapping[ObjectKey, DnssecSigning | None], manifest: Manifest) -> Keys:
    """The key Secret of every signed zone, mounted into its primaries' Deployments (`deployments`:
    each Deployment's body, changed in place); the problems of the zones' policies."""
    problems = dnssecpolicy.zone_policies(zones, policies, manifest)
    wrong: dict[ObjectKey, str] = {}
    rolled: dict[ObjectKey, str] = {}  # warnings: keys a rollover makes are lost with a pod
    mounts: dict[ObjectKey, list[KeySet]] = {}
    out = Keys(problems, [])
    for zone in zones:
        policy = zone.spec.dnssec_policy
        # a live key Secret is kept as it is
        if policy is None or policy in UNSIGNED or not zone.primaries:
            continue
        found = _key_set(zone, policy, instances, policies)
        if isinstance(found, str):
            wrong[zone.key] = found
            continue
        if found.rolls and (lost := [p for p in zone.primaries if p in instances
                                     and storage.claim_name(
                p.name, instances[p].spec) is None]):
            rolled[zone.key] = (f"key lifetimes are set, so named rolls the zone's keys itself, "
                                f"and the keys a rollover makes stay in the pod's emptyDir on "
                                f"{_names(lost)}: a replaced pod starts "
                                "again from the zone's first keys (in its Secret). Give the "
                                "instance storage (persistentVolumeClaim), or leave the lifetimes "
                                "unset (unlimited)")
        body = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": found.secret, "namespace": zone.key.namespace,
                             "labels": {**MANAGED_BY, "app.kubernetes.io/name": "bind9",
                                        LABEL: "true"},
                             "annotations": {"bindy.firestoned.io/zone": zone.name}},
                "stringData": {"zone": zone.name, "algorithm": str(found.algorithm),
                               "roles": " ".join(found.roles),
                               **{_key_file(role, f): workloads.SECRET_PLACEHOLDER
                                  for role in found.roles for f in FILES}}}
        out.secrets.append((ObjectKey("Secret", zone.key.namespace, found.secret), body, zone.key))
        for primary in zone.primaries:
            mounts.setdefault(ObjectKey("Deployment", primary.namespace, primary.name),
                              []).append(found)
    for key, sets in mounts.items():
        if key in deployments:
            mount(deployments[key], sets)
    for obj in manifest.of_kind("DNSZone") if wrong or rolled else []:
        if obj.key in wrong or obj.key in rolled:
            problems.append(Problem(obj.origin_at("spec.dnssecPolicy"), str(obj.key),
                                    "spec.dnssecPolicy", wrong.get(obj.key) or rolled[obj.key],
                                    Severity.ERROR if obj.key in wrong else Severity.WARNING))
    return out


def _key_set(zone: placement.Zone, policy: str, instances: Mapping[ObjectKey, Instance],
             policies: Mapping[ObjectKey, DnssecSigning | None]) -> KeySet | str:
    """The zone's key set, or why one key set cannot serve every primary pod of it."""
    elsewhere = [p for p in zone.primaries if p.namespace != zone.key.namespace]
    if elsewhere:
        return (f"the zone is signed on primary instance(s) {_names(elsewhere)} in another "
                f"namespace than the zone's ({zone.key.namespace}): its DNSSEC keys are kept in a "
                "Secret of the zone's namespace, which pods there cannot mount, so they would sign "
                "with keys of their own and serve a DNSKEY set the DS does not match. Place the "
                "zone on primaries of its own namespace")
    defined = {p: s for p in zone.primaries
               if (s := policies.get(p)) is not None and namedconf.policy_name(s) == policy}
    shapes = {(s.algorithm or namedconf.DEFAULT_ALGORITHM, s.ksk_lifetime, s.zsk_lifetime)
              for s in defined.values()}
    if len(shapes) > 1:
        return (f"the DNSSEC policy {policy!r} means different keys on the zone's primaries "
                f"({_names(defined)}: "
                "algorithm or key lifetimes differ): they would serve different DNSKEY sets. Give "
                "the policy one definition")
    pods = sum(_replicas(instances.get(p)) for p in zone.primaries)
    algorithm, ksk, zsk = next(iter(shapes)) if shapes else (namedconf.DEFAULT_ALGORITHM, None,
                                                             None)
    if pods > 1 and not (ksk in UNLIMITED and zsk in UNLIMITED):
        return (f"the zone is signed by {pods} primary pods with key lifetimes that are not "
                f"unlimited (kskLifetime {ksk or 'unlimited'}, zskLifetime {zsk or 'unlimited'}): "
                "each pod's named would roll keys of its own, and the servers would serve "
                "different DNSKEY sets. Leave the lifetimes unset (unlimited), or serve the zone "
                "from one primary pod")
    number = ALGORITHMS.get(str(algorithm).upper())
    if number is None:
        return (f"the DNSSEC policy {policy!r} names the algorithm {algorithm!r}, for which the "
                f"agent cannot make keys; use one of {', '.join(ALGORITHMS)}")
    roles = ("csk",) if policy == namedconf.DEFAULT_POLICY or not defined else ("ksk", "zsk")
    return KeySet(zone, secret_name(zone), 13 if roles == ("csk",) else number, roles,
                  rolls=not (ksk in UNLIMITED and zsk in UNLIMITED))


def _replicas(instance: Instance | None) -> int:
    replicas = instance.spec.replicas if instance is not None else None
    return 1 if replicas is None else replicas


def _names(keys: Mapping[ObjectKey, Any] | list[ObjectKey]) -> str:
    listed = sorted(f"{k.namespace}/{k.name}" for k in keys)
    return ", ".join(listed[:5]) + (" ..." if len(listed) > 5 else "")


def mount(deployment: dict[str, Any], sets: list[KeySet]) -> None:
    """The zones' key Secrets as one read-only volume (a directory per zone) and the init container
    that copies them into named's key directory, in a primary's Deployment."""
    pod = deployment["spec"]["template"]["spec"]
    sources = [{"secret": {"name": s.secret, "items": [
        {"key": k, "path": f"{s.zone.name.rstrip('.')}/{k}"}
        for k in ("roles",
                  *(f"{r}{'-' if f == 'file' else '.'}{f}" for r in s.roles for f in FILES))]}}
        for s in sorted(sets, key=lambda s: s.zone.name)]
    pod["volumes"].append({"name": VOLUME, "projected": {"defaultMode": 0o440, "sources": sources}})
    bind9 = pod["containers"][0]
    zones_mount = next(m for m in bind9["volumeMounts"] if m["name"] == "zones")
    pod["initContainers"] = [{
        "name": INIT, "image": bind9["image"], "imagePullPolicy": bind9["imagePullPolicy"],
        "command": ["sh", "-c", COPY],
        "volumeMounts": [{"name": VOLUME, "mountPath": MOUNT, "readOnly": True}, dict(zones_mount)],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"},
                      "limits": {"cpu": "100m", "memory": "32Mi"}},
        "securityContext": copy.deepcopy(bind9["securityContext"]),
    }]
