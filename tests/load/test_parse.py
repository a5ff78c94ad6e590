"""Loaded models share their fields sets (memory at 100,000 records) without sharing their state,
and metadata is the plain dict of what a document sets."""

from __future__ import annotations

from agent.load import parse

TWO = """\
apiVersion: bindy.firestoned.io/v1beta1
kind: ARecord
metadata: {name: a, namespace: dns}
spec: {name: www, zone: example.com, ipv4Addresses: [192.0.2.1]}
---
apiVersion: bindy.firestoned.io/v1beta1
kind: ARecord
metadata: {name: b, namespace: dns}
spec: {name: api, zone: example.com, ipv4Addresses: [192.0.2.2]}
---
apiVersion: bindy.firestoned.io/v1beta1
kind: ARecord
metadata: {name: c, namespace: dns}
spec: {name: db, zone: example.com, ttl: 60, ipv4Addresses: [192.0.2.3]}
"""


def _models() -> list:  # type: ignore[type-arg]
    manifest = parse.load_text(TWO, "records.yaml", default_namespace="dns")
    assert manifest.ok, manifest.problems
    return [o.model for o in manifest.objects]


def test_objects_with_the_same_fields_share_one_set_and_others_keep_theirs() -> None:
    a, b, c = _models()
    assert a.spec.__pydantic_fields_set__ is b.spec.__pydantic_fields_set__
    assert a.__pydantic_fields_set__ is b.__pydantic_fields_set__
    assert c.spec.__pydantic_fields_set__ is not a.spec.__pydantic_fields_set__
    assert "ttl" in c.spec.model_fields_set and "ttl" not in a.spec.model_fields_set
    # what is sent to the cluster is still exactly what each document set
    assert "ttl" not in a.spec.model_dump(exclude_unset=True) and c.spec.model_dump(exclude_unset=True)["ttl"] == 60


def test_assigning_a_field_changes_that_object_only() -> None:
    a, b, _ = _models()
    a.spec.ttl = 30
    assert "ttl" in a.spec.model_fields_set and a.spec.model_dump(exclude_unset=True)["ttl"] == 30
    assert "ttl" not in b.spec.model_fields_set and "ttl" not in b.spec.model_dump(exclude_unset=True)
    again, _, _ = _models()  # and objects loaded later do not see it either
    assert "ttl" not in again.spec.model_fields_set


def test_metadata_keeps_what_the_document_sets_and_no_more() -> None:
    a, _, _ = _models()
    assert a.metadata == {"name": "a", "namespace": "dns"}
    manifest = parse.load_text("apiVersion: bindy.firestoned.io/v1beta1\nkind: ARecord\n"
                                "metadata: {name: x, labels: {app: web}, generate_name: x-}\n"
                                "spec: {name: www, zone: example.com, ipv4Addresses: [192.0.2.1]}\n", "bad.yaml")
    assert [str(p) for p in manifest.problems if p.severity == "error"] == [
        "bad.yaml:3: ARecord/dns-system/x: metadata.generate_name: unknown field (did you mean 'generateName'?)"]


def test_a_value_that_recurs_in_a_file_is_one_object_and_keeps_its_type() -> None:
    text = TWO.replace("spec: {name: www,", "spec: {ttl: 300, name: www,").replace("spec: {name: api,",
                                                                                  "spec: {ttl: 300, name: api,")
    text += ("---\napiVersion: bindy.firestoned.io/v1beta1\nkind: TXTRecord\nmetadata: {name: t, namespace: dns}\n"
             "spec: {name: '300', zone: example.com, text: ['300']}\n")
    manifest = parse.load_text(text, "records.yaml", default_namespace="dns")
    assert manifest.ok, manifest.problems
    a, b, _, txt = (o.model for o in manifest.objects)
    assert a.spec.ttl == 300 and a.spec.ttl is b.spec.ttl and a.spec.zone is b.spec.zone
    assert txt.spec.name == "300" and txt.spec.text == ["300"]  # the same text as a number elsewhere: still a str
