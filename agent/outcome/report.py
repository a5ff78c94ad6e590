"""The report attached to each commit the agent handled, as git notes.

`refs/notes/bindy-agent` holds a note that stays readable at any size: a short human summary
(headline, counts, at most DETAIL_LINES lines per list of refusals, failures and conflicts, then
the first DETAIL_LINES changes, each list ending "... and N more"), a marker
line, and the JSON with every list cut to DETAIL_LIMIT items (`omitted` says how many were left
out). `refs/notes/bindy-agent-full` holds the complete JSON, which `bindy-agent report -o json`
prints when it is there:

    bindy-agent: applied a1b2c3d4e5f6 "Add shop CNAME" (Ada <ada@example.com>)
    run 3f2a9c1d0b7e, 2.4 s: Kubernetes 2 created, 1 updated, 0 deleted; DNS 3 RRset changes,
    verified 6/6 --- bindy-agent report (JSON) ---
    {"formatVersion": 1, "runId": ..., "revision": ..., "outcome": ..., "commit": {...},
     "summary": {...}, "changes": [{..., "result": "applied" | "failed: ..."}],
     "problems": [{"file", "line", "object", "path", "message", "severity"}],
     "verification": [{"server", "name", "type", "ok"}], "refusals": [...], "supersededBy":
     str|null}
    bindy-agent-signature: v1 hmac-sha256=...   (with a report key: agent/outcome/notesignature.py)

Outcomes: applied, partial (some objects or zones failed), rejected (invalid or unsafe: nothing
applied), superseded (a newer commit arrived before this one was applied). Secrets never appear:
plans mask them before they get here.

A note keeps what its commit did. A later run of the same commit (a resync, a restart, a retry)
does not replace it: when it changed something (drift repaired), failed, met a conflict or ended
otherwise than the note's latest run, it adds a dated entry (`laterRuns`: outcome, counts, the first
ENTRY_LINES changes, failures, conflicts and refusals), at most MAX_ENTRIES of them, the oldest
dropped first (`laterRunsDropped` counts them); the original run stays first. A commit whose note
says it did nothing (rejected, superseded) gets the report of the first run that does something
instead (e.g. a forced apply of a refused commit). The complete report
(refs/notes/bindy-agent-full) stays the original run's. Which notes a run may add to:
run/revisions.py.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from typing import Any

from agent.model import printable
from agent.model.problems import Problem

FORMAT_VERSION = 1
DRIFT = "drift:"  # how a change that repairs drift gives its reason (agent/plan/changes.py)
MARKER = "--- bindy-agent report (JSON) ---"
NOTHING_DONE = ("rejected", "superseded")  # outcomes of a run that applied nothing
# the last line of a signed note (agent/outcome/notesignature.py)
SIGNATURE = "bindy-agent-signature: "
OUTCOMES = ("applied", "partial", "rejected", "superseded")
DETAIL_LIMIT = 200  # items per list in the note's JSON
DETAIL_LINES = 20  # detail lines in the note's summary
MAX_ENTRIES = 20  # later runs kept on a commit's note, the oldest dropped first
ENTRY_LINES = 10  # changes (and failures, conflicts, refusals) an entry lists
_ENTRY_LISTS = ("changes", "failures", "conflicts", "refusals")
_LISTS = ("changes", "problems", "verification", "refusals", "failures", "conflicts")


@dataclasses.dataclass
class Report:
    run_id: str
    revision: str
    outcome: str
    commit: dict[str, str]
    started_at: str
    duration: float
    changes: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    problems: list[Problem] = dataclasses.field(default_factory=list)
    verification: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    refusals: list[str] = dataclasses.field(default_factory=list)
    failures: list[str] = dataclasses.field(default_factory=list)
    superseded_by: str | None = None
    conflicts: list[str] = dataclasses.field(default_factory=list)
    # servers with no pod yet: not failures
    waiting: list[str] = dataclasses.field(default_factory=list)
    # a run of the revision already applied: what it changed had drifted, or was its own
    again: bool = False

    def summary(self) -> dict[str, Any]:
        kube = Counter(c["action"] for c in self.changes if c["layer"] == "kubernetes")
        dns = sum(1 for c in self.changes if c["layer"] == "records")
        errors = sum(1 for p in self.problems if p.severity.value == "error")
        return {"kubernetes": {a: kube.get(a, 0) for a in ("create", "update", "delete")},
                "rrsetChanges": dns,
                "zoneChanges": sum(1 for c in self.changes if c["layer"] == "zones"),
                "errors": errors, "failures": len(self.failures), "conflicts": len(self.conflicts),
                "verified": sum(1 for v in self.verification if v["ok"]),
                "checks": len(self.verification),
                "drift": sum(1 for c in self.changes if drifted(c)) if self.again else 0}

    def as_dict(self) -> dict[str, Any]:
        return {"formatVersion": FORMAT_VERSION, "runId": self.run_id, "revision": self.revision,
                "outcome": self.outcome, "commit": self.commit, "startedAt": self.started_at,
                "durationSeconds": round(self.duration, 3), "summary": self.summary(),
                "changes": self.changes, "problems": [p.as_dict() for p in self.problems],
                "verification": self.verification, "refusals": self.refusals,
                "failures": self.failures, "conflicts": self.conflicts,
                "supersededBy": self.superseded_by,
                **({"waiting": self.waiting} if self.waiting else {})}


def bounded(doc: dict[str, Any], limit: int = DETAIL_LIMIT,
            lists: tuple[str, ...] = _LISTS) -> dict[str, Any]:
    """The report with each of its `lists` cut to `limit` items; `omitted` counts what was left
    out."""
    out = dict(doc)
    omitted = {k: len(doc[k]) - limit for k in lists if len(doc.get(k) or []) > limit}
    for key in omitted:
        out[key] = doc[key][:limit]
    if omitted:
        out["omitted"] = omitted
    return out


def _more(items: list[Any], shown: int, total: int) -> list[str]:
    return [f"... and {total - shown:,} more"] if total > shown else []


def headline(doc: dict[str, Any], outcome: str | None = None) -> str:
    """The first line: the outcome (`outcome`: where the commit stands now, when later runs changed
    it)."""
    commit = doc.get("commit") or {}
    return (f"bindy-agent: {outcome or doc['outcome']} {doc['revision'][:12]} "
            f"\"{commit.get('subject', '')}\" ({commit.get('author', 'unknown author')})")


def now_lines(doc: dict[str, Any]) -> list[str]:
    """Where a commit with later runs stands now (its latest run), before the history: nothing
    without them."""
    runs = doc.get("laterRuns") or []
    if not runs:
        return []
    latest, count = runs[-1], 1 + len(runs) + (doc.get("laterRunsDropped") or 0)
    lines = [f"now: {latest['outcome']}, by run {latest['runId']} at {latest['startedAt']}, the "
             f"latest of {count:,} runs of this commit (the first was {doc['outcome']}; the "
             f"history is below)"]
    for label, key in (("failed", "failures"), ("conflict", "conflicts"), ("refused", "refusals")):
        lines += [f"  {label}: {item}" for item in (latest.get(key) or [])[:DETAIL_LINES]]
    return [*lines, "", f"First run {doc['runId']} at {doc.get('startedAt', '')}: {doc['outcome']}"]


def summary_lines(doc: dict[str, Any]) -> list[str]:
    s = doc["summary"]
    k = s["kubernetes"]
    lines = [f"run {doc['runId']}, {doc['durationSeconds']:.1f} s: Kubernetes {k['create']} "
             f"created, {k['update']} updated, {k['delete']} deleted; DNS {s['rrsetChanges']} "
             f"RRset changes, {s['zoneChanges']} zone changes, verified "
             f"{s['verified']}/{s['checks']}"]
    if doc["outcome"] == "superseded":
        lines = [f"superseded by {doc['supersededBy']}: a newer commit arrived before this one was "
                 f"applied"]
    if doc["outcome"] == "rejected" and s["errors"]:
        lines.append(f"rejected: {s['errors']} validation errors; nothing was applied, the last "
                     "good revision keeps serving")
    for label, key in (("refused", "refusals"), ("failed", "failures"), ("conflict", "conflicts")):
        items = doc.get(key) or []
        total = len(items) + (doc.get("omitted") or {}).get(key, 0)
        lines += [f"{label}: {item}" for item in items[:DETAIL_LINES]]
        lines += _more(items, min(len(items), DETAIL_LINES), total)
    lines += [f"waiting: {item}: its zones are written once its pods run"
              for item in doc.get("waiting") or []]
    return lines


def drifted(change: dict[str, Any]) -> bool:
    """A change of the plan that repairs what someone else changed (`plan.changes.drifted`, as a
    report item)."""
    reason = change.get("reason") or ""
    return reason.startswith(DRIFT) or (change.get("layer") == "records" and not reason)


def change_line(change: dict[str, Any]) -> str:
    t = change["target"]
    what = " ".join(str(t[k]) for k in ("kind", "namespace", "name", "zone", "instance", "type")
                    if t.get(k))
    return f"{change['action']:<7} {change['layer']:<10} {what}: {change.get('result', '')}"


def to_note(report: Report) -> str:
    """The note for refs/notes/bindy-agent: readable at any size (the first DETAIL_LINES changes,
    then how many more; every one of them is in the full report)."""
    return note_text(bounded(report.as_dict()))


def note_text(doc: dict[str, Any]) -> str:
    """The note of a bounded report document (with its later runs, if any): summary lines, marker,
    JSON."""
    changes = doc["changes"]
    total = len(changes) + (doc.get("omitted") or {}).get("changes", 0)
    details = [f"  {change_line(c)}" for c in changes[:DETAIL_LINES]]
    details += [f"  ... and {total - DETAIL_LINES:,} more (`bindy-agent report "
                f"{doc['revision'][:12]} -o json` "
                "lists every change)"] if total > DETAIL_LINES else []
    now = (doc.get("laterRuns") or [doc])[-1]
    lead = [headline(doc, now["outcome"]), *now_lines(doc)]
    return "\n".join([*map(printable.line,
                           [*lead, *summary_lines(doc), *details, *later_lines(doc)]),
                      MARKER, json.dumps(doc, separators=(",", ":"), sort_keys=True)]) + "\n"


def entry(report: Report) -> dict[str, Any]:
    """What a later run of a noted commit adds to its note: when, the outcome, the counts, and the
    first ENTRY_LINES items of each list (`omitted` says how many more)."""
    full = report.as_dict()
    kept = ("runId", "startedAt", "durationSeconds", "outcome", "summary", *_ENTRY_LISTS)
    return bounded({key: full[key] for key in kept}, ENTRY_LINES, _ENTRY_LISTS)


def noteworthy(doc: dict[str, Any], report: Report) -> bool:
    """Whether a later run is worth an entry on the note `doc`: it changed something (repaired
    drift), failed, met a conflict, or ended otherwise than the note's latest run. A run that found
    nothing adds nothing (and a commit refused again for the same reasons is not noted again)."""
    latest = ([doc, *(doc.get("laterRuns") or [])])[-1]
    return bool(report.changes or report.failures
                or report.conflicts) or report.outcome != latest.get("outcome")


def with_entry(doc: dict[str, Any], item: dict[str, Any],
               limit: int = MAX_ENTRIES) -> dict[str, Any]:
    """The note's document with one more later run; past `limit` runs the oldest are dropped
    (counted)."""
    runs = [*(doc.get("laterRuns") or []), item]
    out = dict(doc)
    out["laterRuns"] = runs[-limit:]
    dropped = (doc.get("laterRunsDropped") or 0) + max(0, len(runs) - limit)
    if dropped:
        out["laterRunsDropped"] = dropped
    return out


def later_lines(doc: dict[str, Any]) -> list[str]:
    """The later runs of a note, oldest first, each a dated line and what it changed or met."""
    runs = doc.get("laterRuns") or []
    if not runs:
        return []
    dropped = doc.get("laterRunsDropped") or 0
    lines = [f"later runs of this commit: {len(runs)}"
             + (f" ({dropped:,} older ones dropped)" if dropped else "")]
    for run in runs:
        s, omitted = run["summary"], run.get("omitted") or {}
        k = s["kubernetes"]
        total = len(run["changes"]) + omitted.get("changes", 0)
        drift = s.get("drift", total)  # (notes written before drift was told apart: every change)
        repaired = (" (drift repaired)" if drift >= total
                    else f" ({drift:,} drift repaired, the rest the agent's own)"
                    if drift else " (the agent's own: new pods, moved servers)") if total else ""
        lines.append(f"  {run['startedAt']} run {run['runId']}: {run['outcome']}, {total:,} "
                     f"changes{repaired}: Kubernetes {k['create']} created, {k['update']} updated, "
                     f"{k['delete']} deleted; DNS {s['rrsetChanges']} RRset changes, "
                     f"{s['zoneChanges']} zone changes, verified {s['verified']}/{s['checks']}")
        lines += [f"    {change_line(c)}" for c in run["changes"]]
        lines += ["    " + m for m in _more(run["changes"], len(run["changes"]), total)]
        for label, key in (("failed", "failures"), ("conflict", "conflicts"),
                           ("refused", "refusals")):
            items = run.get(key) or []
            lines += [f"    {label}: {item}" for item in items]
            lines += ["    " + m
                      for m in _more(items, len(items), len(items) + omitted.get(key, 0))]
    return lines


def to_full(report: Report) -> str:
    """The complete JSON for refs/notes/bindy-agent-full."""
    return json.dumps(report.as_dict(), separators=(",", ":"), sort_keys=True) + "\n"


def json_part(note: str) -> str | None:
    """What follows the marker line of a note (None: it has none). The marker is a line of its own,
    and no line of the summary above it can be one: each starts with its own words, or two spaces,
    and what they quote (a commit subject, a refusal) is escaped onto that line
    (model/printable.py). So a subject holding the marker's text does not move where the JSON
    starts."""
    if note.startswith(MARKER + "\n"):
        return note[len(MARKER) + 1:]
    _, found, rest = note.partition("\n" + MARKER + "\n")
    return rest if found else None


def split(note: str) -> tuple[str, str | None]:
    """(the note's body, its signature line (agent/outcome/notesignature.py) or None)."""
    head, _, last = note.rstrip("\n").rpartition("\n")
    if last.startswith(SIGNATURE):
        return head + "\n", last
    return note, None


def parse(note: str) -> dict[str, Any]:
    """The JSON of a note, its signature line left out; nothing verified."""
    body = json_part(split(note)[0])
    if body is None:
        raise ValueError("not a bindy-agent report (no JSON part)")
    doc: dict[str, Any] = json.loads(body)
    return doc


def render_text(doc: dict[str, Any]) -> str:
    """The report as `bindy-agent report` prints it: where the commit stands now first (its latest
    run), then what its first run did, then the later runs, oldest first."""
    now = (doc.get("laterRuns") or [doc])[-1]
    lines = [headline(doc, now["outcome"]), *now_lines(doc), *summary_lines(doc)]
    commit = doc.get("commit") or {}
    lines.append(f"commit {doc['revision']}  {commit.get('date', '')}")
    errors = [p for p in doc["problems"] if p["severity"] == "error"]
    if errors:
        lines.append("")
        lines.append("Problems:")
        lines += [f"  {p['file']}:{p['line']}: "
                  + ": ".join(x for x in (p["object"], p["path"], p["message"]) if x)
                  for p in errors]
    if doc["changes"]:
        total = len(doc["changes"]) + (doc.get("omitted") or {}).get("changes", 0)
        lines += ["", f"Changes ({total:,}):"]
        lines += [f"  {change_line(c)}" for c in doc["changes"][:DETAIL_LIMIT]]
        lines += ["  " + m
                  for m in _more(doc["changes"], min(len(doc["changes"]), DETAIL_LIMIT), total)]
    bad = [v for v in doc["verification"] if not v["ok"]]
    if bad:
        lines += ["", "Not served:"] + [f"  {v['server']}: {v['name']} {v['type']}" for v in bad]
    later = later_lines(doc)
    if later:
        dropped = doc.get("laterRunsDropped") or 0
        lines += ["", f"Later runs of this commit ({len(doc['laterRuns'])}"
                  + (f"; {dropped:,} older ones dropped" if dropped else "") + "):", *later[1:]]
    # each line one line, shown as written
    return "\n".join(printable.line(line) for line in lines) + "\n"
