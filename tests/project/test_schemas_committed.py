"""The committed schemas/ and the lists of kinds in deploy/'s RBAC are exactly what the models generate,
and our CRDs accept every spec field path of Bindy's CRDs (the list in tests/data was extracted once
from Bindy's CRD YAML)."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest
import yaml

from agent import cli
from agent.model import kinds, rbac, schema
from tests.conftest import ROOT

DATA = pathlib.Path(__file__).parents[1] / "data" / "bindy_spec_paths.txt"


def test_committed_schemas_match_the_models() -> None:
    files = schema.rendered()
    stale = [rel for rel, text in files.items() if (ROOT / "schemas" / rel).read_text() != text]
    assert stale == [], "run `bindy-agent schemas` and commit the result"
    assert cli.main(["schemas", "--check", "--dir", str(ROOT / "schemas")]) == 0


def test_schemas_check_fails_on_drift(tmp_path: pathlib.Path) -> None:
    assert cli.main(["schemas", "--dir", str(tmp_path)]) == 0
    target = tmp_path / "crds" / "arecords.bindy.firestoned.io.yaml"
    target.write_text(target.read_text().replace("minItems: 1", "minItems: 2"))
    assert cli.main(["schemas", "--check", "--dir", str(tmp_path)]) == 1


def test_committed_rbac_lists_every_kind_as_the_models_generate() -> None:
    for rel in rbac.FILES:
        text = (ROOT / "deploy" / rel).read_text()
        assert rbac.render(text) == text, f"deploy/{rel}: run `bindy-agent schemas` and commit the result"
    role = (ROOT / "deploy/target/role.yaml").read_text()
    for kind in kinds.KINDS.values():
        assert f'"{kind.crd_name}"' in (ROOT / "deploy/rbac-crds.yaml").read_text()
        assert (f'"{kind.plural}"' in role and f'"{kind.plural}/status"' in role) is kind.namespaced


def test_schemas_check_fails_when_a_list_of_kinds_in_deploy_drifts(tmp_path: pathlib.Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    deploy = tmp_path / "deploy"
    shutil.copytree(ROOT / "deploy", deploy)
    role = deploy / "target" / "role.yaml"
    role.write_text(role.read_text().replace(' "txtrecords/status",', ""))  # a kind's status forgotten
    argv = ["schemas", "--dir", str(ROOT / "schemas"), "--deploy", str(deploy)]
    assert cli.main([*argv, "--check"]) == 1
    assert f"{role}: its lists of kinds differ from the models; run `bindy-agent schemas`" in capsys.readouterr().err
    assert cli.main(argv) == 0
    assert role.read_text() == (ROOT / "deploy/target/role.yaml").read_text()
    assert cli.main([*argv, "--check"]) == 0


def _our_paths() -> dict[str, set[str]]:
    out = {}
    for kind in kinds.KINDS.values():
        spec = schema.crd(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        out[kind.name] = schema.spec_paths(spec)
    return out


def _covered(path: str, ours: set[str]) -> bool:
    if path in ours:
        return True
    # Below a loosely typed embedded Kubernetes object, anything is accepted.
    return any(path[:i] + ".*" in ours for i, ch in enumerate(path) if ch in ".[{")


def test_every_bindy_spec_field_path_exists_in_our_crds() -> None:
    ours = _our_paths()
    lines = DATA.read_text().split("\n")
    bindy = [line.split(" ", 1) for line in lines if line]
    assert len(bindy) > 1800
    missing = [f"{kind} {path}" for kind, path in bindy if not _covered(path, ours[kind])]
    assert missing == []


def test_seed_documented_extension_fields_are_in_the_schemas() -> None:
    ours = _our_paths()
    for kind in ("ClusterBind9Provider", "Bind9Cluster", "Bind9Instance"):
        assert "spec.zonesFrom[].selector.matchLabels" in ours[kind]
    assert "spec.clusterProviderRef" in ours["DNSZone"]
    zone_status = schema.crd(kinds.KINDS["DNSZone"])["spec"]["versions"][0]["schema"][
        "openAPIV3Schema"]["properties"]["status"]["properties"]
    assert {"selectionMethod", "selectedByInstance", "zoneHash"} <= set(zone_status)
    zone_columns = schema.crd(kinds.KINDS["DNSZone"])["spec"]["versions"][0][
        "additionalPrinterColumns"]
    assert [c["name"] for c in zone_columns][-4:] == ["Hash", "InSync", "Ready", "Revision"]
    inst_status = schema.crd(kinds.KINDS["Bind9Instance"])["spec"]["versions"][0]["schema"][
        "openAPIV3Schema"]["properties"]["status"]["properties"]
    assert "selectedZones" in inst_status


def test_crds_are_structural_with_status_and_printer_columns() -> None:
    for path in sorted((ROOT / "schemas" / "crds").glob("*.bindy.firestoned.io.yaml")):
        crd = yaml.safe_load(path.read_text())
        text = json.dumps(crd)
        assert "$ref" not in text and "anyOf" not in text and '"additionalProperties": false' not in text
        version = crd["spec"]["versions"][0]
        assert version["subresources"] == {"status": {}}
        names = [c["name"] for c in version["additionalPrinterColumns"]]
        revision = crd["spec"]["names"]["kind"] in ("ClusterBind9Provider", "Bind9Cluster", "DNSZone")
        assert names[-2:] == ["Ready", "Revision"] if revision else names[-1] == "Ready", path.name
    provider = yaml.safe_load((ROOT / "schemas/crds/clusterbind9providers.bindy.firestoned.io.yaml").read_text())
    assert provider["spec"]["scope"] == "Cluster"
    assert provider["spec"]["names"]["shortNames"] == ["cb9p", "cb9ps"]


def test_json_schema_rejects_unknown_fields_and_names_defaults() -> None:
    doc = json.loads((ROOT / "schemas/json/Bind9Instance.json").read_text())
    assert doc["additionalProperties"] is False
    spec = doc["$defs"]["Bind9InstanceSpec"]
    assert spec["required"] == ["clusterRef", "role"]
    assert doc["$defs"]["RndcSecretRef"]["properties"]["algorithm"]["default"] == "hmac-sha256"
