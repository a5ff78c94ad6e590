"""Which TSIG key each pod of an instance accepts while a key rotation rolls out (part of
observing).

A rotation (agent/plan/rotation.py) keeps the key's name and changes its secret; every pod keeps the
secret it started with until the Deployment has rolled it. So while the RNDC Secret still holds a
`previous-secret`, each pod is asked once per run, with a TSIG-signed SOA query (never an UPDATE),
whether it knows the current secret; a pod that refuses it (BADSIG/BADKEY) and accepts the previous
one is written with the previous one. A pod that answers neither keeps the current key: its UPDATEs
fail and say so, as for any unreachable server.
"""

from __future__ import annotations

import dataclasses
import logging

import dns.exception
import dns.message
import dns.query
import dns.rdatatype
import dns.tsig

from agent.clients.endpoints import Server, TsigKey
from agent.clients.rfc2136 import tsig_keyring

log = logging.getLogger(__name__)


def accepts(host: str, port: int, key: TsigKey, *, timeout: float = 2) -> bool | None:
    """Whether the server verifies `key` (True), refuses it (False) or could not be asked (None)."""
    keyring, name, algorithm = tsig_keyring(key)
    query = dns.message.make_query(".", dns.rdatatype.SOA)
    query.use_tsig(keyring, keyname=name, algorithm=algorithm)
    try:
        dns.query.tcp(query, host, port=port, timeout=timeout)
    except (dns.tsig.PeerBadKey, dns.tsig.PeerBadSignature, dns.tsig.PeerBadTime,
            dns.tsig.PeerBadTruncation, dns.tsig.BadSignature):
        return False
    except (OSError, dns.exception.DNSException):
        return None
    return True


def choose(servers: tuple[Server, ...], current: TsigKey, previous: TsigKey | None, *,
           timeout: float = 2) -> tuple[Server, ...]:
    """`servers` with the key each one accepts: the previous key on a pod that refuses the current
    one and verifies the previous one (a pod not rolled yet), else the current key."""
    if previous is None:
        return servers
    out = []
    for server in servers:
        key = current
        if accepts(server.dns_host, server.dns_port, current, timeout=timeout) is False \
                and accepts(server.dns_host, server.dns_port, previous, timeout=timeout):
            key = previous
            log.info("%s still runs the previous RNDC key (rotation rolling out): written with it",
                     server.name)
        out.append(dataclasses.replace(server, tsig=key))
    return tuple(out)
