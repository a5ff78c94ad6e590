"""Which report notes the agent wrote: it signs each note, and `report` checks before it shows one.

`refs/notes/bindy-agent` is an ordinary ref: anyone who can push to the repository can write a note
there. So the agent ends every note it writes with a signature line (a trailer):

    bindy-agent-signature: v1 hmac-sha256=<64 hex digits>

an HMAC-SHA256, keyed with the report key (`report_key_file`, at least MIN_KEY_LENGTH characters,
read from a file like every other secret and never logged), over a domain label, the kind of note
(summary or full), the commit the note is attached to and every byte of the note before that line.
A note copied onto another commit, edited after it was signed, or written by hand does not verify.

`examine()` reads a note it cannot trust: bounded in size (the caller reads at most MAX_NOTE_BYTES
or MAX_FULL_BYTES), UTF-8, its JSON an object of the shape `report.render_text` needs. It never
raises on what the note holds: anything else is a Shown that is not verified and says why in one
line. What a note says never decides anything the agent does; only `report` reads notes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import pathlib
import re
from typing import Annotated, Any, Literal

import pydantic

from agent.outcome import delivery, report

MIN_KEY_LENGTH = 32  # like the webhook secret: an HMAC keyed with less proves little
# the summary note stays < 100 kB at 3,000 changes (its lists are cut)
MAX_NOTE_BYTES = 4 * 1024 * 1024
# the complete JSON: every change of a revision (~30 MB at 100,000 records)
MAX_FULL_BYTES = 256 * 1024 * 1024
TRAILER = report.SIGNATURE
_TRAILER_RE = re.compile(r"bindy-agent-signature: v1 hmac-sha256=([0-9a-f]{64})")
_DOMAIN = b"bindy-agent report note v1"
Kind = Literal["summary", "full"]

NO_KEY = ("no --report-key-file given (BINDY_AGENT_REPORT_KEY_FILE): cannot check that bindy-agent "
          "wrote this report")
UNSIGNED = ("the note has no signature: bindy-agent wrote it without a report key, or did not "
            "write it")
MISMATCH = ("the signature does not match: the note was edited, copied from another commit or "
            "signed with another key; bindy-agent may not have written it")


def read_key(path: pathlib.Path) -> bytes:
    """The report key from its file; refused when short. The value never appears in a message, and
    is redacted from log lines should it ever reach one."""
    return delivery.read_key(path, what="report key", minimum=MIN_KEY_LENGTH,
                             use="give the same file to `bindy-agent report --report-key-file`")


def _digest(key: bytes, kind: Kind, sha: str, body: bytes) -> str:
    message = b"\0".join((_DOMAIN, kind.encode(), sha.lower().encode(), body))
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def sign(key: bytes | None, kind: Kind, sha: str, text: str) -> str:
    """`text` (a note ending in a newline) with its signature line; as it is without a key."""
    if key is None:
        return text
    body = text if text.endswith("\n") else text + "\n"
    return f"{body}{TRAILER}v1 hmac-sha256={_digest(key, kind, sha, body.encode())}\n"


@dataclasses.dataclass(frozen=True)
class Shown:
    """What `report` may show of a note: its document (None when malformed), and whether it is the
    agent's."""

    doc: dict[str, Any] | None
    verified: bool
    reason: str | None = None  # why it is not verified (one line)
    # a verified complete report: its JSON object as the agent wrote it
    signed_json: str | None = None

    @property
    def malformed(self) -> bool:
        return self.doc is None and self.signed_json is None

    def as_json(self, revision: str) -> dict[str, Any]:
        """The document with `verified` (and `unverifiedReason`) set here, whatever the note wrote
        there."""
        doc = {"revision": revision, "malformed": True} if self.doc is None else dict(self.doc)
        doc.pop("unverifiedReason", None)
        doc["verified"] = self.verified
        if not self.verified:
            doc["unverifiedReason"] = self.reason
        return doc

    def json_text(self, revision: str, extra: dict[str, Any] | None = None) -> str:
        """as_json() as compact JSON, with the fields of `extra` (a note's later runs); a signed
        complete report is not parsed and written again (30 MB at 100,000 records): the agent wrote
        it, and it gets `verified` and `extra` in front."""
        if self.signed_json is not None:
            front = "".join(f"{json.dumps(k)}:{_compact(v)}," for k, v in (extra or {}).items())
            return '{"verified":true,' + front + self.signed_json[1:]
        return json.dumps({**self.as_json(revision), **(extra or {})}, separators=(",", ":"),
                          sort_keys=True)


