"""Generated DNS repositories whose RRsets are known exactly, and the end-state check that reads
them back from the servers (AXFR of each) after a fault: missing / extra / duplicated RRsets.

A revision is plain data - zone -> {(relative name, type): values} - written as CR YAML for the
agent and compared, independently of the agent's own code, with what named serves.
"""

from __future__ import annotations

import dataclasses
import pathlib
import time
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING

import dns.exception
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rdatatype
import dns.tsigkeyring
import dns.update
import dns.zone
import yaml

from tests.support.bind import TSIG_NAME, BindPair, BindServer
from tests.support.zone_api import ZoneApi

if TYPE_CHECKING:
    from tests.support.gitremote import GitRemote

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
SOA = ("  soaRecord: {primaryNs: ns1.example.com., adminEmail: hostmaster.example.com., serial: 1, refresh: 3600, "
       "retry: 600, expire: 604800, negativeTtl: 300}\n")
TTL = 300
RRKey = tuple[str, str]  # (relative owner name, type)
Revision = dict[str, dict[RRKey, tuple[str, ...]]]  # zone (no trailing dot) -> RRsets
Served = dict[tuple[str, str], tuple[int, tuple[str, ...]]]  # (absolute owner, type) -> (ttl, sorted values)


def zone_names(count: int, tag: str | None = None) -> list[str]:
    tag = tag or uuid.uuid4().hex[:6]
    return [f"z{i}-{tag}.test" for i in range(count)]


def _values(i: int, rtype: str, generation: int) -> tuple[str, ...]:
    if rtype == "A":
        return tuple(f"10.{generation % 256}.{i // 250 % 250}.{i % 250 + v}" for v in range(1 + i % 3))
    if rtype == "TXT":
        return (f'"gen {generation} record {i}"',)
    return (f"target{i % 7}.gen{generation}.example.",)  # CNAME


def revision(zones: Iterable[str], per_zone: int, *, generation: int = 0) -> Revision:
    """`per_zone` RRsets in every zone: A (one to three values), TXT and CNAME, in turn."""
    out: Revision = {}
    for zone in zones:
        rrsets: dict[RRKey, tuple[str, ...]] = {}
        for i in range(per_zone):
            rtype = ("A", "TXT", "CNAME")[i % 3]
            rrsets[(f"h{i}", rtype)] = _values(i, rtype, generation)
        out[zone] = rrsets
    return out


def _record_doc(zone: str, index: int, key: RRKey, values: tuple[str, ...], namespace: str) -> str:
    name, rtype = key
    meta = f"metadata: {{name: r{index}-{name.replace('_', 'u')}-{rtype.lower()}, namespace: {namespace}}}\n"
    spec = f"spec:\n  name: {name}.{zone}.\n  ttl: {TTL}\n"
    if rtype == "A":
        return f"{HEAD}kind: ARecord\n{meta}{spec}  ipv4Addresses: [{', '.join(values)}]\n"
    if rtype == "TXT":
        return f"{HEAD}kind: TXTRecord\n{meta}{spec}  text: ['{values[0].strip(chr(34))}']\n"
    return f"{HEAD}kind: CNAMERecord\n{meta}{spec}  target: {values[0]}\n"


