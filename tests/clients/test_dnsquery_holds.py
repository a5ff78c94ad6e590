"""dnsquery.holds tells a server that has no such zone (REFUSED, NOTAUTH) from one that has not loaded it (SERVFAIL)."""

from __future__ import annotations

import dns.message
import dns.rcode
import dns.rrset

from agent.clients import dnsquery
from agent.clients.endpoints import Endpoint
from tests.support.soaserver import _server


def test_holds_tells_no_such_zone_from_not_loaded() -> None:
    for rcode, want in ((dns.rcode.REFUSED, False), (dns.rcode.NOTAUTH, False), (dns.rcode.SERVFAIL, None)):
        sock = _server(rcode)
        try:
            endpoint = Endpoint("ns/sec", "127.0.0.1", sock.getsockname()[1], "http://127.0.0.1:1")
            assert dnsquery.holds(endpoint, ["a.example."], timeout=0.5) == {"a.example.": want}, rcode
        finally:
            sock.close()