def _compact(value: Any) -> str:
    """A JSON value written as the agent writes a note: no spaces, keys sorted."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def malformed(reason: str) -> Shown:
    return Shown(None, False, f"malformed note: {reason}")


def examine(data: bytes, *, sha: str, key: bytes | None, kind: Kind) -> Shown:
    """A note as read from Git (already bounded in size), checked: never raises on its content."""
    try:
        note = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return malformed(f"not UTF-8 text (byte {exc.start})")
    body, trailer = report.split(note)
    reason: str | None = NO_KEY
    if key is not None:
        match = _TRAILER_RE.fullmatch(trailer or "")
        if trailer is None:
            reason = UNSIGNED
        elif match is None or not hmac.compare_digest(match.group(1),
                                                      _digest(key, kind, sha, body.encode())):
            reason = MISMATCH
        else:
            reason = None
    if kind == "full" and reason is None and re.match(r'\{"\w', body) and body.endswith("}\n"):
        return Shown(None, True, signed_json=body.rstrip("\n"))
    try:
        doc = _document(body, kind)
        problem = _shape(doc, sha) if kind == "summary" else _same_commit(doc, sha)
    except ValueError as exc:
        return malformed(str(exc))
    if problem:
        return malformed(problem)
    return Shown(doc, reason is None, reason)


def _document(body: str, kind: Kind) -> dict[str, Any]:
    """The JSON object of a note; ValueError (one line) when there is none."""
    if kind == "summary":
        part = report.json_part(body)
        if part is None:
            raise ValueError("not a bindy-agent report (no JSON part)")
        body = part
    try:
        doc = json.loads(body)
    except RecursionError:
        raise ValueError("its JSON nests too deeply") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"its JSON does not parse: {exc.msg} at line {exc.lineno} column "
                         f"{exc.colno}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"its JSON is {type(doc).__name__ if doc is not None else 'null'}, not an "
                         f"object")
    return doc


# -- the shape `report.render_text` relies on: a wrong type is a malformed note, never a crash
# --------------
# a count or a duration past the integers a double holds exactly is not the agent's
_MAX_NUMBER = 2**53
_Int = Annotated[pydantic.StrictInt, pydantic.Field(ge=0, le=_MAX_NUMBER)]
_Seconds = Annotated[pydantic.StrictFloat,
                     pydantic.Field(ge=0, le=_MAX_NUMBER, allow_inf_nan=False)]
_Str = pydantic.StrictStr


class _Fields(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow", strict=True)


class _Counts(_Fields):
    create: _Int
    update: _Int
    delete: _Int


class _Summary(_Fields):
    kubernetes: _Counts
    rrsetChanges: _Int
    zoneChanges: _Int
    errors: _Int
    verified: _Int
    checks: _Int


class _Change(_Fields):
    action: _Str
    layer: _Str
    target: dict[str, _Str | None]
    result: _Str = ""


class _Problem(_Fields):
    file: _Str | None
    line: _Int | None
    object: _Str | None
    path: _Str | None
    message: _Str
    severity: _Str


class _Check(_Fields):
    server: _Str
    name: _Str
    type: _Str
    ok: pydantic.StrictBool


class _Commit(_Fields):
    sha: _Str = ""
    author: _Str = ""
    subject: _Str = ""
    date: _Str = ""


class _Entry(_Fields):
    """A later run of the commit (report.entry)."""

    runId: _Str
    startedAt: _Str
    outcome: Literal["applied", "partial", "rejected", "superseded"]
    durationSeconds: _Seconds
    summary: _Summary
    changes: list[_Change]
    failures: list[_Str] = []
    conflicts: list[_Str] = []
    refusals: list[_Str] = []
    omitted: dict[str, _Int] | None = None


class _Report(_Fields):
    runId: _Str
    revision: _Str
    outcome: Literal["applied", "partial", "rejected", "superseded"]
    commit: _Commit | None = None
    durationSeconds: _Seconds  # an int is accepted too (as itself: the model's values are not kept)
    summary: _Summary
    changes: list[_Change]
    problems: list[_Problem]
    verification: list[_Check]
    refusals: list[_Str] = []
    failures: list[_Str] = []
    conflicts: list[_Str] = []
    supersededBy: _Str | None
    omitted: dict[str, _Int] | None = None
    laterRuns: list[_Entry] = []
    laterRunsDropped: _Int = 0


def extendable(data: bytes, *, sha: str, key: bytes | None) -> dict[str, Any] | None:
    """The document of the note on `sha` that a later run may add an entry to, or None (the run then
    writes its own report in its place). With a key: only a note that verifies, so nothing another
    hand wrote is ever signed by the agent. Without one: any well-formed report on `sha` (its
    signature line dropped): the agent signs nothing then, so it lends no trust, and `report` says
    it cannot verify."""
    shown = examine(data, sha=sha, key=key, kind="summary")
    if shown.doc is None or (key is not None and not shown.verified):
        return None
    return shown.doc


def _shape(doc: dict[str, Any], sha: str) -> str | None:
    """Why `doc` cannot be rendered (one line: the first wrong field), or None."""
    try:
        _Report.model_validate(doc)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "the report"
        return f"field {where}: {first['msg']} ({exc.error_count()} problem(s))"
    problem = _same_commit(doc, sha)
    if problem:
        return problem
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return "a string holds an unpaired surrogate (not text)"
    return None


def _same_commit(doc: dict[str, Any], sha: str) -> str | None:
    revision = doc.get("revision")
    if not isinstance(revision, str):
        return "field revision: not a string"
    if revision.lower() != sha.lower():
        return f"it reports on {revision[:40]!r}, not on the commit it is attached to"
    return None
