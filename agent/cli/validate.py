"""`bindy-agent validate DIR`: every problem of a directory of CRs, checked as a sync checks it.

    exit 0 valid, 1 invalid, 2 usage error
"""

from __future__ import annotations

import argparse
import sys

from agent.cli import annotate, common, flagsets
from agent.model import problems
from agent.sources import localdir

DESCRIPTION = ("Parse and validate every YAML document below DIR; report every problem with "
               "file:line. Exit 0 valid, 1 invalid, 2 usage error.")
EXAMPLES = flagsets.examples(
    ("check a directory of CRs", "bindy-agent validate dns/"),
    ("errors only, as GitHub annotations on the files",
     "bindy-agent validate dns/ -q --error-format github"),
    ("as a GitLab Code Quality report", "bindy-agent validate dns/ --error-format gitlab"),
    ("with the policy the agent runs with",
     "bindy-agent validate dns/ --allowed-namespaces dns-system,dns-lab"))


def build(add: common.AddVerb) -> None:
    v = add(parents=[flagsets.directory(), flagsets.guard()], description=DESCRIPTION,
            epilog=EXAMPLES)
    v.set_defaults(func=validate)
    v.add_argument("-q", "--quiet", action="store_true", help="do not print warnings")
    flagsets.error_format(v)


def validate(args: argparse.Namespace) -> int:
    validated = common.validate(localdir.files(args.directory), args)
    manifest, found = validated.manifest, validated.problems
    annotate.report(found, args.directory, args, quiet=args.quiet)
    errors, warns = len(problems.errors(found)), len(problems.warnings(found))
    where = f"{args.directory}: {len(manifest.objects)} objects in {manifest.files} files"
    if errors:
        print(f"{where}: invalid: {errors} errors, {warns} warnings", file=sys.stderr)
        return common.EXIT_INVALID
    print(f"{where}: valid ({warns} warnings)", file=sys.stderr)
    return common.EXIT_OK
