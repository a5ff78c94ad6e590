"""The digest of the RRsets Git wants for a zone (pure): what a DNSZone's status shows as its hash,
so that a zone's servers, or a zone before and after a commit, compare at a glance.

sha256 over the zone's RRsets in a canonical order - by owner, then type - one line each, "owner TTL
type rdata rdata ...", its rdatas sorted: the same RRsets give the same digest whatever order the
files list them in, and a TTL or any rdata changes it. Shown as `sha256:` and 16 hex digits.

A zone whose RRsets did not change is the very same object in the next revision (its RRsets are
reused: agent/desired/memo.py), so its digest is kept on it: a commit hashes again only the zones
it changed, not every zone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from agent.desired.placement import Zone
from agent.model.rrset import RRset

PREFIX = "sha256:"
DIGITS = 16


def digest(rrsets: Mapping[tuple[str, str], RRset]) -> str:
    """The digest of these RRsets, however they are ordered."""
    h = hashlib.sha256()
    for key in sorted(rrsets):
        rrset = rrsets[key]
        line = " ".join((rrset.name, str(rrset.ttl), rrset.rtype, *sorted(rrset.rdatas)))
        h.update(line.encode())
        h.update(b"\n")
    return PREFIX + h.hexdigest()[:DIGITS]


def of(zone: Zone) -> str:
    """The zone's digest, kept on the zone while its RRsets are the same object."""
    kept = zone.digest_kept
    if kept is not None and kept[0] is zone.rrsets:
        return kept[1]
    value = digest(zone.rrsets)
    zone.digest_kept = (zone.rrsets, value)
    return value
