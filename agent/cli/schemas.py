"""`bindy-agent schemas`: the JSON Schemas and CRDs generated from the models, written or checked."""

from __future__ import annotations

import argparse
import pathlib
import sys

from agent.cli import common, flagsets

DEFAULT_SCHEMAS = pathlib.Path("schemas")
EXAMPLES = flagsets.examples(
    ("write schemas/ from the models", "bindy-agent schemas"),
    ("fail when the committed files differ from the models (CI)", "bindy-agent schemas --check"))


def build(add: common.AddVerb) -> None:
    s = add(description="Write schemas/json/<Kind>.json, schemas/crds/<crd>.yaml and "
            "schemas/crds/kustomization.yaml from the models. With --check, write nothing and "
            "exit 1 if they differ.", epilog=EXAMPLES)
    s.set_defaults(func=schemas)
    s.add_argument("--dir", type=pathlib.Path, default=DEFAULT_SCHEMAS, metavar="DIR",
                   help="output directory (default: %(default)s)")
    s.add_argument("--check", action="store_true", help="exit 1 if the files differ from the models")


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
        return common.EXIT_STALE if stale or extra else common.EXIT_OK
    print(f"{args.dir}: {len(stale)} of {len(files)} files written", file=sys.stderr)
    return common.EXIT_OK
