"""Record data (agent/desired/recorddata.py): an address is parsed once and renders as dnspython renders its
text, a scoped IPv6 address is refused as dnspython refuses it, a target host name is checked once per
distinct name and a refused one is refused every time with the same words."""

from __future__ import annotations

import ipaddress

import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.IN.AAAA
import pytest

from agent.desired import hierarchy as desired
from agent.desired import recorddata
from agent.model.problems import Severity
from agent.model.recordtypes import addresses
from agent.model.recordtypes.a import ARecord
from agent.model.recordtypes.aaaa import AAAARecord
from agent.model.recordtypes.srv import SRVRecord
from tests.conftest import Repo, load_dir

HEAD = "apiVersion: bindy.firestoned.io/v1beta1\n"


ZONE = HEAD + """kind: Bind9Cluster
metadata: {name: dns, namespace: dns}
spec: {}
---
""" + HEAD + """kind: DNSZone
metadata: {name: z, namespace: dns}
spec:
  zoneName: example.com
  clusterRef: dns
  soaRecord: {primaryNs: ns1.example.com., adminEmail: a.example.com., serial: 1, refresh: 1, retry: 1,
              expire: 1, negativeTtl: 1}
"""


def _record(kind: str, spec: dict[str, object]) -> object:
    model = {"AAAARecord": AAAARecord, "ARecord": ARecord, "SRVRecord": SRVRecord}[kind]
    return model.from_document({"apiVersion": "bindy.firestoned.io/v1beta1", "kind": kind,
                                "metadata": {"name": "r", "namespace": "dns"}, "spec": spec})


def _errors(repo: Repo) -> list[str]:
    manifest = load_dir(repo.root)
    state = desired.build(manifest)
    return sorted(str(p) for p in [*manifest.problems, *state.problems] if p.severity is Severity.ERROR)


def test_a_scoped_ipv6_address_is_still_refused_as_dnspython_refuses_it(repo: Repo) -> None:
    # ipaddress accepts a scope (`%eth0`), dnspython does not: the text, not the parsed address, goes on
    repo.add("r.yaml", ZONE + "---\n" + HEAD + """kind: AAAARecord
metadata: {name: a, namespace: dns}
spec: {zone: example.com, name: www, ipv6Addresses: ['2001:db8::1', 'fe80::1%eth0']}
---
""" + HEAD + """kind: ARecord
metadata: {name: b, namespace: dns}
spec: {zone: example.com, name: www4, ipv4Addresses: [192.0.2.1, 192.0.2.01]}
""")
    assert _errors(repo) == [
        "r.yaml:18: AAAARecord/dns/a: spec: invalid record data: Text input is malformed.",
        "r.yaml:23: ARecord/dns/b: spec.ipv4Addresses[1]: '192.0.2.01' is not an IPv4 address",
    ]


@pytest.mark.parametrize("text", ["2001:db8::1", "2001:DB8:0:0:0:0:0:1", "::", "::ffff:192.0.2.1", "::192.0.2.1",
                                  "64:ff9b::192.0.2.1", "1:0:0:1:0:0:0:1", "0001:0002::", "1:2:3:4:5:6:7::"])
def test_an_address_renders_as_dnspython_renders_its_text(text: str) -> None:
    record = _record("AAAARecord", {"name": "www", "ipv6Addresses": [text]})
    expected = dns.rdtypes.IN.AAAA.AAAA(dns.rdataclass.IN, dns.rdatatype.AAAA, text)
    assert recorddata.rdatas(record) == [expected]  # type: ignore[arg-type]
    assert list(recorddata.values(record)) == [expected.to_text()]  # type: ignore[arg-type]
    assert isinstance(addresses.addresses([text], "ipv6Addresses", ipaddress.IPv6Address)[0], ipaddress.IPv6Address)


def test_a_refused_target_is_refused_every_time_with_the_same_words() -> None:
    for _ in range(2):  # a refusal is not remembered as an answer
        with pytest.raises(recorddata.RecordError) as caught:
            recorddata.rdatas(_record("SRVRecord", {"name": "_x._tcp", "priority": 1, "weight": 1, "port": 1,  # type: ignore[arg-type]
                                                    "target": "srv.example.com"}))
        assert caught.value.path == "spec.target"
        assert "must be fully qualified with a trailing dot" in str(caught.value)
    good = {"name": "_x._tcp", "priority": 1, "weight": 1, "port": 1, "target": "srv.example.com."}
    first = recorddata.rdatas(_record("SRVRecord", {**good, "port": 2}))  # type: ignore[arg-type]
    second = recorddata.rdatas(_record("SRVRecord", {**good, "port": 3}))  # type: ignore[arg-type]
    assert first[0].target is second[0].target  # one checked name for every record that targets it
