"""A repository is read with the YAML schema Kubernetes reads (go-yaml v2 through sigs.k8s.io/yaml),
through the CLI:

- A tag outside the core schema (!!binary, !!set, !!timestamp, !!python/..., !foo) is an error at
  its file:line and field, naming the tag and saying what to write instead.
- A malformed scalar (a bad date, `!!int abc`, a 5,000-digit integer, 1e999999999) is an error at
  file:line or, when Kubernetes reads it as text, text: never exit 70, never a traceback.
- Dates and base-60 numbers are plain strings (a 3 MB base-60 number took minutes); yes/no/on/off
  and y/n are booleans, 0777 and 0o17 octal, 0x1F hex, as go-yaml v2 reads them.
- The settings file and the endpoint map refuse bad scalars the same way."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from tests.conftest import Repo
from tests.support.clirun import Result, main

BASE = """apiVersion: bindy.firestoned.io/v1beta1
kind: Bind9Cluster
metadata: {name: dns, namespace: dns-system}
spec: {}
---
apiVersion: bindy.firestoned.io/v1beta1
kind: DNSZone
metadata: {name: example, namespace: dns-system}
spec:
  zoneName: example.com
  clusterRef: dns
  recordsFrom: [{selector: {matchLabels: {zone: example.com}}}]
  soaRecord: {primaryNs: ns1.example.com., adminEmail: admin.example.com., serial: 1,
              refresh: 3600, retry: 600, expire: 604800, negativeTtl: 300}
"""


# r.yaml: the TXT record's ttl is on line 6, its first text on line 8
TXT = """apiVersion: bindy.firestoned.io/v1beta1
kind: TXTRecord
metadata: {name: t, namespace: dns-system, labels: {zone: example.com}}
spec:
  name: www
  ttl: %(ttl)s
  text:
  - %(text)s
"""


TTL_LINE, TEXT_LINE = 6, 8


def _repo(repo: Repo, ttl: str = "300", text: str = "hello") -> pathlib.Path:
    repo.add("base.yaml", BASE)
    (repo.root / "r.yaml").write_text(TXT % {"ttl": ttl, "text": text})
    return repo.root


def _three(root: pathlib.Path) -> tuple[Result, Result, Result, dict[str, Any]]:
    """validate, plan and plan -o json of the repository, and the JSON plan (which must parse)."""
    validated, planned, as_json = (main("validate", str(root)), main("plan", str(root)),
                                   main("plan", str(root), "-o", "json"))
    for result in (validated, planned, as_json):
        assert result.returncode != 70 and "Traceback" not in result.stderr, result.stderr
    return validated, planned, as_json, json.loads(as_json.stdout)


def _refused(root: pathlib.Path, line: int, path: str, message: str) -> None:
    """Each of the three verbs refuses the revision with this problem at r.yaml:line."""
    validated, planned, as_json, plan = _three(root)
    assert validated.returncode == 1 and planned.returncode == 1 and as_json.returncode == 1
    for result in (validated, planned):
        assert f"r.yaml:{line}: {path}: {message}" in result.stderr, result.stderr
    assert any(p["file"] == "r.yaml" and p["line"] == line and p["path"] == path and p["message"].startswith(message)
               for p in plan["problems"]), plan["problems"]
    assert plan["changes"] == []


def _accepted(root: pathlib.Path) -> dict[str, Any]:
    validated, planned, as_json, plan = _three(root)
    assert (validated.returncode, planned.returncode, as_json.returncode) == (0, 0, 0), validated.stderr
    return plan


def _txt(plan: dict[str, Any]) -> dict[str, Any]:
    """The TXT record's spec as the plan carries it."""
    found = [c for c in plan["changes"] if c["layer"] == "kubernetes" and c["target"]["kind"] == "TXTRecord"]
    assert len(found) == 1, plan["changes"]
    spec: dict[str, Any] = found[0]["after"]["spec"]
    return spec


CORE = "is not in the core schema Kubernetes reads (only !!str, !!int, !!float, !!bool, !!null, !!map, !!seq)"


