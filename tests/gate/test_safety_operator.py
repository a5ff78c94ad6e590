"""The safety gate is the operator's, not the repository's.

Through the CLI, without servers: `plan HEAD --base-dir BASE -o json` gates the delta from BASE to
HEAD as a sync gates its plan (the same safety.check, the same operator flags), and `validate`
says what it ignores. A repository can only make the gate stricter: the DNSZone annotation
allow-unsafe-plan relaxes nothing, and delete-threshold-percent counts only where it is lower than
the operator's --delete-threshold-percent. Each threshold and the apex-NS refusal is attacked on both
sides of its limit, so a test fails when the check is removed.
"""

from __future__ import annotations

import json
import pathlib
import shutil
from typing import Any

import pytest
import yaml

from tests.conftest import SAMPLE
from tests.support import clirun

ZONE_FILE = pathlib.Path("zones") / "example-com.yaml"
RECORDS = pathlib.Path("records") / "example-com"
FORCE = "bindy.firestoned.io/allow-unsafe-plan"
THRESHOLD = "bindy.firestoned.io/delete-threshold-percent"
# example.com has 17 managed RRsets the delete threshold counts (15 records' and the glue of its 2 name
# servers; not the apex NS): these documents are 2, 5 and 6 of them
TWO = ("sip-tcp", "sip1")
FIVE = (*TWO, "lab-delegation", "lab-glue", "caa-letsencrypt", "caa-iodef")
SIX = (*FIVE, "shop")
OPERATOR_FORCE = "the operator can allow it for one run with `bindy-agent sync --force`"


def _copy(tmp_path: pathlib.Path, name: str, *, annotations: dict[str, str] | None = None,
          drop: tuple[str, ...] = ()) -> pathlib.Path:
    """The sample repository with annotations on example.com's DNSZone and some record documents dropped."""
    root = tmp_path / name
    shutil.copytree(SAMPLE, root)
    if annotations:
        text = (root / ZONE_FILE).read_text()
        lines = "".join(f'    {k}: "{v}"\n' for k, v in annotations.items())
        (root / ZONE_FILE).write_text(text.replace("  namespace: dns-system\n",
                                                   f"  namespace: dns-system\n  annotations:\n{lines}", 1))
    for path in sorted((root / RECORDS).glob("*.yaml")) if drop else []:
        docs = [d for d in path.read_text().split("---\n") if yaml.safe_load(d)["metadata"]["name"] not in drop]
        path.write_text("---\n".join(docs))
    return root


def _plan(head: pathlib.Path, base: pathlib.Path, *flags: str) -> tuple[clirun.Result, dict[str, Any]]:
    result = clirun.main("plan", str(head), "--base-dir", str(base), "-o", "json", "--detailed-exitcode", *flags)
    assert result.returncode == 2, result.stderr  # changes (refused or not), as --detailed-exitcode says them
    return result, json.loads(result.stdout)


def _dns_deletes(doc: dict[str, Any]) -> int:
    return sum(1 for c in doc["changes"] if c["action"] == "delete" and "zone" in c["target"])


