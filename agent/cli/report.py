"""`bindy-agent report [REV] --repo URL`: the report a sync attached to a commit, its signature
checked.

    exit 0 shown and verified, 1 no report, 2 unknown revision, 3 could not run, 4 shown but
    UNVERIFIED
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys
from typing import Any

from agent.cli import common, flagsets, settingflags
from agent.errors import AgentError
from agent.model import names
from agent.outcome import notesignature
from agent.run import gitsource
from agent.sources import gitrevs
from agent.sources.git import NOTES_REF, GitSource, StoredNote

# shown, but not known to be the agent's (no key, no or a wrong signature, malformed)
EXIT_UNVERIFIED = 4
EXAMPLES = flagsets.examples(
    ("the report on the head of main, its signature checked",
     "bindy-agent report --repo https://git.example.com/dns.git --report-key-file report.key"),
    ("the complete report on one commit, as JSON",
     "bindy-agent report 1a2b3c4d --repo https://git.example.com/dns.git -o json"))


def build(add: common.AddVerb) -> None:
    rp = add(description="Fetch refs/notes/bindy-agent from the repository and print the report on "
             "REV (default: the head of --branch), checking its signature with --report-key-file. "
             "Exit 0 shown and verified, 1 no report, 2 unknown revision, 3 could not run, 4 shown "
             "but UNVERIFIED (no --report-key-file, no or a wrong signature, or a malformed note: "
             "the first line says why).", epilog=EXAMPLES)
    rp.set_defaults(func=report)
    rp.add_argument("revision", nargs="?", metavar="REV",
                    help="a commit (full or abbreviated SHA), branch or tag (default: the head of "
                         "--branch)")
    rp.add_argument("--repo", required=True, metavar="URL",
                    type=common.git_operand("the repository"),
                    help="Git repository (URL or local path)")
    rp.add_argument("--branch", default="main", type=common.git_operand("the branch"),
                    help="branch whose head is shown by default")
    rp.add_argument("-o", "--output", choices=["text", "json"], default="text",
                    help="report format (default: %(default)s); json is the complete report")
    rp.add_argument("--cache", type=pathlib.Path, default=names.GIT_CACHE, metavar="DIR",
                    help="where the clone is kept (default: %(default)s)")
    for name in ("ref", "ssh_key", "known_hosts", "token_file"):
        rp.set_defaults(**{name: None})
    rp.set_defaults(path="", insecure_ignore_host_key=False)
    rp.add_argument("--ssh-key", type=common.readable_file, metavar="FILE", help="SSH deploy key")
    rp.add_argument("--known-hosts", type=common.readable_file, metavar="FILE",
                    help="known_hosts for the SSH key")
    rp.add_argument("--token-file", type=common.readable_file, metavar="FILE",
                    help="HTTPS token (or 'user:token'), read from a file; sent as Basic auth")
    settingflags.report_key_flag(rp, "checks that the agent wrote the report")


def _git_source(args: argparse.Namespace) -> GitSource:
    return gitsource.source(gitsource.Git.of(vars(args)), common.limits(args))


def _report_key(args: argparse.Namespace) -> bytes | None:
    """The key that signs (sync) or checks (report) the commit reports; None without one."""
    return notesignature.read_key(args.report_key_file) if args.report_key_file else None


def report(args: argparse.Namespace) -> int:
    try:
        key = _report_key(args)
    except AgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    # a clone of its own under the cache: fetching notes into the one a sync is using would collide
    # on git's ref locks, and waiting for the sync's lock would block a read behind a whole run (or
    # a sync behind a read)
    source = dataclasses.replace(_git_source(args), cache=args.cache / "reports")
    try:
        rev, note, full = _notes(source, args.revision, full=args.output == "json")
    except gitrevs.UnknownRevision as exc:
        print(f"error: {exc}", file=sys.stderr)
        return common.EXIT_ERROR
    except AgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    if note is None:
        print(f"no bindy-agent report on {rev}", file=sys.stderr)
        return common.EXIT_NO_REPORT
    summary = _checked(note, rev, key, "summary")
    shown, whole = _most_trusted(summary, full, rev, key)
    if not shown.verified:
        print(f"warning: the report on {rev} is UNVERIFIED: {shown.reason}", file=sys.stderr)
    if args.output == "json":
        later = _later_runs(summary, shown) if whole else {}
        sys.stdout.write((shown.json_text(rev, later) if whole
                          else json.dumps(shown.as_json(rev), indent=2)) + "\n")
    else:
        _write_text(shown, rev)
    return common.EXIT_OK if shown.verified else EXIT_UNVERIFIED


def _most_trusted(summary: notesignature.Shown, full: StoredNote | None, rev: str,
                  key: bytes | None) -> tuple[notesignature.Shown, bool]:
    """The report shown, and whether it is the complete one: with -o json (full is read) the
    complete report, when it is at least as trusted as the summary; else the summary."""
    if full is None:
        return summary, False
    complete = _checked(full, rev, key, "full")
    if not complete.malformed and (complete.verified or not summary.verified):
        return complete, True
    if summary.verified:
        print(f"warning: the complete report on {rev[:12]} is not shown ({complete.reason}); "
              "this is the summary's JSON", file=sys.stderr)
    return summary, False


def _write_text(shown: notesignature.Shown, rev: str) -> None:
    """The report as text, marked UNVERIFIED unless its signature checked."""
    from agent.outcome import report

    if shown.doc is None:
        sys.stdout.write(f"UNVERIFIED: {rev}: {shown.reason}\n")
        return
    if not shown.verified:
        sys.stdout.write(f"UNVERIFIED: {shown.reason}\n")
    sys.stdout.write(report.render_text(shown.doc))
    if shown.verified:
        sys.stdout.write("verified: signed with the report key\n")


def _later_runs(summary: notesignature.Shown, shown: notesignature.Shown) -> dict[str, Any]:
    """The later runs the note lists (report.py), for the complete report of the commit's first run:
    only from a note at least as trusted as what is shown."""
    doc = summary.doc or {}
    later = {k: doc[k] for k in ("laterRuns", "laterRunsDropped") if doc.get(k)}
    if later and shown.verified and not summary.verified:
        print(f"warning: the later runs in the note are not shown ({summary.reason})",
              file=sys.stderr)
        return {}
    return later


def _checked(note: StoredNote, rev: str, key: bytes | None,
             kind: notesignature.Kind) -> notesignature.Shown:
    if note.unread is not None:
        return notesignature.malformed(note.unread)
    return notesignature.examine(note.data, sha=rev, key=key, kind=kind)


def _notes(source: GitSource, revision: str | None, *,
           full: bool) -> tuple[str, StoredNote | None, StoredNote | None]:
    """(commit, its note, its full report) from the remote's notes, fetched into the cache; each
    read only up to the size a report may have."""
    source.repo()
    source.fetch_notes(keep_local=False)  # what the remote holds now, nothing older
    rev = gitrevs.noted_revision(source, revision, NOTES_REF)
    return (rev, source.note(rev, limit=notesignature.MAX_NOTE_BYTES),
            source.note(rev, full=True, limit=notesignature.MAX_FULL_BYTES) if full else None)
