"""The verbs that need no cluster: validate and schemas (plan: agent/cli/plan.py)."""

from __future__ import annotations

import argparse
import pathlib
import sys

from agent.cli import common
from agent.model import problems
from agent.sources import localdir

DEFAULT_SCHEMAS = pathlib.Path("schemas")


def validate(args: argparse.Namespace) -> int:
    validated = common.validate(localdir.files(args.directory), args)
    manifest, found = validated.manifest, validated.problems
    common.print_problems(found, args.directory, sys.stderr, quiet=args.quiet)
    errors, warns = len(problems.errors(found)), len(problems.warnings(found))
    where = f"{args.directory}: {len(manifest.objects)} objects in {manifest.files} files"
    if errors:
        print(f"{where}: invalid: {errors} errors, {warns} warnings", file=sys.stderr)
        return common.EXIT_INVALID
    print(f"{where}: valid ({warns} warnings)", file=sys.stderr)
    return common.EXIT_OK


def schemas(args: argparse.Namespace) -> int:
    from agent.model import schema

    files = schema.rendered()
    stale = []
    for rel, text in sorted(files.items()):
        path = args.dir / rel
        current = path.read_text() if path.exists() else None
        if current != text:
            stale.append(rel)
            if not args.check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    known = set(files)
    extra = sorted(p.relative_to(args.dir).as_posix() for p in args.dir.rglob("*")
                   if p.is_file() and p.relative_to(args.dir).as_posix() not in known) if args.dir.exists() else []
    if args.check:
        for rel in stale:
            print(f"{args.dir / rel}: differs from the models; run `bindy-agent schemas`", file=sys.stderr)
        for rel in extra:
            print(f"{args.dir / rel}: not generated from any model; remove it", file=sys.stderr)
        return common.EXIT_CHANGES if stale or extra else common.EXIT_OK
    print(f"{args.dir}: {len(stale)} of {len(files)} files written", file=sys.stderr)
    return common.EXIT_OK
