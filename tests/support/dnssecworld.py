"""A signed zone for unit tests: its DNSZone document, a KSK, its DS and a ZSK, the RRsets a server serves for it,
and a cluster that signs its zones."""

from __future__ import annotations

from agent.desired.rrsets import RRset, build

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"
ZONE = HEAD + """kind: DNSZone
metadata: {name: secure, namespace: dns}
spec:
  zoneName: example.net
  clusterRef: dns
  soaRecord: {primaryNs: ns1.example.net., adminEmail: hostmaster.example.net., serial: 1, refresh: 3600,
              retry: 600, expire: 604800, negativeTtl: 300}
  nameServers: [{hostname: ns1.example.net., ipv4Address: 192.0.2.53}]
"""


# RFC 6605 section 6.1: example.net's ECDSAP256SHA256 KSK and its SHA-256 DS
KSK = "257 3 13 GojIhhXUN/u4v54ZQqGSnyhWJwaubCvTmeexv7bR6edbkrSqQpF64cYbcB7wNcP+e+MAnLr+Wi9xMWyQLc8NAA=="
DS = "example.net. IN DS 55648 13 2 B4C8C1FE2E7477127B27115656AD6256F424625BF5C1E2770CE6D6E37DF61D17"
ZSK = "256 3 13 7I0vTR4l9Su/HJPfJJZqzSDK/ZYibWNudMCDJ2l1ui/kO4SD/+xoQ9WJtkobMUi5lu4Z5/PWi94yoz4UpBLgJw=="


def _served(*dnskeys: str) -> dict[tuple[str, str], RRset]:
    zone = "example.net."
    return {(zone, "DNSKEY"): build(zone, zone, "DNSKEY", 3600, dnskeys),
            (zone, "RRSIG"): build(zone, zone, "RRSIG", 3600, ["SOA 13 2 3600 20300101000000 20200101000000 55648 "
                                                                "example.net. AAAA"])}


def _cluster(signing_: str = "{enabled: true, policy: shared}", primaries: int = 2, secondaries: int = 1) -> str:
    return HEAD + f"""kind: Bind9Cluster
metadata: {{name: dns, namespace: dns}}
spec:
  primary: {{replicas: {primaries}}}
  secondary: {{replicas: {secondaries}}}
  global:
    dnssec:
      signing: {signing_}
"""
