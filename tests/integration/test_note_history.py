"""A commit's note keeps what the commit did: a later run of the same commit (a resync repairing drift)
adds a dated entry after it, as `bindy-agent report` shows; the entries are bounded, and a note the
agent did not sign is replaced, never extended."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import dns.query
import dns.rcode
import dns.tsigkeyring
import dns.update
import pytest

from agent.clients import endpoints as config
from agent.clients import rfc2136 as records
from agent.outcome import notesignature, report
from agent.run import revisions
from agent.sources.git import GitSource
from tests.conftest import ROOT
from tests.support import bind as bind_support
from tests.support import dnsrepo
from tests.support.gitremote import GitRemote

KEY = "a report key of more than 32 characters"


def _agent(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agent", *args], capture_output=True, text=True, cwd=ROOT,
                          check=False, timeout=240)


def _report(remote: GitRemote, tmp: pathlib.Path, sha: str, key: pathlib.Path, *extra: str) -> Any:
    return _agent("report", sha, "--repo", remote.url, "--cache", str(tmp / "report-cache"),
                  "--report-key-file", str(key), *extra)


def _key(tmp: pathlib.Path) -> pathlib.Path:
    path = tmp / "report.key"
    path.write_text(KEY + "\n")
    return path


def _out_of_band(bind: bind_support.BindPair, zone: str, name: str, value: str) -> None:
    keyring = dns.tsigkeyring.from_text({bind_support.TSIG_NAME: ("hmac-sha256", bind.keys.tsig)})
    update = dns.update.UpdateMessage(zone, keyring=keyring, keyalgorithm="hmac-sha256")
    update.replace(name, 300, "A", value)
    assert dns.query.tcp(update, bind.primary.address, port=bind.primary.port, timeout=5).rcode() == dns.rcode.NOERROR


def test_a_resync_that_repairs_a_hand_edit_adds_a_dated_entry_after_what_the_commit_did(
        tmp_path: pathlib.Path, git_remote: GitRemote, bind: bind_support.BindPair, zone_api: Any) -> None:
    sample, tag = dnsrepo.unique_sample(tmp_path / "sample")
    endpoints_file = dnsrepo.endpoint_map(tmp_path, bind, zone_api)
    primary = config.load_endpoints(endpoints_file)["dns-system/dns-primary-0"]
    sha = git_remote.commit("Add DNS", {str(p.relative_to(sample)): p.read_text() for p in sample.rglob("*.yaml")})
    git_remote.push()
    key = _key(tmp_path)
    sync = ["sync", "--repo", git_remote.url, "--endpoints", str(endpoints_file), "--state", str(tmp_path / "state"),
            "--cache", str(tmp_path / "cache"), "--report-key-file", str(key)]
    first = _agent(*sync)
    assert first.returncode == 0, first.stderr

    _out_of_band(bind, f"example-{tag}.org", "www", "203.0.113.9")  # someone edits a managed record by hand
    repair = _agent(*sync, "--resync-after", "0")
    assert repair.returncode == 0, repair.stderr
    assert records.query(primary, f"www.example-{tag}.org.", "A") == ("198.51.100.80",)
    quiet = _agent(*sync, "--resync-after", "0")  # nothing found: nothing added
    assert quiet.returncode == 0, quiet.stderr

    shown = _report(git_remote, tmp_path, sha, key)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert text.startswith(f'bindy-agent: applied {sha[:12]} "Add DNS"')
    assert "Changes (27):" in text, text  # what the commit did, first
    later = text.index("Later runs of this commit (1):")
    assert text.index("Changes (27):") < later
    entry = text[later:].splitlines()[1]
    assert entry.startswith("  20") and ": applied, 1 changes (drift repaired):" in entry, text  # dated
    assert text[later:].splitlines()[2] == f"    update  records    www.example-{tag}.org. example-{tag}.org. A: applied"
    assert text.endswith("verified: signed with the report key\n")

    as_json = _report(git_remote, tmp_path, sha, key, "-o", "json")
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert (doc["verified"], doc["outcome"], doc["summary"]["rrsetChanges"], len(doc["changes"])) == (
        True, "applied", 21, 27)
    assert [(e["outcome"], e["summary"]["rrsetChanges"]) for e in doc["laterRuns"]] == [("applied", 1)]
    assert doc["laterRuns"][0]["changes"][0]["target"]["zone"] == f"example-{tag}.org."


def _a_run(sha: str, n: int) -> report.Report:
    change = {"action": "update", "layer": "records", "result": "applied",
              "target": {"zone": "example.com.", "name": f"drift-{n}", "type": "A"}}
    return report.Report(f"run{n:08d}", sha, "applied", {"sha": sha, "subject": "Add DNS"},
                         f"2024-05-01T12:{n:02d}:00Z", 1.0, [change])


def test_the_entries_are_bounded_and_the_original_run_is_kept(tmp_path: pathlib.Path, git_remote: GitRemote) -> None:
    sha = git_remote.commit("Add DNS", {"zones/a.yaml": "kind: DNSZone\n"})
    git_remote.push()
    key = _key(tmp_path)
    source = revisions.GitRevisions(GitSource(git_remote.url, tmp_path / "cache"), report_key=KEY.encode())
    for n in range(report.MAX_ENTRIES + 4):  # the first run, then MAX_ENTRIES + 3 later ones
        assert source.publish([_a_run(sha, n)], push=True) is True

    doc = json.loads(_report(git_remote, tmp_path, sha, key, "-o", "json").stdout)
    assert (doc["verified"], doc["runId"], doc["changes"][0]["target"]["name"]) == (True, "run00000000", "drift-0")
    assert [e["runId"] for e in doc["laterRuns"]] == [f"run{n:08d}" for n in range(4, report.MAX_ENTRIES + 4)]
    assert doc["laterRunsDropped"] == 3
    text = _report(git_remote, tmp_path, sha, key).stdout
    assert f"Later runs of this commit ({report.MAX_ENTRIES}; 3 older ones dropped):" in text
    assert text.index("drift-0") < text.index("drift-4") < text.index(f"drift-{report.MAX_ENTRIES + 3}")


@pytest.mark.parametrize("forger_key", [None, b"another key of more than 32 characters"])
def test_a_note_the_agent_did_not_sign_is_replaced_not_extended(
        tmp_path: pathlib.Path, git_remote: GitRemote, forger_key: bytes | None) -> None:
    sha = git_remote.commit("Add DNS", {"zones/a.yaml": "kind: DNSZone\n"})
    git_remote.push()
    key = _key(tmp_path)
    forged = report.Report("run-forged", sha, "applied", {"sha": sha, "subject": "Add DNS"}, "2024-05-01T11:00:00Z",
                           1.0, [{"action": "create", "layer": "records", "result": "applied",
                                  "target": {"zone": "example.com.", "name": "evil", "type": "TXT"}}])
    forger = revisions.GitRevisions(GitSource(git_remote.url, tmp_path / "forger"), report_key=forger_key)
    assert forger.publish([forged], push=True) is True
    agent = revisions.GitRevisions(GitSource(git_remote.url, tmp_path / "cache"), report_key=KEY.encode())
    assert agent.publish([_a_run(sha, 1)], push=True) is True  # replaces the forged note
    assert agent.publish([_a_run(sha, 2)], push=True) is True  # adds to the agent's own

    shown = _report(git_remote, tmp_path, sha, key)
    assert shown.returncode == 0, shown.stdout
    assert "evil" not in shown.stdout and "run-forged" not in shown.stdout
    text = shown.stdout
    assert text.index("drift-1") < text.index("Later runs of this commit (1):") < text.index("drift-2")
    note = git_remote.note_seen_by_a_fresh_clone(tmp_path / "fresh", sha)
    assert notesignature.examine(note.encode(), sha=sha, key=KEY.encode(), kind="summary").verified