@pytest.mark.parametrize(("value", "tag", "advice"), [
    ("!!binary aGVsbG8=", "!!binary", "Kubernetes carries binary data as base64 text: remove the tag and keep the text"),
    ("!!set {a, b}", "!!set", "write a list instead"),
    ("!!omap [{a: 1}]", "!!omap", "write a mapping instead"),
    ("!!pairs [{a: 1}]", "!!pairs", "write a mapping instead"),
    ("!!timestamp 2001-12-14", "!!timestamp", "a date or time is text in Kubernetes: remove the tag"),
    ("!!python/name:os.system x", "!!python/name:os.system", "a Python object is not data: write the value out"),
    ("!!python/object/apply:os.system [true]", "!!python/object/apply:os.system",
     "a Python object is not data: write the value out"),
    ("!foo bar", "!foo", "remove the tag (and quote the value if it is text)"),
    ("!<tag:example.com,2024:x> y", "!<tag:example.com,2024:x>", "remove the tag (and quote the value if it is text)"),
])
def test_a_tag_outside_the_core_schema_is_an_error_at_its_line(repo: Repo, value: str, tag: str, advice: str) -> None:
    _refused(_repo(repo, text=value), TEXT_LINE, "spec.text[0]", f"YAML tag {tag} {CORE}; {advice}")


def test_a_tag_on_a_key_or_in_a_document_with_aliases_is_refused_too(repo: Repo) -> None:
    root = _repo(repo)
    (root / "r.yaml").write_text(TXT.replace("labels: {zone: example.com}", "labels: {zone: &z example.com, "
                                             "!!binary eg==: *z}") % {"ttl": "300", "text": "hello"})
    _refused(root, 3, "metadata.labels.eg==", f"YAML tag !!binary {CORE}")


def test_a_bad_document_does_not_hide_the_next_one(repo: Repo) -> None:
    root = _repo(repo, ttl="!!int abc")
    with (root / "r.yaml").open("a") as f:
        f.write("---\n" + (TXT % {"ttl": "!!float xyz", "text": "x"}).replace("name: t,", "name: u,"))
    validated = main("validate", str(root))
    assert validated.returncode == 1
    assert f"r.yaml:{TTL_LINE}: spec.ttl: 'abc' is tagged !!int" in validated.stderr
    assert f"r.yaml:{TTL_LINE + 9}: spec.ttl: 'xyz' is tagged !!float" in validated.stderr


@pytest.mark.parametrize(("ttl", "message"), [
    ("!!int abc", "'abc' is tagged !!int but is not an integer; write an integer, or remove the tag if it is text"),
    ("!!int 1.5", "'1.5' is tagged !!int but is not an integer"),
    ("!!float xyz", "'xyz' is tagged !!float but is not a number; write a number, or remove the tag if it is text"),
    ("!!bool maybe", "'maybe' is tagged !!bool but is not true or false"),
    ("!!null x", "'x' is tagged !!null but is not null (~)"),
    ("!!str {a: 1}", "a mapping tagged !!str: remove the tag, or write a value there"),
    ("1" * 5000, "the integer '111111111111111111111111'... (5,000 characters) does not fit in 64 bits, the most a "
                 "Kubernetes number holds; quote it if it is text"),
    ("-0x" + "f" * 17, "the integer '-0xfffffffffffffffff' does not fit in 64 bits"),
    ("1e999999999", "the number '1e999999999' is out of range (a double's); write a smaller number, or quote it if "
                    "it is text"),
    ("-1.5e+99999", "the number '-1.5e+99999' is out of range"),
    (".inf", ".inf is not a number JSON can carry, so Kubernetes cannot read it"),
    (".NaN", ".NaN is not a number JSON can carry"),
])
def test_a_malformed_scalar_is_an_error_at_its_line(repo: Repo, ttl: str, message: str) -> None:
    path = "" if message.startswith("YAML syntax error") else "spec.ttl"
    validated, planned, as_json, plan = _three(_repo(repo, ttl=ttl))
    assert validated.returncode == 1 and planned.returncode == 1 and as_json.returncode == 1
    where = f"r.yaml:{TTL_LINE}: {path}: " if path else f"r.yaml:{TTL_LINE}: "
    assert where + message in validated.stderr and where + message in planned.stderr, validated.stderr
    assert any(p["line"] == TTL_LINE and message in p["message"] for p in plan["problems"])


@pytest.mark.parametrize("value", ["2024-13-45", "2001-12-14t21:59:43.10+99:99", "2001-12-14", "1:20:30",
                                   "190:20:30.15", "2002-12-14 21:59:43.10 -5"])
def test_dates_and_base_60_numbers_are_text(repo: Repo, value: str) -> None:
    assert _txt(_accepted(_repo(repo, text=value)))["text"] == [value]
    # as a TTL: text, where the CRD wants an integer (1:20:30 was the TTL 4830)
    validated, _, _, plan = _three(_repo(repo, ttl=value))
    assert validated.returncode == 1
    assert [(p["line"], p["path"]) for p in plan["problems"]] == [(TTL_LINE, "spec.ttl")], plan["problems"]
    assert f"the string {value!r}" in plan["problems"][0]["message"]


