"""`bindy-agent schemas`: the JSON Schemas and CRDs generated from the models, and the lists of
kinds in deploy/'s RBAC, written or checked."""

from __future__ import annotations

import argparse
import pathlib
import sys

from agent.cli import common, flagsets

DEFAULT_SCHEMAS = pathlib.Path("schemas")
DEFAULT_DEPLOY = pathlib.Path("deploy")
EXAMPLES = flagsets.examples(
    ("write schemas/ from the models", "bindy-agent schemas"),
    ("fail when the committed files differ from the models (CI)", "bindy-agent schemas --check"))


def build(add: common.AddVerb) -> None:
    s = add(description="Write schemas/json/<Kind>.json, schemas/crds/<crd>.yaml and "
            "schemas/crds/kustomization.yaml from the models, and the lists of kinds in the RBAC "
            "of deploy/ (target/role.yaml, rbac-crds.yaml). With --check, write nothing and exit 1 "
            "if they differ.",
            epilog=EXAMPLES)
    s.set_defaults(func=schemas)
    s.add_argument("--dir", type=pathlib.Path, default=DEFAULT_SCHEMAS, metavar="DIR",
                   help="output directory (default: %(default)s)")
    s.add_argument("--deploy", type=pathlib.Path, default=DEFAULT_DEPLOY, metavar="DIR",
                   help="the deploy/ directory whose RBAC lists the kinds; a file it does not hold "
                   "is skipped (default: %(default)s)")
    s.add_argument("--check", action="store_true",
                   help="exit 1 if the files differ from the models")


def _rbac(args: argparse.Namespace) -> list[pathlib.Path]:
    """The RBAC files of --deploy whose lists of kinds differ from the models (written unless
    --check)."""
    from agent.model import rbac

    committed = {rel: path.read_text() for rel in rbac.FILES
                 if (path := args.deploy / rel).is_file()}
    stale = []
    for rel, text in rbac.rendered(committed).items():
        if text != committed[rel]:
            stale.append(args.deploy / rel)
            if not args.check:
                (args.deploy / rel).write_text(text)
    if committed and not args.check:
        print(f"{args.deploy}: {len(stale)} of {len(committed)} RBAC files written",
              file=sys.stderr)
    return stale


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
                   if p.is_file()
                   and p.relative_to(args.dir).as_posix() not in known) if args.dir.exists() else []
    if args.check:
        for rel in stale:
            print(f"{args.dir / rel}: differs from the models; run `bindy-agent schemas`",
                  file=sys.stderr)
        for rel in extra:
            print(f"{args.dir / rel}: not generated from any model; remove it", file=sys.stderr)
        rbac = _rbac(args)
        for path in rbac:
            print(f"{path}: its lists of kinds differ from the models; run `bindy-agent schemas`",
                  file=sys.stderr)
        return common.EXIT_STALE if stale or extra or rbac else common.EXIT_OK
    print(f"{args.dir}: {len(stale)} of {len(files)} files written", file=sys.stderr)
    _rbac(args)
    return common.EXIT_OK