def _line(path: pathlib.Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# -- the operator's threshold, on both sides of it ----------------------------------------------------

def test_the_default_threshold_allows_5_of_17_deletes_and_refuses_6(tmp_path: pathlib.Path) -> None:
    base = _copy(tmp_path, "base")
    _, five = _plan(_copy(tmp_path, "five", drop=FIVE), base)
    assert _dns_deletes(five) == 5 and five.get("refusals", []) == []
    _, six = _plan(_copy(tmp_path, "six", drop=SIX), base)
    assert _dns_deletes(six) == 6
    assert six["refusals"] == [
        "zone example.com.: refusing to delete 6 of 17 managed RRsets (35%); the limit is 30% for zones with at "
        f"least 10 managed RRsets; {OPERATOR_FORCE} (for `bindy-agent run`: the setting force, --force or "
        "BINDY_AGENT_FORCE=true); a DNSZone annotation cannot relax the gate, or raise the agent's delete threshold "
        "(--delete-threshold-percent, BINDY_AGENT_DELETE_THRESHOLD_PERCENT)"]


def test_the_operator_raises_the_threshold_with_a_flag(tmp_path: pathlib.Path) -> None:
    base, head = _copy(tmp_path, "base"), _copy(tmp_path, "head", drop=SIX)
    assert _plan(head, base, "--delete-threshold-percent", "40")[1].get("refusals", []) == []
    assert len(_plan(head, base, "--delete-threshold-percent", "35")[1]["refusals"]) == 1  # 6/17 is 35.3%


@pytest.mark.parametrize("value", ["-1", "101", "30%", "x"])
def test_the_operator_threshold_is_a_whole_percentage(tmp_path: pathlib.Path, value: str) -> None:
    result = clirun.main("validate", str(SAMPLE), "--delete-threshold-percent", value)
    assert result.returncode == 2 and "--delete-threshold-percent" in result.stderr and "Traceback" not in result.stderr


# -- what a repository may say ----------------------------------------------------------------------

def test_allow_unsafe_plan_in_the_repository_relaxes_nothing(tmp_path: pathlib.Path) -> None:
    base = _copy(tmp_path, "base", annotations={FORCE: "true"})
    head = _copy(tmp_path, "head", annotations={FORCE: "true"}, drop=SIX)
    result, doc = _plan(head, base)
    assert len(doc["refusals"]) == 1 and "refusing to delete 6 of 17" in doc["refusals"][0]
    assert OPERATOR_FORCE in doc["refusals"][0]
    where = f"{ZONE_FILE}:{_line(head / ZONE_FILE, FORCE)}"
    assert f"{where}: DNSZone/dns-system/example-com: metadata.annotations.{FORCE}: ignored" in result.stderr


def test_validate_warns_at_the_annotation_and_says_what_the_operator_does(tmp_path: pathlib.Path) -> None:
    root = _copy(tmp_path, "repo", annotations={FORCE: "true", THRESHOLD: "50"})
    result = clirun.main("validate", str(root))
    assert result.returncode == 0, result.stderr  # warnings: the revision is valid, the annotations ignored
    force_at = f"{ZONE_FILE}:{_line(root / ZONE_FILE, FORCE)}"
    threshold_at = f"{ZONE_FILE}:{_line(root / ZONE_FILE, THRESHOLD)}"
    assert (f"{force_at}: DNSZone/dns-system/example-com: metadata.annotations.{FORCE}: ignored: {FORCE}: \"true\" "
            "no longer relaxes the safety gate (a repository may only make it stricter); to apply a plan the gate "
            "refuses, the operator runs `bindy-agent sync --force` (for `bindy-agent run`: the setting force) or "
            "raises the agent's setting --delete-threshold-percent (BINDY_AGENT_DELETE_THRESHOLD_PERCENT); remove "
            "the annotation") in result.stderr
    assert (f"{threshold_at}: DNSZone/dns-system/example-com: metadata.annotations.{THRESHOLD}: ignored: 50% is "
            "higher than the agent's delete threshold (30%)") in result.stderr
    # the operator's threshold decides what is "higher"
    quiet = clirun.main("validate", str(root), "--delete-threshold-percent", "60")
    assert "50% is higher" not in quiet.stderr and f"{FORCE}: ignored" in quiet.stderr


def test_a_higher_threshold_in_the_repository_is_ignored(tmp_path: pathlib.Path) -> None:
    base = _copy(tmp_path, "base", annotations={THRESHOLD: "50"})
    head = _copy(tmp_path, "head", annotations={THRESHOLD: "50"}, drop=SIX)
    result, doc = _plan(head, base)
    assert len(doc["refusals"]) == 1 and "the limit is 30%" in doc["refusals"][0]
    assert "50% is higher than the agent's delete threshold (30%)" in result.stderr


def test_a_lower_threshold_in_the_repository_is_honoured(tmp_path: pathlib.Path) -> None:
    base = _copy(tmp_path, "base", annotations={THRESHOLD: "10"})
    head = _copy(tmp_path, "head", annotations={THRESHOLD: "10"}, drop=TWO)  # 2 of 17: 12%
    result, doc = _plan(head, base)
    assert doc["refusals"] == [
        "zone example.com.: refusing to delete 2 of 17 managed RRsets (12%); the limit is 10% for zones with at "
        f"least 10 managed RRsets; {OPERATOR_FORCE} (for `bindy-agent run`: the setting force, --force or "
        "BINDY_AGENT_FORCE=true); a DNSZone annotation cannot relax the gate, or raise the agent's delete threshold "
        "(--delete-threshold-percent, BINDY_AGENT_DELETE_THRESHOLD_PERCENT)"]
    assert "ignored" not in result.stderr  # stricter: nothing to warn about
    # without the annotation the same delta passes the operator's 30%
    assert _plan(_copy(tmp_path, "plain", drop=TWO), _copy(tmp_path, "plainbase"))[1].get("refusals", []) == []


def test_a_malformed_threshold_is_an_error_at_its_line(tmp_path: pathlib.Path) -> None:
    root = _copy(tmp_path, "repo", annotations={THRESHOLD: "lots"})
    result = clirun.main("validate", str(root))
    assert result.returncode == 1
    assert (f"{ZONE_FILE}:{_line(root / ZONE_FILE, THRESHOLD)}: DNSZone/dns-system/example-com: "
            f"metadata.annotations.{THRESHOLD}: 'lots' is not a whole percentage from 0 to 100") in result.stderr


def test_a_zone_that_leaves_git_is_refused_whatever_its_last_annotations_said(tmp_path: pathlib.Path) -> None:
    base = _copy(tmp_path, "base", annotations={FORCE: "true", THRESHOLD: "100"})
    head = _copy(tmp_path, "head")
    (head / ZONE_FILE).unlink()
    shutil.rmtree(head / RECORDS)  # its records go with it: left behind they would be in no zone (an error)
    _, doc = _plan(head, base)
    zone_refusals = [r for r in doc["refusals"] if r.startswith("zone ")]  # (deleting its 17 CRs is a prune too)
    assert len(zone_refusals) == 1
    assert zone_refusals[0].startswith("zone example.com.: refusing to delete the whole zone from 2 server(s)")
    assert OPERATOR_FORCE in zone_refusals[0]
    # the operator can allow it: a threshold of 100% allows deleting whole zones
    refusals = _plan(head, base, "--delete-threshold-percent", "100")[1].get("refusals", [])
    assert [r for r in refusals if r.startswith("zone ")] == []


# -- the apex NS set ---------------------------------------------------------------------------------

def _apex_ns(root: pathlib.Path, *servers: str) -> None:
    """An NSRecord at the apex: Git then declares the apex NS set, and the RRset plan carries it."""
    (root / "records" / "example-com" / "apex-ns.yaml").write_text("---\n".join(
        f"apiVersion: bindy.firestoned.io/v1beta1\nkind: NSRecord\nmetadata: {{name: apex-{i}, namespace: dns-system, "
        f"labels: {{zone: example-com}}}}\nspec: {{name: \"@\", nameserver: {server}}}\n"
        for i, server in enumerate(servers)))


@pytest.mark.parametrize("annotations", [{}, {FORCE: "true", THRESHOLD: "100"}])
def test_changing_the_apex_ns_set_is_a_declared_change(tmp_path: pathlib.Path, annotations: dict[str, str]) -> None:
    # issue 26: an edit that leaves the apex with name servers is applied (deleting the apex NS set stays
    # refused: tests/desired/test_nameservers.py)
    base = _copy(tmp_path, "base", annotations=annotations)
    _apex_ns(base, "ns1.example.net.", "ns2.example.net.")
    head = _copy(tmp_path, "head", annotations=annotations)
    _apex_ns(head, "ns1.example.net.", "ns3.example.net.")
    _, doc = _plan(head, base, "--delete-threshold-percent", "100")
    assert doc.get("refusals", []) == []
    (apex,) = [c for c in doc["changes"] if c["target"].get("type") == "NS" and c["target"].get("name") == "example.com."]
    assert apex["action"] == "update" and "ns3.example.net." in apex["after"]["values"]
    # the same zone with the same apex NS set and another change passes
    other = _copy(tmp_path, "other", annotations=annotations)
    _apex_ns(other, "ns1.example.net.", "ns2.example.net.")
    web = other / "records" / "example-com" / "web.yaml"
    web.write_text(web.read_text().replace("    - 192.0.2.12\n", "    - 192.0.2.13\n"))
    assert _plan(other, base)[1].get("refusals", []) == []
