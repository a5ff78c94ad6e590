"""A DNSZone with its name servers and glue, for unit tests that plan it without a server: the cluster and
zone documents, the zone as the zone API created it on its primary, and the DNS world observed there."""

from __future__ import annotations

from agent.desired import hierarchy, nameservers
from agent.desired.placement import Zone
from agent.desired.rrsets import RRset
from agent.model import servers
from agent.model.observed import DnsObserved, ZoneObserved
from agent.model.ownership import Key, ZoneOwnership
from tests.conftest import Repo, load_dir

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
CLUSTER = HEAD + """kind: Bind9Cluster
metadata: {name: dns, namespace: dns-system}
spec: {primary: {replicas: 1}, secondary: {replicas: 1}}
"""


SOA = ("  soaRecord: {primaryNs: ns1.example.com., adminEmail: admin.example.com., serial: 1, refresh: 3600, "
       "retry: 600, expire: 604800, negativeTtl: 300}\n")


def _zone_doc(extra: str, ttl: int = 600) -> str:
    return (HEAD + "kind: DNSZone\nmetadata: {name: example-com, namespace: dns-system}\nspec:\n"
            f"  zoneName: example.com\n  clusterRef: dns\n  ttl: {ttl}\n" + SOA + extra)


def _world(zone: Zone, seen: dict[Key, RRset] | None, managed: set[Key] | None = None) -> DnsObserved:
    primary = servers.instance_id(zone.primaries[0])
    placements = {servers.instance_id(k): r for ks, r in ((zone.secondaries, "secondary"),
                                                          (zone.primaries, "primary")) for k in ks}
    owned = {zone.name: ZoneOwnership(zone.name, placements if seen is not None else {}, managed or set())}
    return DnsObserved(owned, {zone.name: {primary: ZoneObserved(seen)}}, set(placements))


def _as_created(zone: Zone) -> dict[Key, RRset]:
    return {**nameservers.created(zone), (zone.name, "SOA"): RRset(zone.name, zone.name, "SOA", 600, ("x",))}


def _zone(repo: Repo, extra: str, records: str = "") -> Zone:
    repo.add("cluster.yaml", CLUSTER)
    selector = "  recordsFrom: [{selector: {matchLabels: {}}}]\n" if records else ""
    repo.add("zone.yaml", _zone_doc(extra + selector) + (f"---\n{records}" if records else ""))
    state = hierarchy.build(load_dir(repo.root))
    assert [p for p in state.problems if p.severity.name == "ERROR"] == []
    (zone,) = state.zones
    return zone