def write_repo(root: pathlib.Path, rev: Revision, *, namespace: str = "dns-system") -> pathlib.Path:
    """The cluster `dns` (one primary, one secondary), a DNSZone per zone, a file of records per zone.
    Files of zones that left `rev` are removed, so a later revision can be written over an earlier one."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "cluster.yaml").write_text(
        HEAD + f"kind: Bind9Cluster\nmetadata: {{name: dns, namespace: {namespace}}}\n"
        "spec: {primary: {replicas: 1}, secondary: {replicas: 1}}\n")
    for old in root.glob("zone-*.yaml"):
        old.unlink()
    for index, (zone, rrsets) in enumerate(sorted(rev.items())):
        meta = f"metadata:\n  name: {zone.replace('.', '-')}\n  namespace: {namespace}\n"
        docs = [HEAD + f"kind: DNSZone\n{meta}spec:\n  zoneName: {zone}\n  clusterRef: dns\n  ttl: {TTL}\n" + SOA]
        docs += [_record_doc(zone, index, key, values, namespace) for key, values in sorted(rrsets.items())]
        (root / f"zone-{zone}.yaml").write_text("---\n".join(docs))
    return root


def push_revision(remote: GitRemote, rev: Revision, message: str, *, namespace: str = "dns-system") -> str:
    """`rev` written over the remote's work tree (write_repo), committed and pushed; the commit's sha."""
    write_repo(remote.work, rev, namespace=namespace)
    sha = remote.commit(message, {})
    remote.push()
    return sha


def records(rev: Revision) -> int:
    return sum(len(r) for r in rev.values())


# -- the servers ----------------------------------------------------------------------------------
@dataclasses.dataclass
class Dns:
    """A named pair and the zone API of each, owned by one test (so it may kill or stop them)."""

    pair: BindPair
    apis: dict[str, ZoneApi]
    endpoints: pathlib.Path

    @property
    def servers(self) -> list[BindServer]:
        return [self.pair.primary, self.pair.secondary]

    def keyring(self) -> dict[dns.name.Name, dns.tsig.Key]:
        return dns.tsigkeyring.from_text({TSIG_NAME: ("hmac-sha256", self.pair.keys.tsig)})

    def update(self, zone: str, change: object) -> None:
        """An out-of-band UPDATE on the primary, as cert-manager or an operator would send."""
        update = dns.update.UpdateMessage(zone, keyring=self.keyring(), keyalgorithm="hmac-sha256")
        change(update)  # type: ignore[operator]
        response = dns.query.tcp(update, self.pair.primary.address, port=self.pair.primary.port, timeout=5)
        assert response.rcode() == dns.rcode.NOERROR, dns.rcode.to_text(response.rcode())

    def serial(self, server: BindServer, zone: str) -> int | None:
        """The zone's SOA serial on `server` (every UPDATE raises it); None if it does not answer."""
        query = dns.message.make_query(f"{zone}.", "SOA")
        try:
            answer = dns.query.udp(query, server.address, port=server.port, timeout=1).answer
        except (dns.exception.Timeout, OSError):
            return None
        return int(answer[0][0].serial) if answer else None

    def axfr(self, server: BindServer, zone: str) -> Served | None:
        """Every RRset `server` serves in `zone` (TSIG-signed AXFR); None if it does not serve the zone."""
        try:
            xfr = dns.zone.from_xfr(dns.query.xfr(server.address, zone, port=server.port, keyring=self.keyring(),
                                                  keyalgorithm="hmac-sha256", timeout=5, lifetime=20,
                                                  relativize=False),
                                    relativize=False)
        except dns.query.TransferError as exc:
            if exc.rcode in (dns.rcode.NOTAUTH, dns.rcode.NOTZONE, dns.rcode.REFUSED, dns.rcode.SERVFAIL):
                return None
            raise
        except dns.exception.FormError:  # named answers an unknown zone with an empty reply
            return None
        out: Served = {}
        for name, node in xfr.nodes.items():
            for rdataset in node.rdatasets:
                values = tuple(sorted(r.to_text(origin=dns.name.root, relativize=False) for r in rdataset))
                out[(name.to_text(), dns.rdatatype.to_text(rdataset.rdtype))] = (rdataset.ttl, values)
        return out


def foreign(zone: str) -> dict[RRKey, tuple[str, ...]]:
    """The out-of-band RRsets every fault test adds to a zone and expects to survive."""
    return {("_acme-challenge", "TXT"): (f'"cert-manager token for {zone}"',),
            ("legacy", "A"): ("198.51.100.77",)}


def add_foreign(world: Dns, zones: Iterable[str]) -> None:
    for zone in zones:
        def change(u: dns.update.UpdateMessage, zone: str = zone) -> None:
            for (name, rtype), values in foreign(zone).items():
                for value in values:
                    u.add(name, 60, rtype, value)
        world.update(zone, change)


@dataclasses.dataclass
class Divergence:
    """How far what one server serves is from what the newest revision wants."""

    server: str
    missing: list[str] = dataclasses.field(default_factory=list)  # wanted, not served (zone missing: all)
    extra: list[str] = dataclasses.field(default_factory=list)  # served, neither wanted, foreign nor the zone's own
    duplicated: list[str] = dataclasses.field(default_factory=list)  # wanted values plus others left behind
    wrong: list[str] = dataclasses.field(default_factory=list)  # other values (or TTL) than wanted
    foreign_lost: list[str] = dataclasses.field(default_factory=list)  # out-of-band data changed or gone
    absent_zones: list[str] = dataclasses.field(default_factory=list)  # zones that should be gone, still served

    def counts(self) -> dict[str, int]:
        return {f.name: len(getattr(self, f.name)) for f in dataclasses.fields(self) if f.name != "server"}

    @property
    def clean(self) -> bool:
        return not any(self.counts().values())


