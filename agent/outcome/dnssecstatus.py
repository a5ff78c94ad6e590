"""A DNSZone's `status.dnssec` from what its primaries serve (pure): whether the zone is signed, and
the DS records its parent needs, computed from the served key-signing keys (DNSKEY with the SEP
flag) - no query of its own: the RRsets are those observe read, or that apply left
(ZoneResult.after).

Bindy's CRD has the field but its operator never fills it; the agent does, in Bindy's format:
`<zone>. IN DS <key tag> <algorithm> <digest type> <DIGEST>`, SHA-256 digests (RFC 8624: SHA-1
must not be used for DS). Every primary signs with the zone's one key set
(agent/desired/zonekeys.py), so they serve the same KSK; the DS listed is that of the KSKs *every*
signed primary serves - a DS that validates on some servers only is never shown (while they differ,
e.g. a pod of an older template still rolling out, the list is empty and `differs` says which
servers disagree).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import dns.dnssectypes
import dns.exception
import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.DNSKEY

from agent.desired.placement import Zone
from agent.desired.rrsets import RRset
from agent.model.ownership import Key

# dnspython loads its DSA code from cryptography, which says DSA is deprecated
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="DSA is deprecated")
    import dns.dnssec

SEP, REVOKE = 0x0001, 0x0080  # DNSKEY flags: secure entry point (a KSK), revoked


def _ksks(zone: str, served: dict[Key, RRset]) -> list[dns.rdtypes.ANY.DNSKEY.DNSKEY]:
    rrset = served.get((zone, "DNSKEY"))
    out = []
    for text in rrset.rdatas if rrset is not None else ():
        try:
            key = dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.DNSKEY, text)
        except dns.exception.DNSException:
            continue
        assert isinstance(key, dns.rdtypes.ANY.DNSKEY.DNSKEY)
        if key.flags & SEP and not key.flags & REVOKE:
            out.append(key)
    return out


def ds_records(zone: str, keys: Iterable[dns.rdtypes.ANY.DNSKEY.DNSKEY]) -> list[str]:
    """The DS records of these keys, in presentation form (digest in upper case, as BIND writes
    it)."""
    name = dns.name.from_text(zone)
    out = []
    for key in keys:
        ds = dns.dnssec.make_ds(name, key, "SHA256")
        out.append(f"{zone} IN DS {ds.key_tag} {ds.algorithm} {ds.digest_type} "
                   f"{ds.digest.hex().upper()}")
    return out


def differs(zone: Zone, served: Iterable[tuple[str, dict[Key, RRset]]]) -> str:
    """"" when every signed server serves the same KSKs; else which servers serve which key tags."""
    seen = {server: sorted(dns.dnssec.key_id(k) for k in _ksks(zone.name, rrsets))
            for server, rrsets in served
            if (zone.name, "DNSKEY") in rrsets}
    if len({tuple(tags) for tags in seen.values()}) <= 1:
        return ""
    return "its servers serve different key-signing keys (" + ", ".join(
        f"{server}: {' '.join(map(str, tags)) or 'none'}"
        for server, tags in sorted(seen.items())) + (
        "): a DS validates on some of them only, so none is shown; they agree once every primary "
        "pod runs with the zone's key Secret")


def status(zone: Zone, served: Iterable[dict[Key, RRset]]) -> dict[str, Any] | None:
    """`status.dnssec` of a zone, from the RRsets each primary serves; None for a zone without a
    dnssecPolicy that no primary serves signed (the field is not shown)."""
    seen = list(served)
    signed = [s for s in seen if (zone.name, "DNSKEY") in s and (zone.name, "RRSIG") in s]
    if not zone.spec.dnssec_policy and not signed:
        return None
    keys: dict[str, dns.rdtypes.ANY.DNSKEY.DNSKEY] = {}
    for rrsets in signed:
        for key in _ksks(zone.name, rrsets):
            keys.setdefault(key.to_text(), key)
    everywhere = set.intersection(*({k.to_text() for k in _ksks(zone.name, r)}
                                    for r in signed)) if signed else set()
    keys = {text: key for text, key in keys.items() if text in everywhere}
    if not keys:
        return {"signed": False, "dsRecords": []}
    first = next(iter(keys.values()))
    return {"signed": True, "algorithm": dns.dnssectypes.Algorithm(first.algorithm).name,
            "keyTag": dns.dnssec.key_id(first), "dsRecords": ds_records(zone.name, keys.values())}
