"""Live RRsets back to CRs (agent/desired/adopt.py): what the CRs say, expanded again, is exactly the
zone's data - so adopting a zone changes none of it."""

from __future__ import annotations

from agent.desired import adopt, hierarchy, rrsets
from agent.load import parse
from agent.model.ownership import Key

ZONE = "example.com."


def _live(*lines: str) -> dict[Key, rrsets.RRset]:
    """RRsets as an AXFR gives them: "owner ttl TYPE value" lines, values in presentation form."""
    out: dict[Key, list[str]] = {}
    ttls: dict[Key, int] = {}
    for line in lines:
        owner, ttl, rtype, value = line.split(" ", 3)
        key = (owner, rtype)
        out.setdefault(key, []).append(value)
        ttls[key] = int(ttl)
    return {k: rrsets.build(ZONE, k[0], k[1], ttls[k], v) for k, v in out.items()}


LIVE = _live(
    "example.com. 3600 SOA ns1.example.com. hostmaster.example.com. 7 7200 900 1209600 600",
    "example.com. 3600 NS ns1.example.com.", "example.com. 3600 NS ns.other.net.",
    "ns1.example.com. 3600 A 192.0.2.53",
    "example.com. 3600 MX 10 mail.example.com.", "example.com. 3600 MX 20 mx.other.net.",
    "mail.example.com. 300 A 192.0.2.25",
    'example.com. 3600 TXT "v=spf1 -all"', 'example.com. 3600 TXT "one" "two"',
    "*.apps.example.com. 3600 A 192.0.2.80",
    "_sip._tcp.example.com. 3600 SRV 10 60 5060 sip.other.net.",
    'example.com. 3600 CAA 0 issue "letsencrypt.org"',
    "2.1.example.com. 3600 PTR host.other.net.",
    "example.com. 3600 RRSIG SOA 13 2 3600 20300101000000 20200101000000 1 example.com. AAAA",
)


def _round_trip(adopted: adopt.Adopted) -> dict[Key, rrsets.RRset]:
    """The RRsets the agent makes of the CRs, next to the cluster the DNSZone names."""
    cluster = {"apiVersion": "bindy.firestoned.io/v1beta1", "kind": "Bind9Cluster",
               "metadata": {"name": "dns", "namespace": "dns"}, "spec": {}}
    manifest = parse.load_text(adopt.to_yaml([cluster, adopted.zone, *adopted.records]), "x.yaml",
                                default_namespace="dns")
    state = hierarchy.build(manifest)
    assert manifest.ok and not [p for p in state.problems if p.severity.value == "error"], state.problems
    return state.zones[0].rrsets


def test_the_crs_expand_to_exactly_the_live_rrsets_but_soa_apex_ns_and_what_has_no_kind() -> None:
    adopted = adopt.adopt(ZONE, LIVE, namespace="dns", cluster_ref="dns")
    assert adopt.check(adopted, namespace="dns") == []
    # the apex NS too: since issue 26 it is one of the DNSZone's own RRsets (its nameServers)
    kept = {k: v for k, v in LIVE.items() if k[1] not in ("SOA", "PTR", "RRSIG")}
    assert _round_trip(adopted) == kept
    spec = adopted.zone["spec"]
    assert spec["soaRecord"] == {"primaryNs": "ns1.example.com.", "adminEmail": "hostmaster.example.com.",
                                 "serial": 7, "refresh": 7200, "retry": 900, "expire": 1209600, "negativeTtl": 600}
    assert spec["nameServers"] == [{"hostname": "ns.other.net."},
                                   {"hostname": "ns1.example.com.", "ipv4Address": "192.0.2.53"}]
    assert (spec["ttl"], spec["clusterRef"]) == (3600, "dns")
    assert adopted.skipped == [
        "2.1.example.com. PTR: no Bindy record kind for PTR",
        "example.com. RRSIG: DNSSEC data, which BIND makes itself when it signs the zone"]


def test_names_are_kubernetes_names_and_unique() -> None:
    adopted = adopt.adopt(ZONE, LIVE, namespace="dns")
    names = [r["metadata"]["name"] for r in adopted.records]
    assert len(set(names)) == len(names)
    assert "example-com-apex-mx-1" in names and "example-com-wildcard-apps-a" in names
    assert "example-com-sip-tcp-srv" in names
    assert adopt.slug("x" * 80 + ".example.com.") != adopt.slug("x" * 80 + ".example.org.")
    assert len(adopt.slug("x" * 300)) == 63
    mail = next(r for r in adopted.records if r["spec"]["name"] == "mail")
    assert mail["spec"]["ttl"] == 300  # only where it differs from the zone's
    assert "ttl" not in next(r for r in adopted.records if r["kind"] == "SRVRecord")["spec"]


def test_a_record_the_agent_would_refuse_is_skipped_with_the_reason() -> None:
    live = {**LIVE, **_live('bell.example.com. 3600 TXT "ring\\007"')}
    adopted = adopt.adopt(ZONE, live, namespace="dns")
    assert adopt.check(adopted, namespace="dns") == []
    assert "bell.example.com. TXT: spec.text[0]: contains a control character" in adopted.skipped
    assert not [r for r in adopted.records if r["spec"]["name"] == "bell"]
