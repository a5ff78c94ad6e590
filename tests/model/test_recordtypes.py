"""A record type is one module: registered, a type of its own (here an SVCB-like `SVCBRecord`, with a
shorthand and a host field) is a kind with its model, its JSON Schema and CRD, its rdata, its place in
`import` and in the RBAC of deploy/ - with no other module edited. And the eight built-in types are what
the kinds table, the import table and admission say."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

import dns.rdata
import dns.rdataclass
import dns.rdatatype
import pytest
import yaml

from agent.desired import adopt, recorddata
from agent.desired.rrsets import RRset
from agent.load import admission, shorthand
from agent.model import kinds, rbac, records, recordtypes, schema
from agent.model.base import Port
from agent.model.recordtypes.values import host
from tests.conftest import ROOT


class SVCBRecordSpec(records.RecordSpec):
    priority: Port
    target: str


class SVCBRecord(records.Record):
    """A service binding."""

    kind: Literal["SVCBRecord"]
    spec: SVCBRecordSpec


class SVCB(recordtypes.RecordType):
    kind, rtype, short, model = "SVCBRecord", "SVCB", "svcb", SVCBRecord
    columns = (("Target", "string", ".spec.target"),)
    targets = ("spec.target",)

    def rdatas(self, spec: SVCBRecordSpec) -> list[dns.rdata.Rdata]:
        target = host(spec.target, "spec.target")
        return [dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.SVCB, f"{spec.priority} {target}")]

    def identity(self, spec: SVCBRecordSpec) -> tuple[object, ...]:
        return ("SVCB", spec.priority, spec.target)

    def from_rdata(self, values: list[Any]) -> list[dict[str, Any]]:
        return [{"priority": r.priority, "target": r.target.to_text()} for r in values]


@pytest.fixture
def svcb() -> Iterator[recordtypes.RecordType]:
    with recordtypes.registered(SVCB()) as registered:
        yield registered
    assert "SVCBRecord" not in kinds.KINDS and recordtypes.of_rtype("SVCB") is None


def _doc(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": kinds.API_VERSION, "kind": "SVCBRecord", "metadata": {"name": "svc", "namespace": "dns"},
            "spec": {"name": "_svc", **spec}}


def test_a_registered_type_is_a_kind_with_its_model_and_columns(svcb: recordtypes.RecordType) -> None:
    kind = kinds.KINDS["SVCBRecord"]
    assert kind.model is SVCBRecord and kind.record_type == "SVCB" and kind.namespaced
    assert (kind.plural, kind.short_names, kind.crd_name) == ("svcbrecords", ("svcb",), "svcbrecords.bindy.firestoned.io")
    assert [c[0] for c in kind.columns] == ["Name", "Zone", "Target", "TTL", "Ready"]
    assert recordtypes.of_kind("SVCBRecord") is svcb is recordtypes.of_rtype("SVCB")


def test_a_registered_type_has_its_json_schema_and_crd(svcb: recordtypes.RecordType) -> None:
    files = schema.rendered()
    json_schema = json.loads(files["json/SVCBRecord.json"])
    assert json_schema["$id"].endswith("/SVCBRecord.json")
    assert set(json_schema["$defs"]["SVCBRecordSpec"]["properties"]) == {"name", "ttl", "zone", "priority", "target"}
    crd = yaml.safe_load(files["crds/svcbrecords.bindy.firestoned.io.yaml"])
    version = crd["spec"]["versions"][0]
    assert crd["spec"]["names"]["kind"] == "SVCBRecord" and crd["spec"]["scope"] == "Namespaced"
    assert set(version["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"]) == {"name", "priority", "target"}
    assert {"name": "Target", "type": "string", "jsonPath": ".spec.target"} in version["additionalPrinterColumns"]
    assert "svcbrecords.bindy.firestoned.io.yaml" in files["crds/kustomization.yaml"]


def test_a_registered_type_renders_its_rdata_and_refuses_a_bad_value_at_its_field(
        svcb: recordtypes.RecordType) -> None:
    record = SVCBRecord.from_document(_doc({"priority": 1, "target": "svc.example.com."}))
    assert [r.to_text() for r in recorddata.rdatas(record)] == ["1 svc.example.com."]
    assert list(recorddata.values(record)) == ["1 svc.example.com."]
    bad = SVCBRecord.from_document(_doc({"priority": 1, "target": "svc.example.com"}))
    with pytest.raises(recorddata.RecordError) as caught:
        recorddata.values(bad)
    assert caught.value.path == "spec.target" and "must be fully qualified" in str(caught.value)


def test_a_registered_type_is_imported_from_a_live_zone_and_reads_back_the_same(svcb: recordtypes.RecordType) -> None:
    zone = "example.com."
    live = {(zone, "SOA"): RRset(zone, zone, "SOA", 3600, ("ns1.example.com. admin.example.com. 1 3600 600 86400 300",)),
            (f"_svc.{zone}", "SVCB"): RRset(zone, f"_svc.{zone}", "SVCB", 3600,
                                            ("1 a.example.net.", "2 b.example.net."))}
    adopted = adopt.adopt(zone, live, namespace="dns")
    assert adopted.skipped == []
    assert [(r["kind"], r["spec"]) for r in adopted.records] == [
        ("SVCBRecord", {"name": "_svc", "priority": 1, "target": "a.example.net."}),
        ("SVCBRecord", {"name": "_svc", "priority": 2, "target": "b.example.net."})]
    read_back = [text for r in adopted.records for text in recorddata.values(SVCBRecord.from_document(r))]
    assert read_back == list(live[(f"_svc.{zone}", "SVCB")].rdatas)


def test_a_registered_type_is_in_the_rbac_of_deploy(svcb: recordtypes.RecordType) -> None:
    role = rbac.render((ROOT / "deploy/target/role.yaml").read_text())
    crds = rbac.render((ROOT / "deploy/rbac-crds.yaml").read_text())
    assert '"caarecords", "svcbrecords"]' in role and '"caarecords/status", "svcbrecords/status"]' in role
    assert '"caarecords.bindy.firestoned.io",\n' in crds and '"svcbrecords.bindy.firestoned.io"]' in crds


def test_a_registered_type_has_its_host_fields_read_by_the_target_rules(svcb: recordtypes.RecordType) -> None:
    assert admission.target_fields("SVCBRecord") == ("spec.target",)
    record = SVCBRecord.from_document(_doc({"priority": 1, "target": "svc..example.com"}))
    found = [(".".join(map(str, v.loc)), v.rule.name) for v in admission.violations("SVCBRecord", record)]
    assert found == [("spec.target", "target-absolute")]  # one violation per field: the first rule's
    record = SVCBRecord.from_document(_doc({"priority": 1, "target": "svc.example.com.", "name": "-bad"}))
    assert [v.rule.name for v in admission.violations("SVCBRecord", record)] == ["dns-name-dots"]


def test_the_built_in_types_are_the_kinds_and_the_import_table() -> None:
    types = recordtypes.every()
    assert [t.kind for t in types] == [k.name for k in kinds.RECORD_KINDS] == [
        "ARecord", "AAAARecord", "CNAMERecord", "MXRecord", "TXTRecord", "NSRecord", "SRVRecord", "CAARecord"]
    for module, record_type in zip(recordtypes.BUILT_IN, types, strict=True):
        assert (record_type.short, record_type.rtype) == (module, module.upper())
        assert record_type.model.__module__ == f"agent.model.recordtypes.{module}"
        assert recordtypes.REGISTRY[record_type.kind] is record_type
    modules = {p.stem for p in (ROOT / "agent/model/recordtypes").glob("*.py")} - {"__init__", "values", "addresses"}
    assert modules == set(recordtypes.BUILT_IN), "a type's module is listed in recordtypes.BUILT_IN"
    assert {t.kind: t.targets for t in types if t.targets} == {
        "CNAMERecord": ("spec.target",), "MXRecord": ("spec.mailServer",), "NSRecord": ("spec.nameserver",),
        "SRVRecord": ("spec.target",)}
    assert {t.rtype: t.integrity_field for t in types if t.integrity_field} == {
        "MX": "spec.mailServer", "NS": "spec.nameserver", "SRV": "spec.target"}
    assert {t.kind: t.shorthand for t in types if t.shorthand} == {
        "ARecord": (("ipv4", "ipv4Addresses"),), "AAAARecord": (("ipv6", "ipv6Addresses"),)}
    doc = {"spec": {"name": "www", "ipv6": "2001:db8::1"}}
    assert shorthand.normalise("AAAARecord", doc) == [("spec.ipv6", "shorthand: use spec.ipv6Addresses: [...]", False)]
    assert doc["spec"] == {"name": "www", "ipv6Addresses": ["2001:db8::1"]}


def test_a_kind_that_is_no_record_type_is_refused() -> None:
    for kind in ("DNSZone", "SOARecord", "Record", "arecord"):
        with pytest.raises(KeyError):
            recordtypes.of_kind(kind)
    with pytest.raises(ValueError, match="its kind must be SVCBRecord"):
        recordtypes.register(type("Odd", (SVCB,), {"kind": "ServiceRecord"})())
