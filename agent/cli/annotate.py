"""Problems reported as a CI shows them on the files (`validate` and `plan --error-format`).

    text    `file:line: Kind/ns/name: field.path: message` on stderr (the default)
    github  a workflow command per problem on stderr, `::error file=F,line=N,title=T::M`
            (`::warning` for a warning), which GitHub Actions turns into annotations on the pull
            request's files (the runner reads workflow commands from stdout and stderr alike)
    gitlab  the text lines, and a Code Quality report (JSON) written to --error-report, which GitLab
            shows in the merge request when the job declares it as `artifacts:reports:codequality`

A file is named as the CI names it: relative to the working directory (the top of the checkout in a
CI job), or, for a revision read from Git, its path inside the repository.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import sys
from collections.abc import Sequence

from agent.cli import common
from agent.model import printable, problems

Root = pathlib.Path | str  # a directory, or the `REV:path/` prefix of a revision read from Git
Side = tuple[Sequence[problems.Problem], Root, bool]  # problems, where their files are, errors only


def report(found: Sequence[problems.Problem], root: Root, args: argparse.Namespace, *,
           quiet: bool = False) -> None:
    """One revision's problems, in the format `args.error_format` asks for."""
    report_sides([(found, root, quiet)], args)


def report_sides(sides: Sequence[Side], args: argparse.Namespace) -> None:
    """The problems of one or more revisions (a delta's base: errors only), in one report."""
    style = getattr(args, "error_format", "text")
    for found, root, errors_only in sides:
        if style == "github":
            for problem in problems.sorted_problems(found):
                if not (errors_only and problem.severity is problems.Severity.WARNING):
                    print(github_command(problem, root), file=sys.stderr)
        else:
            common.print_problems(found, root, sys.stderr, errors_only=errors_only)
    if style == "gitlab":
        issues = [code_quality_issue(p, root) for found, root, errors_only in sides
                  for p in problems.sorted_problems(found)
                  if not (errors_only and p.severity is problems.Severity.WARNING)]
        args.error_report.write_text(json.dumps(issues, indent=2) + "\n")


def ci_path(root: Root, file: str) -> str:
    """The path a CI names the file by (see the module docstring)."""
    if isinstance(root, str):
        return root.split(":", 1)[-1] + file
    path = root / file
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        return str(path)
    return str(path) if relative.startswith("..") else relative


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _title(problem: problems.Problem) -> str:
    return "bindy-agent: " + (problem.obj or "revision")


def _message(problem: problems.Problem) -> str:
    return printable.line(": ".join(part for part in (problem.obj, problem.path, problem.message)
                                    if part))


def github_command(problem: problems.Problem, root: Root) -> str:
    """`::error file=F,line=N,title=T::M` (escaped as the runner unescapes it)."""
    level = "warning" if problem.severity is problems.Severity.WARNING else "error"
    where = ""
    if problem.origin:
        where = (f"file={_escape_property(ci_path(root, problem.origin.file))},"
                 f"line={problem.origin.line},")
    return (f"::{level} "
            f"{where}title={_escape_property(_title(problem))}::{_escape_data(_message(problem))}")


def code_quality_issue(problem: problems.Problem, root: Root) -> dict[str, object]:
    """One issue of GitLab's Code Quality report (a subset of the Code Climate format)."""
    path = (ci_path(root, problem.origin.file) if problem.origin else ci_path(root, "").rstrip("/")
            or ".")
    line = problem.origin.line if problem.origin else 1
    description = _message(problem)
    fingerprint = hashlib.sha256("\0".join((path, str(line),
                                            description)).encode()).hexdigest()[:32]
    return {"description": description, "check_name": "bindy-agent/" + problem.severity.value,
            "fingerprint": fingerprint,
            "severity": "minor" if problem.severity is problems.Severity.WARNING else "major",
            "location": {"path": path, "lines": {"begin": line}}}