def _absolute(name: str, zone: str) -> str:
    return f"{zone}." if name == "@" else f"{name}.{zone}."


def _compare(div: Divergence, zone: str, served: Served, rev: dict[RRKey, tuple[str, ...]],
             foreign_rrsets: dict[RRKey, tuple[str, ...]]) -> None:
    wanted = {(_absolute(n, zone), t): v for (n, t), v in rev.items()}
    kept = {(_absolute(n, zone), t): v for (n, t), v in foreign_rrsets.items()}
    for key, values in wanted.items():
        have = served.get(key)
        label = f"{key[0]} {key[1]}"
        if have is None:
            div.missing.append(label)
        elif set(have[1]) > set(values):
            div.duplicated.append(f"{label}: {have[1]}")
        elif have != (TTL, tuple(sorted(values))):
            div.wrong.append(f"{label}: {have}, wanted {values}")
    for key, values in kept.items():
        if served.get(key, (0, ()))[1] != tuple(sorted(values)):
            div.foreign_lost.append(f"{key[0]} {key[1]}: {served.get(key)}")
    for key in served:
        own = key[1] == "SOA" or (key[0] == f"{zone}." and key[1] == "NS")
        if key not in wanted and key not in kept and not own:
            div.extra.append(f"{key[0]} {key[1]}: {served[key][1]}")


def divergence(world: Dns, server: BindServer, rev: Revision, *, foreign_in: Iterable[str] = (),
               gone: Iterable[str] = ()) -> Divergence:
    """`server` against `rev`: every zone of `rev` exactly, foreign RRsets in `foreign_in` kept, and the
    zones in `gone` no longer served."""
    div = Divergence(server.name)
    keep = set(foreign_in)
    for zone, rrsets in sorted(rev.items()):
        served = world.axfr(server, zone)
        if served is None:
            div.missing += [f"{n}.{zone}. {t} (zone not served)" for n, t in rrsets]
            continue
        _compare(div, zone, served, rrsets, foreign(zone) if zone in keep else {})
    div.absent_zones = [zone for zone in gone if world.axfr(server, zone) is not None]
    return div


def converged(world: Dns, rev: Revision, *, foreign_in: Iterable[str] = (), gone: Iterable[str] = (),
              timeout: float = 15) -> list[Divergence]:
    """Each server's divergence, polled until both are clean (the secondary transfers after a NOTIFY)
    or `timeout` passes; the last reading is returned either way, for the assertion to show."""
    keep, away = list(foreign_in), list(gone)
    end = time.monotonic() + timeout
    while True:
        found = [divergence(world, s, rev, foreign_in=keep, gone=away) for s in world.servers]
        if all(d.clean for d in found) or time.monotonic() > end:
            return found
        time.sleep(0.2)


def summary(found: list[Divergence]) -> str:
    return "; ".join(f"{d.server}: " + ", ".join(f"{k} {v}" for k, v in d.counts().items()) for d in found)


def endpoint_map(dest: pathlib.Path, pair: BindPair, apis: dict[str, ZoneApi], *, namespace: str = "dns-system",
                 primary_api: str | None = None) -> pathlib.Path:
    """The agent's endpoint map for `pair`; `primary_api` replaces the primary's zone API URL."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "tsig.key").write_text(f'key "{TSIG_NAME}" {{ algorithm hmac-sha256; secret "{pair.keys.tsig}"; }};\n')
    (dest / "token").write_text(apis["primary"].token + "\n")
    servers = {"primary": pair.primary, "secondary": pair.secondary}
    doc = {"instances": {
        f"{namespace}/dns-{role}-0": {"dns": f"{server.address}:{server.port}",
                                      "api": (primary_api if role == "primary" and primary_api else apis[role].url),
                                      "tokenFile": "token", "tsigKeyFile": "tsig.key"}
        for role, server in servers.items()}}
    path = dest / "endpoints.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path
