"""What a repository may say about the safety gate: only that it be stricter (pure).

The gate is the operator's (agent/gate/safety.py): only the agent's settings relax it (`--force`,
`--delete-threshold-percent`). Of the DNSZone annotations a repository writes,

    bindy.firestoned.io/delete-threshold-percent   counts where it is lower (stricter) than the
                                                   operator's threshold; a higher one is ignored
                                                   (a warning), a malformed one is an error
    bindy.firestoned.io/allow-unsafe-plan          relaxes nothing; "true" is ignored (a warning)

Each problem is at the annotation's file:line and says what the operator does instead.
"""

from __future__ import annotations

import re

from agent.load.manifest import Manifest
from agent.model.names import FORCE_ANNOTATION, THRESHOLD_ANNOTATION
from agent.model.problems import Problem, Severity

_WHOLE = re.compile(r"\s*[0-9]{1,3}\s*")
OPERATOR = "the agent's setting --delete-threshold-percent (BINDY_AGENT_DELETE_THRESHOLD_PERCENT)"


def percent(value: str) -> int | None:
    """A whole percentage from 0 to 100; None if `value` is not one."""
    if not isinstance(value, str) or not _WHOLE.fullmatch(value):
        return None
    number = int(value)
    return number if number <= 100 else None


def check(manifest: Manifest, threshold: float) -> list[Problem]:
    """The gate annotations of every DNSZone, against the operator's delete `threshold` (0..1)."""
    out: list[Problem] = []
    limit = round(threshold * 100)
    for obj in manifest.of_kind("DNSZone"):
        annotations = obj.model.metadata.get("annotations") or {}
        if FORCE_ANNOTATION in annotations:
            path = f"metadata.annotations.{FORCE_ANNOTATION}"
            forced = str(annotations[FORCE_ANNOTATION]).strip().lower() == "true"
            said = ': "true"' if forced else ""
            out.append(Problem(obj.origin_at(path), str(obj.key), path, (
                f"ignored: {FORCE_ANNOTATION}{said} no longer "
                "relaxes the safety gate (a repository may only make it stricter); to apply a plan "
                "the gate refuses, the operator runs `bindy-agent sync --force` (for "
                f"`bindy-agent run`: the setting force) or raises {OPERATOR}; remove the "
                "annotation"), Severity.WARNING))
        if THRESHOLD_ANNOTATION not in annotations:
            continue
        path = f"metadata.annotations.{THRESHOLD_ANNOTATION}"
        raw = annotations[THRESHOLD_ANNOTATION]
        value = percent(raw)
        if value is None:
            out.append(Problem(obj.origin_at(path), str(obj.key), path,
                               f"{raw!r} is not a whole percentage from 0 to 100 "
                               "(quote it: \"20\")"))
        elif value > limit:
            out.append(Problem(obj.origin_at(path), str(obj.key), path, (
                f"ignored: {value}% is higher than the agent's delete threshold ({limit}%); a "
                "repository may only make the safety gate stricter (lower); the operator raises "
                f"{OPERATOR}; lower the annotation to at most {limit} or remove it"),
                Severity.WARNING))
    return out
