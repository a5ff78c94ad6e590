"""The first zone a newcomer copies from the README or the docs: the YAML files a page gives, and the check
that they validate with no warning and plan a zone on a primary and a secondary with a record of every kind."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

from tests.conftest import ROOT

README = ROOT / "README.md"
AGENT = pathlib.Path(sys.executable).parent / "bindy-agent"
RECORD_TYPES = {"A", "AAAA", "CNAME", "MX", "TXT", "SRV", "CAA"}


def yaml_files(markdown: str) -> dict[str, str]:
    """Each ```yaml block of a page, under the file name the sentence before it gives (`my-dns/zone.yaml`: ...),
    else block-N.yaml."""
    files: dict[str, str] = {}
    for n, found in enumerate(re.finditer(r"^```yaml\n(.*?)\n```$", markdown, re.DOTALL | re.MULTILINE)):
        paragraph = markdown[:found.start()].rstrip("\n").rsplit("\n\n", 1)[-1]
        named = re.match(r"`(?:[\w.-]+/)?([\w.-]+\.ya?ml)`", paragraph)
        files[named.group(1) if named else f"block-{n}.yaml"] = found.group(1) + "\n"
    return files


def run_agent(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(AGENT), *args], capture_output=True, text=True, cwd=cwd, check=False, timeout=120)


def check_first_zone(files: dict[str, str], where: pathlib.Path) -> None:
    """The files validate with no warning, and plan a zone on a primary and a secondary with a record of every
    kind the first zone promises."""
    repo = where / "my-dns"
    repo.mkdir()
    for name, text in files.items():
        (repo / name).write_text(text)
    valid = run_agent("validate", "my-dns", cwd=where)
    assert valid.returncode == 0, valid.stdout + valid.stderr
    assert "valid (0 warnings)" in valid.stdout + valid.stderr, valid.stdout + valid.stderr
    planned = run_agent("plan", "my-dns", "-o", "json", cwd=where)
    assert planned.returncode == 0, planned.stderr  # planned: never an error
    plan = json.loads(planned.stdout)
    assert "invalid" not in plan and not [p for p in plan["problems"] if p.get("severity") == "error"], plan["problems"]
    records = {c["target"]["type"] for c in plan["changes"] if c["layer"] == "records"}
    assert records >= RECORD_TYPES, f"the first zone lacks {RECORD_TYPES - records}"
    zones = [c["target"] for c in plan["changes"] if c["layer"] == "zones"]
    assert len(zones) == 2, zones  # the zone on the cluster's primary and on its secondary
    kinds = {c["target"]["kind"] for c in plan["changes"] if c["layer"] == "kubernetes"}
    assert {"Bind9Cluster", "Bind9Instance", "Deployment", "DNSZone"} <= kinds, kinds
