"""A live zone's RRsets -> the CRs that say the same, for `bindy-agent import` (pure).

The inverse of placement + rrsets, to adopt a zone that exists today:

    SOA                    -> DNSZone spec.soaRecord (the zone's own; the agent never writes it as a
                           record)
    apex NS                -> DNSZone spec.nameServers, with the glue address of a name server
                           inside
                              the zone (the agent writes them when it creates the zone)
    A / AAAA               -> one ARecord / AAAARecord per RRset (all its addresses)
    CNAME                  -> one CNAMERecord
    MX, TXT, NS, SRV, CAA  -> one CR per value (their kinds hold one value; the agent joins the CRs
                           of
                              one name and type into one RRset again)
    anything else          -> skipped, with the reason (DNSSEC data BIND signs itself, or no Bindy
                           kind)

(each record type says how its RRsets become CRs: model/recordtypes/)

The zone's TTL is the SOA's; a record states `ttl` only where it differs. Records are selected by
the DNSZone's `recordsFrom` (the label `bindy.firestoned.io/zone`), as Bindy does. Names are
Kubernetes names: `<zone>-<owner>-<type>[-<n>]`, made unique and short enough.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections import Counter
from typing import Any

import dns.exception
import dns.rdata
import dns.rdataclass
import yaml

from agent.desired import hierarchy
from agent.desired.rrsets import RRset, absolute
from agent.load import parse, scalars
from agent.model import kinds, recordtypes
from agent.model.ownership import Key
from agent.model.problems import Problem, Severity

ZONE_LABEL = "bindy.firestoned.io/zone"
DNSSEC = {"RRSIG", "NSEC", "NSEC3", "NSEC3PARAM", "DNSKEY", "CDS", "CDNSKEY", "TYPE65534"}
_MAX_NAME = 253


@dataclasses.dataclass
class Adopted:
    zone: dict[str, Any]  # the DNSZone document
    records: list[dict[str, Any]]  # the record CRs, in zone order
    moved: list[str]  # what became part of the DNSZone instead of a record
    skipped: list[str]  # what has no CR, and why


def slug(text: str, limit: int = 63) -> str:
    """A Kubernetes name (or label value) from DNS labels: lowercase, '-' for anything else."""
    out = re.sub(r"-+", "-",
                 re.sub(r"[^a-z0-9]", "-",
                        text.lower().replace("*", "wildcard"))).strip("-") or "apex"
    if len(out) <= limit:
        return out
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return out[:limit - 9].rstrip("-") + "-" + digest


def relative(owner: str, zone: str) -> str:
    return "@" if owner == zone else owner[: -len(zone) - 1]


def _rdatas(rr: RRset) -> list[Any]:
    return [dns.rdata.from_text(dns.rdataclass.IN, rr.rtype, text) for text in rr.rdatas]


def _specs(rr: RRset, record_type: recordtypes.RecordType) -> list[dict[str, Any]]:
    """The spec fields (without name and ttl) of the CRs that together say what `rr` says."""
    return record_type.from_rdata(_rdatas(rr))


def _metadata(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, **({"labels": labels} if labels else {})}


def _zone_doc(zone: str, rrsets: dict[Key, RRset], namespace: str,
              cluster_ref: str | None) -> dict[str, Any]:
    soa = _rdatas(rrsets[(zone, "SOA")])[0]
    spec: dict[str, Any] = {"zoneName": zone.rstrip(".")}
    if cluster_ref:
        spec["clusterRef"] = cluster_ref
    spec["ttl"] = rrsets[(zone, "SOA")].ttl
    spec["soaRecord"] = {"primaryNs": soa.mname.to_text(), "adminEmail": soa.rname.to_text(),
                         "serial": soa.serial, "refresh": soa.refresh, "retry": soa.retry,
                         "expire": soa.expire, "negativeTtl": soa.minimum}
    if (zone, "NS") in rrsets:
        spec["nameServers"] = [_name_server(r.target.to_text(), zone, rrsets)
                               for r in sorted(_rdatas(rrsets[(zone, "NS")]),
                                               key=lambda r: r.target.to_text())]
    spec["recordsFrom"] = [{"selector": {"matchLabels": {ZONE_LABEL: slug(zone)}}}]
    return {"apiVersion": kinds.API_VERSION, "kind": "DNSZone",
            "metadata": _metadata(slug(zone), namespace, {}), "spec": spec}


def _name_server(host: str, zone: str, rrsets: dict[Key, RRset]) -> dict[str, Any]:
    """A name server, with its glue address when it is inside the zone (one address per family)."""
    entry: dict[str, Any] = {"hostname": host}
    if host == zone or host.endswith("." + zone):
        for rtype, field in (("A", "ipv4Address"), ("AAAA", "ipv6Address")):
            glue = rrsets.get((host, rtype))
            if glue is not None and len(glue.rdatas) == 1:
                entry[field] = glue.rdatas[0]
    return entry


class _Names:
    """Unique, valid Kubernetes names."""

    def __init__(self) -> None:
        self.used: Counter[str] = Counter()

    def take(self, wanted: str) -> str:
        name = slug(wanted, _MAX_NAME - 4)
        self.used[name] += 1
        return name if self.used[name] == 1 else f"{name}-{self.used[name]}"


def _skip_reason(key: Key, zone: str) -> str | None:
    owner, rtype = key
    if rtype == "SOA" and owner == zone:
        return None  # moved into the DNSZone
    if rtype == "NS" and owner == zone:
        return None
    if rtype in DNSSEC:
        return f"{owner} {rtype}: DNSSEC data, which BIND makes itself when it signs the zone"
    if recordtypes.of_rtype(rtype) is None:
        return f"{owner} {rtype}: no Bindy record kind for {rtype}"
    return None


def _records(zone: str, rrsets: dict[Key, RRset], namespace: str,
             skipped: list[str]) -> list[dict[str, Any]]:
    default_ttl = rrsets[(zone, "SOA")].ttl
    names, out = _Names(), []
    labels = {ZONE_LABEL: slug(zone)}
    for key in sorted(rrsets, key=lambda k: (k[0].count("."), k)):
        owner, rtype = key
        record_type = recordtypes.of_rtype(rtype)
        if record_type is None or (rtype == "NS" and owner == zone):
            continue
        rr = rrsets[key]
        try:
            specs = _specs(rr, record_type)
        except (dns.exception.DNSException, UnicodeDecodeError, ValueError) as exc:
            skipped.append(f"{owner} {rtype}: cannot be written as a {record_type.kind} ({exc})")
            continue
        for i, fields in enumerate(specs):
            spec: dict[str, Any] = {"name": relative(owner, zone)}
            if rr.ttl != default_ttl:
                spec["ttl"] = rr.ttl
            base = f"{slug(zone)}-{relative(owner, zone).replace('@', 'apex')}-{rtype.lower()}"
            name = names.take(base + (f"-{i + 1}" if len(specs) > 1 else ""))
            out.append({"apiVersion": kinds.API_VERSION, "kind": record_type.kind,
                        "metadata": _metadata(name, namespace, labels), "spec": {**spec, **fields}})
    return out


def adopt(zone: str, rrsets: dict[Key, RRset], *, namespace: str,
          cluster_ref: str | None = None) -> Adopted:
    """The DNSZone and record CRs that make the agent serve exactly `rrsets` (the zone's AXFR)."""
    zone = absolute(zone)
    if (zone, "SOA") not in rrsets:
        raise ValueError(f"{zone} has no SOA record: not a zone transfer")
    moved = [f"{zone} SOA -> DNSZone spec.soaRecord (serial "
             f"{_rdatas(rrsets[(zone, 'SOA')])[0].serial})"]
    if (zone, "NS") in rrsets:
        moved.append(f"{zone} NS ({len(rrsets[(zone, 'NS')].rdatas)} name servers) -> DNSZone "
                     f"spec.nameServers")
    skipped = [reason for key in sorted(rrsets) if (reason := _skip_reason(key, zone))]
    records = _records(zone, rrsets, namespace, skipped)
    return Adopted(_zone_doc(zone, rrsets, namespace, cluster_ref), records, moved, skipped)


def to_yaml(docs: list[dict[str, Any]], header: str = "") -> str:
    """Documents as YAML, one `---` apart, long values on one line."""
    # quoted where Kubernetes' YAML would read a string as something else (`y`, `n`: booleans), so
    # that the files read back as they were written, by the agent and by kubectl
    return header + yaml.dump_all(docs, Dumper=scalars.Dumper, sort_keys=False, width=2**16,
                                  allow_unicode=True)


def _key(doc: dict[str, Any]) -> str:
    meta = doc["metadata"]
    return f"{doc['kind']}/{meta['namespace']}/{meta['name']}"


def _owner(record: dict[str, Any], zone: dict[str, Any]) -> str:
    name, apex = record["spec"]["name"], absolute(zone["spec"]["zoneName"])
    return apex if name == "@" else f"{name}.{apex}"


def check(adopted: Adopted, *, namespace: str) -> list[Problem]:
    """Validates the CRs as `bindy-agent validate` would. A record CR that does not validate is
    dropped (and listed as skipped, with the reason); the errors left are the DNSZone's."""
    zone = {**adopted.zone,
            "spec": {k: v for k, v in adopted.zone["spec"].items() if k != "clusterRef"}}
    # dropping a record can invalidate another (an MX's target)
    for _ in range(len(adopted.records) + 1):
        manifest = parse.load_text(to_yaml([zone, *adopted.records]), "imported.yaml",
                                   default_namespace=namespace)
        found = [p for p in manifest.problems
                 + (hierarchy.build(manifest).problems if manifest.ok else [])
                 if p.severity is Severity.ERROR]
        bad = {p.obj: p for p in found}
        dropped = [r for r in adopted.records if _key(r) in bad]
        if not dropped:
            return found
        for record in dropped:
            problem = bad[_key(record)]
            detail = f"{problem.path}: {problem.message}" if problem.path else problem.message
            adopted.skipped.append(f"{_owner(record, zone)} "
                                   f"{record['kind'].removesuffix('Record')}: {detail}")
        adopted.records = [r for r in adopted.records if _key(r) not in bad]
    return found
