"""Reports cannot be forged. `refs/notes/bindy-agent` is an ordinary ref that anyone who can push writes.
Through the CLI and a real local Git remote (the repository holds no CRs, so a sync needs no DNS server
or cluster): the agent signs the notes it writes with the report key, `report` says UNVERIFIED (exit 4) for
every other note, never crashes on a malformed one, and nothing a note says decides what the agent does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent.clients import statestore
from agent.outcome import report
from tests.support import notesworld
from tests.support.clirun import main
from tests.support.notesworld import KEY, World

world = notesworld.world  # the fixture, shared


EXIT_UNVERIFIED = 4


def _claim(sha: str, subject: str = "never handled by the agent", **fields: Any) -> str:
    """A note as the agent would write it, claiming `applied`, but written by hand (no key)."""
    item = report.Report("forged00run", sha, "applied", {"sha": sha, "author": "Mallory <m@example.com>",
                                                          "subject": subject, "date": "2026-01-01T00:00:00+00:00"},
                         "2026-01-01T00:00:00Z", 1.0)
    note = report.to_note(item)
    if fields:
        head, _, body = note.partition(report.MARKER)
        note = head + report.MARKER + "\n" + json.dumps({**json.loads(body), **fields}) + "\n"
    return note


# -- what the agent signed is verified; what anyone else wrote is not ---------------------------------------
def test_a_report_the_agent_signed_is_verified(world: World) -> None:
    shown = world.report(world.synced)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f'bindy-agent: applied {world.synced[:12]} "synced by the agent"')
    assert lines[-1] == "verified: signed with the report key"
    assert "UNVERIFIED" not in shown.stdout + shown.stderr
    as_json = world.report(world.synced, "-o", "json")
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert (doc["verified"], doc["outcome"], doc["revision"]) == (True, "applied", world.synced)
    assert "unverifiedReason" not in doc
    note = world.note(world.synced).decode()
    assert note.splitlines()[-1].startswith("bindy-agent-signature: v1 hmac-sha256=")
    assert report.parse(note)["outcome"] == "applied"  # plain readers still get the JSON
    assert KEY not in note


@pytest.mark.parametrize("subject", [f"x {report.MARKER} y", report.MARKER, f"{report.MARKER} {{}}"])
def test_a_subject_holding_the_json_marker_does_not_spoil_the_agents_note(world: World, subject: str) -> None:
    # `report` split the note at the first marker, in the headline: the agent's own note read as malformed
    sha = world.commit(subject)
    assert world.sync().returncode == 0
    shown = world.report(sha)
    assert shown.returncode == 0, (shown.stdout, shown.stderr)
    assert shown.stdout.splitlines()[0].startswith(f'bindy-agent: applied {sha[:12]} "{subject}"'), shown.stdout
    assert shown.stdout.splitlines()[-1] == "verified: signed with the report key"
    doc = json.loads(world.report(sha, "-o", "json").stdout)
    assert (doc["verified"], doc["commit"]["subject"]) == (True, subject)
    assert report.parse(world.note(sha).decode())["commit"]["subject"] == subject


def test_a_hand_written_applied_note_is_shown_unverified(world: World) -> None:
    world.forge(world.foreign, _claim(world.foreign).encode())
    shown = world.report(world.foreign)
    assert shown.returncode == EXIT_UNVERIFIED, shown.stderr
    first, second = shown.stdout.splitlines()[:2]
    assert first.startswith("UNVERIFIED: the note has no signature")
    assert second.startswith(f"bindy-agent: applied {world.foreign[:12]}")  # shown, but under that line
    assert "verified: signed" not in shown.stdout
    doc = json.loads(world.report(world.foreign, "-o", "json").stdout)
    assert doc["verified"] is False and "no signature" in doc["unverifiedReason"]


def test_a_note_claiming_to_be_verified_in_its_json_is_not(world: World) -> None:
    world.forge(world.foreign, _claim(world.foreign, verified=True, unverifiedReason=None).encode())
    as_json = world.report(world.foreign, "-o", "json")
    assert as_json.returncode == EXIT_UNVERIFIED
    doc = json.loads(as_json.stdout)
    assert doc["verified"] is False and doc["unverifiedReason"].startswith("the note has no signature")


def test_a_signed_note_copied_onto_another_commit_is_unverified(world: World) -> None:
    signed = world.note(world.synced).decode()
    copied = signed.replace(world.synced, world.foreign).replace("synced by the agent", "never handled by the agent")
    world.forge(world.foreign, copied.encode())
    shown = world.report(world.foreign)
    assert shown.returncode == EXIT_UNVERIFIED
    assert shown.stdout.startswith("UNVERIFIED: the signature does not match")


@pytest.mark.parametrize("edit", ["outcome", "signature", "appended line"])
def test_a_note_edited_after_signing_is_unverified(world: World, edit: str) -> None:
    signed = world.note(world.synced).decode()
    world.remote.cmd("fetch", "-q", "origin", "+refs/notes/*:refs/notes/*")
    if edit == "outcome":  # the agent said "applied 0 changes": make it claim 7 RRset changes
        edited = signed.replace('"rrsetChanges":0', '"rrsetChanges":7')
    elif edit == "signature":
        body, _, last = signed.rstrip("\n").rpartition("\n")
        edited = body + "\n" + last[:-4] + "0000\n"
    else:
        edited = signed.replace("--- bindy-agent report", "refused: nothing\n--- bindy-agent report")
    assert edited != signed
    assert world.report(world.synced).returncode == 0  # before: verified (this cache now holds the note)
    world.forge(world.synced, edited.encode())
    for cache in ("report-cache", "fresh-cache"):  # a cache shows what the remote holds now, not what it kept
        shown = world.report(world.synced, cache=cache)
        assert shown.returncode == EXIT_UNVERIFIED, shown.stdout
        assert shown.stdout.startswith("UNVERIFIED: the signature does not match")


def test_without_a_key_report_says_it_cannot_verify(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BINDY_AGENT_REPORT_KEY_FILE", raising=False)
    shown = world.report(world.synced, key=False)
    assert shown.returncode == EXIT_UNVERIFIED
    assert shown.stdout.startswith("UNVERIFIED: no --report-key-file given")
    assert "UNVERIFIED" in shown.stderr
    monkeypatch.setenv("BINDY_AGENT_REPORT_KEY_FILE", str(world.key))  # the setting's environment variable
    assert world.report(world.synced, key=False).returncode == 0


def test_another_key_does_not_verify(world: World) -> None:
    other = world.tmp / "other.key"
    other.write_text("x" * 40)
    shown = main("report", world.synced, "--repo", world.remote.url, "--cache", str(world.tmp / "rc"),
                 "--report-key-file", str(other))
    assert shown.returncode == EXIT_UNVERIFIED
    assert shown.stdout.startswith("UNVERIFIED: the signature does not match")


def test_report_help_documents_the_unverified_status() -> None:
    shown = main("report", "--help")
    assert "4 shown but UNVERIFIED" in " ".join(shown.stdout.split())
    assert "--report-key-file" in shown.stdout


# -- malformed notes: one line and exit 4, never a crash ------------------------------------------------------
def _deep(depth: int) -> bytes:
    return (report.MARKER + "\n" + "[" * depth + "]" * depth + "\n").encode()


MALFORMED: dict[str, tuple[bytes, str]] = {
    "not UTF-8": (b"bindy-agent: applied \xff\xfe\n" + report.MARKER.encode() + b"\n{}\n", "not UTF-8 text"),
    "no JSON part": (b"bindy-agent: applied, trust me\n", "no JSON part"),
    "truncated JSON": ((report.MARKER + '\n{"outcome": "applied", "revis').encode(), "its JSON does not parse"),
    "JSON array": ((report.MARKER + "\n[1, 2, 3]\n").encode(), "its JSON is list, not an object"),
    "JSON string": ((report.MARKER + '\n"applied"\n').encode(), "its JSON is str, not an object"),
    "JSON null": ((report.MARKER + "\nnull\n").encode(), "its JSON is null, not an object"),
    "deeply nested": (_deep(200_000), "nests too deeply"),
    "5,000-digit number": ((report.MARKER + '\n{"runId": ' + "9" * 5000 + "}\n").encode(), "malformed note"),
}


def _wrong_types(sha: str) -> dict[str, tuple[bytes, str]]:
    def with_fields(**fields: Any) -> bytes:
        return _claim(sha, **fields).encode()

    return {
        "summary is a string": (with_fields(summary="lots"), "field summary"),
        "counts are strings": (with_fields(summary={"kubernetes": {"create": "1", "update": 0, "delete": 0},
                                                    "rrsetChanges": 0, "zoneChanges": 0, "errors": 0,
                                                    "verified": 0, "checks": 0}), "field summary.kubernetes.create"),
        "changes hold a number": (with_fields(changes=[7]), "field changes.0"),
        "a change's target is a list": (with_fields(changes=[{"action": "create", "layer": "records",
                                                              "target": ["x"], "result": "applied"}]),
                                        "field changes.0.target"),
        "problems miss fields": (with_fields(problems=[{"severity": "error"}]), "field problems.0"),
        "verification is a dict": (with_fields(verification={"ok": True}), "field verification"),
        "duration is text": (with_fields(durationSeconds="fast"), "field durationSeconds"),
        "commit is a list": (with_fields(commit=["x"]), "field commit"),
        "revision is a number": (with_fields(revision=12), "field revision"),
        "outcome unknown": (with_fields(outcome="approved"), "field outcome"),
        "omitted counts are text": (with_fields(omitted={"changes": "many"}), "field omitted.changes"),
        "no changes at all": (with_fields(changes=None), "field changes"),
        "a surrogate's bytes": (_claim(sha, subject="S").encode().replace(b'"S"', b'"\xed\xa0\x80"'), "not UTF-8"),
        "an escaped lone surrogate": (with_fields(supersededBy="\ud800"), "unpaired surrogate"),
        "another commit's report": (_claim("f" * 40).encode(), "not on the commit it is attached to"),
    }


def test_every_kind_of_malformed_note_is_one_line_and_exit_4(world: World) -> None:
    _each_malformed(world, {**MALFORMED, **_wrong_types(world.foreign)})


def _each_malformed(world: World, cases: dict[str, tuple[bytes, str]]) -> None:
    for name, (data, reason) in cases.items():
        world.forge(world.foreign, data)
        for output in ("text", "json"):
            shown = world.report(world.foreign, "-o", output)
            assert shown.returncode == EXIT_UNVERIFIED, (name, output, shown.stdout, shown.stderr)
            assert "Traceback" not in shown.stderr and "internal error" not in shown.stderr, (name, shown.stderr)
            if output == "text":
                assert shown.stdout.count("\n") == 1 and shown.stdout.startswith("UNVERIFIED:"), (name, shown.stdout)
                assert "malformed note" in shown.stdout and reason in shown.stdout, (name, shown.stdout)
            else:
                doc = json.loads(shown.stdout)
                assert (doc["verified"], doc["malformed"], doc["revision"]) == (False, True, world.foreign), name
                assert reason in doc["unverifiedReason"], (name, doc)


def test_a_number_out_of_the_agents_range_is_a_malformed_note_not_a_crash(world: World) -> None:
    # 10**400 seconds overflowed `:.1f` and 4,300 nines `:,` (the digits limit): report exited 70
    def with_fields(**fields: Any) -> bytes:
        return _claim(world.foreign, **fields).encode()

    summary = {"kubernetes": {"create": 0, "update": 0, "delete": 0}, "rrsetChanges": 0, "zoneChanges": 0,
               "errors": 0, "verified": 0, "checks": 0}
    change = {"action": "create", "layer": "records", "target": {"zone": "x"}, "result": "applied"}
    _each_malformed(world, {
        "a duration of 10**400 seconds": (with_fields(durationSeconds=10**400), "field durationSeconds"),
        "a duration of 1e308 seconds": (with_fields(durationSeconds=1e308), "field durationSeconds"),
        "an infinite duration": (with_fields(durationSeconds=float("inf")), "field durationSeconds"),
        "a NaN duration": (with_fields(durationSeconds=float("nan")), "field durationSeconds"),
        "a negative duration": (with_fields(durationSeconds=-1.5), "field durationSeconds"),
        "4,300 nines of changes omitted": (with_fields(changes=[change], omitted={"changes": int("9" * 4300)}),
                                           "field omitted.changes"),
        "2**53 + 1 refusals omitted": (with_fields(refusals=["x"], omitted={"refusals": 2**53 + 1}),
                                       "field omitted.refusals"),
        "a negative count": (with_fields(summary={**summary, "errors": -1}), "field summary.errors"),
        "a huge count": (with_fields(summary={**summary, "kubernetes": {"create": 10**4000, "update": 0,
                                                                        "delete": 0}}),
                         "field summary.kubernetes.create"),
        "a huge line": (with_fields(problems=[{"file": "a.yaml", "line": 10**300, "object": None, "path": None,
                                               "message": "m", "severity": "error"}]), "field problems.0.line"),
    })
    for seconds in (0, 2.5, 2**53):  # what the agent writes, at the edges of the range: shown (unverified)
        world.forge(world.foreign, with_fields(durationSeconds=seconds))
        shown = world.report(world.foreign)
        assert shown.returncode == EXIT_UNVERIFIED and "malformed" not in shown.stdout, shown.stdout
        assert f", {float(seconds):.1f} s: Kubernetes" in shown.stdout, shown.stdout


def test_a_100_mb_note_is_not_read(world: World) -> None:
    huge = (_claim(world.foreign) + " " * (100 * 1024 * 1024)).encode()
    world.forge(world.foreign, huge)
    shown = world.report(world.foreign)
    assert shown.returncode == EXIT_UNVERIFIED, shown.stderr
    assert shown.stdout == (f"UNVERIFIED: {world.foreign}: malformed note: the note is {len(huge):,} bytes, more "
                            "than the 4,194,304 a report may have\n")


def test_a_forged_complete_report_is_not_shown_as_the_agents(world: World) -> None:
    """`report -o json` prints refs/notes/bindy-agent-full when it is there: it is checked as well."""
    full = json.loads(world.note(world.synced, "bindy-agent-full").decode().splitlines()[0])
    world.forge(world.synced, (json.dumps({**full, "outcome": "rejected"}) + "\n").encode(), ref="bindy-agent-full")
    shown = world.report(world.synced, "-o", "json")
    assert shown.returncode == 0  # the summary's JSON, which is signed
    doc = json.loads(shown.stdout)
    assert (doc["verified"], doc["outcome"]) == (True, "applied")
    assert "the complete report" in shown.stderr and "not shown" in shown.stderr


# -- nothing a note says decides what the agent does ------------------------------------------------------
def test_a_forged_note_does_not_make_the_agent_skip_a_commit(world: World) -> None:
    """A note claiming `applied` on the new head before the agent gets to it: the agent still runs
    that commit, and its own signed note replaces the forgery."""
    world.forge(world.foreign, _claim(world.foreign).encode())
    synced = world.sync()
    assert synced.returncode == 0, synced.stderr
    assert f"Sync of revision {world.foreign}: applied" in synced.stderr
    assert statestore.FileStore(world.state).load_run().applied == world.foreign
    shown = world.report(world.foreign)
    assert shown.returncode == 0, shown.stdout
    assert "forged00run" not in shown.stdout


@pytest.mark.parametrize("ref", ["bindy-agent", "bindy-agent-full"])
def test_a_notes_ref_that_is_not_a_commit_breaks_neither_sync_nor_report(world: World, ref: str) -> None:
    blob = world.remote.cmd("hash-object", "-w", "--stdin", "--path", "x")  # an empty blob
    world.remote.cmd("push", "-q", "-f", "origin", f"{blob}:refs/notes/{ref}")
    shown = world.report(world.synced, cache="fresh-cache")
    assert shown.returncode in (0, 1), shown.stderr  # the summary may be gone: "no report", never a crash
    assert "internal error" not in shown.stderr
    world.commit("a third commit")
    synced = world.sync()
    assert synced.returncode == 0, synced.stderr
    assert world.report(world.remote.head()).returncode == 0  # the agent's push replaced the broken ref


# -- the key: a secret read from a file -------------------------------------------------------------------
def test_a_short_key_is_refused_and_never_printed(world: World) -> None:
    short = world.tmp / "short.key"
    short.write_text("tooshort-secret\n")
    for verb, status in (("sync", 3), ("report", 3)):
        args = (["sync", "--repo", world.remote.url, "--endpoints", str(world.endpoints), "--state",
                 str(world.state), "--cache", str(world.tmp / "cache")] if verb == "sync"
                else ["report", "--repo", world.remote.url, "--cache", str(world.tmp / "rc")])
        shown = main(*args, "--report-key-file", str(short))
        assert shown.returncode == status, (verb, shown.stderr)
        assert "holds only 15 characters: the report key must be at least 32" in shown.stderr, shown.stderr
        assert "tooshort-secret" not in shown.stdout + shown.stderr
    ran = main("run", "--repo", world.remote.url, "--endpoints", str(world.endpoints), "--state", str(world.state),
               "--cache", str(world.tmp / "cache"), "--report-key-file", str(short))
    assert ran.returncode == 2 and "the report key must be at least 32" in ran.stderr
    assert "tooshort-secret" not in ran.stdout + ran.stderr