def test_a_3_mb_base_60_number_is_read_as_text(repo: Repo) -> None:
    # YAML 1.1 read it as an integer, in time quadratic in its length: minutes (the test's 300 s timeout)
    huge = ":".join(["59"] * 1_000_000)
    validated, _, _, plan = _three(_repo(repo, ttl=huge))
    assert validated.returncode == 1
    [problem] = plan["problems"]
    assert (problem["line"], problem["path"]) == (TTL_LINE, "spec.ttl")
    assert "the string '59:59:59:" in problem["message"]


def test_a_quantity_with_a_huge_exponent_is_an_error(repo: Repo) -> None:
    repo.add("base.yaml", BASE)
    instance = """apiVersion: bindy.firestoned.io/v1beta1
kind: Bind9Instance
metadata: {name: i, namespace: dns-system}
spec:
  clusterRef: dns
  role: primary
  resources:
    requests: {cpu: %s}
"""
    (repo.root / "r.yaml").write_text(instance % "1e999999999")
    _refused(repo.root, 8, "spec.resources.requests.cpu", "the number '1e999999999' is out of range")
    for quoted in ('"1e999999999"', '"1e-999999999"', '"5e' + "9" * 5000 + '"'):
        (repo.root / "r.yaml").write_text(instance % quoted)
        validated, planned, _, plan = _three(repo.root)
        assert validated.returncode == 1 and planned.returncode == 1
        assert any(p["line"] == 8 and p["path"] == "spec.resources.requests.cpu" and "is not a Kubernetes quantity"
                   in p["message"] for p in plan["problems"]), plan["problems"]


@pytest.mark.parametrize(("ttl", "number"), [("0777", 511), ("0o17", 15), ("0x1F", 31), ("1_000", 1000),
                                             ("+300", 300), ("0b101", 5), ("18446744073709551615", None)])
def test_integers_are_read_as_go_yaml_reads_them(repo: Repo, ttl: str, number: int | None) -> None:
    if number is None:  # a uint64: read, then out of the CRD's range
        validated = main("validate", str(_repo(repo, ttl=ttl)))
        assert validated.returncode == 1 and "does not fit" not in validated.stderr and "spec.ttl" in validated.stderr
        return
    assert _txt(_accepted(_repo(repo, ttl=ttl)))["ttl"] == number


@pytest.mark.parametrize("value", ["y", "n", "Yes", "off", "ON"])
def test_yaml_1_1_booleans_are_booleans_as_kubectl_sends_them(repo: Repo, value: str) -> None:
    validated = main("validate", str(_repo(repo, text=value)))
    assert validated.returncode == 1 and f"r.yaml:{TEXT_LINE}: TXTRecord/dns-system/t: spec.text[0]:" in validated.stderr
    assert _txt(_accepted(_repo(repo, text=f'"{value}"')))["text"] == [value]


def test_the_settings_file_and_the_endpoint_map_refuse_bad_scalars_without_a_traceback(tmp_path: pathlib.Path,
                                                                                     repo: Repo) -> None:
    etc = tmp_path.parent / f"{tmp_path.name}-etc"  # not in the repository (the repo fixture's tmp_path)
    etc.mkdir()
    config = etc / "settings.yaml"
    for text, message in (("interval: 2024-13-45\n", "setting interval: Input should be a valid number"),  # text
                          # the file's content is never quoted (it may be a secret given by mistake)
                          ("interval: " + "1" * 5000 + "\n", f"--config {config}: a value that is not plain data"),
                          ("interval: !!python/name:os.system x\n", f"--config {config}: a value that is not plain "
                                                                    "data")):
        config.write_text(text)
        result = main("run", "--config", str(config), "--print-config")
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert message in result.stderr, result.stderr
    endpoints = etc / "endpoints.yaml"
    root = _repo(repo)
    for text, message in (("instances:\n  dns/x: {dns: '127.0.0.1:1', api: 'http://127.0.0.1:1', tokenFile: "
                           + "9" * 5000 + "}\n", "a value that is not plain data"),
                          ("instances:\n  dns/x: {dns: '127.0.0.1:1', api: !!binary aGk=}\n", "a value that is not plain data")):
        endpoints.write_text(text)
        result = main("sync", str(root), "--dry-run", "--endpoints", str(endpoints))
        assert result.returncode == 3 and "Traceback" not in result.stderr, result.stderr  # sync's "could not run"
        assert f"endpoint map {endpoints}: {message}" in result.stderr and "line 2" in result.stderr, result.stderr
        assert "999" not in result.stderr


