"""The body of the zone API's create call for one zone on one server (pure; bindcar's
`CreateZoneRequest`, as Bindy fills it in src/bind9/zone_ops.rs).

    primary:   zoneName, zoneType, zoneConfig {ttl, soa, nameServers, nameServerIps, alsoNotify,
               allowTransfer, dnssecPolicy, inlineSigning}, updateKeyName
    secondary: zoneName, zoneType, zoneConfig {primaries}

`primaries` and `alsoNotify` are addresses with the DNS port (`10.0.0.5:5353`, `[fd00::5]:5353`):
BIND takes no names there. `allowTransfer` is bare addresses (an ACL has no port).

bindcar turns `dnssecPolicy` into the zone's `dnssec-policy "<name>"` and `inlineSigning` into
`inline-signing yes` in its `rndc addzone`; Bindy sends both for a DNSZone with `dnssecPolicy` and
neither for a secondary, which receives the signed zone by transfer.

`nameServers` and `nameServerIps` (the apex NS and IPv4 glue, desired/nameservers.py) make the zone
loadable when it is created; afterwards they, and the IPv6 glue the body cannot carry, are kept by
DNS UPDATE as part of the zone's RRsets.
"""

from __future__ import annotations

from agent.desired import nameservers
from agent.desired.placement import Zone


def primary(zone: Zone, *, also_notify: list[str], update_key: str | None,
            allow_transfer: list[str] | None = None) -> dict[str, object]:
    """The create body of `zone` on a primary; `also_notify`: its secondaries' addresses,
    `update_key`: the TSIG key allowed to UPDATE it, `allow_transfer`: who may transfer it (a
    per-zone ACL that replaces named.conf's; None or empty: named.conf's applies)."""
    spec, soa = zone.spec, zone.spec.soa_record
    config: dict[str, object] = {
        "ttl": zone.default_ttl,
        "soa": {"primaryNs": soa.primary_ns, "adminEmail": soa.admin_email, "serial": soa.serial,
                "refresh": soa.refresh, "retry": soa.retry, "expire": soa.expire,
                "negativeTtl": soa.negative_ttl},
        "nameServers": nameservers.hosts(zone),
        "nameServerIps": nameservers.body_glue(zone),  # IPv4 glue of name servers inside the zone
    }
    if also_notify:
        config["alsoNotify"] = list(also_notify)
    if allow_transfer:
        config["allowTransfer"] = list(allow_transfer)
    if spec.dnssec_policy:
        config["dnssecPolicy"] = spec.dnssec_policy
        config["inlineSigning"] = True
    body: dict[str, object] = {"zoneName": zone.name.rstrip("."), "zoneType": "primary",
                               "zoneConfig": config}
    if update_key:
        body["updateKeyName"] = update_key
    return body


def secondary(zone_name: str, *, primaries: list[str]) -> dict[str, object]:
    """The create body of a zone on a secondary that transfers it from `primaries` (`ip:port`)."""
    return {"zoneName": zone_name.rstrip("."), "zoneType": "secondary",
            "zoneConfig": {"primaries": list(primaries)}}