def test_sync_dry_run_refuses_a_malformed_scalar_with_its_line(tmp_path: pathlib.Path, repo: Repo) -> None:
    endpoints = tmp_path.parent / f"{tmp_path.name}-endpoints.yaml"
    endpoints.write_text("instances:\n  dns/x: {dns: '127.0.0.1:1', api: 'http://127.0.0.1:1'}\n")
    for ttl, message in (("2001-12-14t21:59:43.10+99:99", "spec.ttl:"), ("1" * 5000, "does not fit in 64 bits"),
                         ("!!binary aGk=", "YAML tag !!binary")):
        result = main("sync", str(_repo(repo, ttl=ttl)), "--dry-run", "--endpoints", str(endpoints))
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert f"r.yaml:{TTL_LINE}: " in result.stderr and message in result.stderr, result.stderr


@pytest.mark.parametrize("value", ["0b" + "1" * 1_000_000 + "2", "0x" + "f" * 1_000_000 + "g",
                                   "0o" + "7" * 1_000_000 + "8", "-0x_" + "_f" * 500_000 + "_g",
                                   "1." + "9" * 1_000_000 + ".", "1e" + "1" * 1_000_000 + "x"])
def test_a_1_mb_almost_number_is_read_as_text(repo: Repo, value: str) -> None:
    # 0b + 40,000 digits + 2 took 51 s, 0x + 80,000 digits + g 170 s (quadratic backtracking): a
    # megabyte would be hours, the test's 300 s timeout
    validated, _, _, plan = _three(_repo(repo, ttl=value))
    assert validated.returncode == 1
    [problem] = plan["problems"]
    assert (problem["line"], problem["path"]) == (TTL_LINE, "spec.ttl")
    assert f"the string {value[:24]!r}"[:-1] in problem["message"], problem["message"]


@pytest.mark.parametrize(("ttl", "message"), [
    ("!!map abc", "a value tagged !!map: remove the tag, or write a mapping there"),
    ("!!map [1]", "a list tagged !!map: remove the tag, or write a mapping there"),
    ("!!map", "a value tagged !!map: remove the tag"),
    ("!!seq {a: 1}", "a mapping tagged !!seq: remove the tag, or write a list there"),
    ("!!seq abc", "a value tagged !!seq: remove the tag, or write a list there"),
    ("!!str [1]", "a list tagged !!str: remove the tag, or write a value there"),
    ("!!int {a: 1}", "a mapping tagged !!int: remove the tag"),
    ("!!float [1]", "a list tagged !!float: remove the tag"),
    ("!!bool [true]", "a list tagged !!bool: remove the tag"),
    ("!!null {}", "a mapping tagged !!null: remove the tag"),
    ("&x !!map [1]", "a list tagged !!map: remove the tag"),  # an anchor: built the general way
])
def test_a_core_tag_on_the_wrong_kind_of_node_is_an_error_at_its_line(repo: Repo, ttl: str, message: str) -> None:
    # `!!map abc` and `!!map [1]` made validate, plan and sync exit 70
    _refused(_repo(repo, ttl=ttl), TTL_LINE, "spec.ttl", message)


@pytest.mark.parametrize(("document", "message"), [
    ("--- !!map [1]\n", "a list tagged !!map: remove the tag, or write a mapping there"),
    ("--- !!map\n- x\n", "a list tagged !!map: remove the tag"),
    ("--- !!seq\na: 1\n", "a mapping tagged !!seq: remove the tag, or write a list there"),
    ("--- !!str [1]\n", "a list tagged !!str: remove the tag"),
])
def test_a_document_tagged_with_the_wrong_kind_is_an_error_at_its_line(tmp_path: pathlib.Path, repo: Repo,
                                                                       document: str, message: str) -> None:
    root = _repo(repo)
    (root / "r.yaml").write_text(document)
    validated, planned, _, plan = _three(root)
    assert validated.returncode == 1 and planned.returncode == 1
    assert f"r.yaml:1: {message}" in validated.stderr and f"r.yaml:1: {message}" in planned.stderr, validated.stderr
    assert [(p["file"], p["line"]) for p in plan["problems"]] == [("r.yaml", 1)], plan["problems"]
    endpoints = tmp_path.parent / f"{tmp_path.name}-endpoints.yaml"
    endpoints.write_text("instances:\n  dns/x: {dns: '127.0.0.1:1', api: 'http://127.0.0.1:1'}\n")
    synced = main("sync", str(root), "--dry-run", "--endpoints", str(endpoints))
    assert synced.returncode == 2 and "Traceback" not in synced.stderr, synced.stderr
    assert f"r.yaml:1: {message}" in synced.stderr, synced.stderr
