"""The `bindy-agent` command line. The only module that prints.

    bindy-agent validate DIR               exit 0 valid, 1 invalid, 2 usage error
    bindy-agent plan DIR [--output FMT]    exit 0 no changes, 1 changes, 2 error (like `flux diff`)
    bindy-agent schemas [--check]          write (or check) schemas/ from the models

Problems go to stderr as `file:line: Kind/ns/name: field.path: message`; the plan goes to stdout.
"""

from __future__ import annotations

import argparse
import logging
import pathlib
import sys
from collections.abc import Sequence
from typing import TextIO

from agent import __version__, desired, loader, plan, problems
from agent.model import schema

EXIT_OK, EXIT_CHANGES, EXIT_ERROR = 0, 1, 2
EXIT_INVALID = 1
DEFAULT_SCHEMAS = pathlib.Path("schemas")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


def _directory(value: str) -> pathlib.Path:
    path = pathlib.Path(value)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value!r} is not a directory")
    return path


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="bindy-agent", description="GitOps agent for Bindy DNS custom resources: "
                     "validates a repository of bindy.firestoned.io/v1beta1 CRs and plans or applies "
                     "them to Kubernetes and BIND9.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details to stderr")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    verbs.required = True

    common = _Parser(add_help=False)
    common.add_argument("directory", type=_directory, metavar="DIR",
                        help="directory of CR YAML files (searched recursively)")
    common.add_argument("--namespace", default="default", metavar="NS",
                        help="namespace for namespaced objects that name none (default: %(default)s)")

    v = verbs.add_parser("validate", parents=[common], help="check a directory of CRs",
                         description="Parse and validate every YAML document below DIR; report every "
                         "problem with file:line. Exit 0 valid, 1 invalid, 2 usage error.")
    v.set_defaults(func=_validate)
    v.add_argument("-q", "--quiet", action="store_true", help="do not print warnings")

    p = verbs.add_parser("plan", parents=[common], help="show what a sync would change (dry run)",
                         description="Compute the plan for DIR. Offline (no --kubeconfig), the world "
                         "is empty, so the plan lists every Kubernetes object, every zone on every "
                         "instance and every RRset. Exit 0 no changes, 1 changes, 2 error.")
    p.set_defaults(func=_plan)
    p.add_argument("-o", "--output", choices=sorted(plan.RENDERERS), default="text",
                   help="plan format (default: %(default)s)")

    s = verbs.add_parser("schemas", help="write the JSON Schemas and CRDs generated from the models",
                         description="Write schemas/json/<Kind>.json and schemas/crds/<crd>.yaml from "
                         "the models. With --check, write nothing and exit 1 if they differ.")
    s.set_defaults(func=_schemas)
    s.add_argument("--dir", type=pathlib.Path, default=DEFAULT_SCHEMAS, metavar="DIR",
                   help="output directory (default: %(default)s)")
    s.add_argument("--check", action="store_true", help="exit 1 if the files differ from the models")
    return parser


def _print_problems(items: Sequence[problems.Problem], root: pathlib.Path, out: TextIO,
                    *, quiet: bool = False) -> None:
    for p in problems.sorted_problems(items):
        if quiet and p.severity is problems.Severity.WARNING:
            continue
        prefix = "warning: " if p.severity is problems.Severity.WARNING else ""
        if p.origin:
            p = problems.Problem(problems.Origin(str(root / p.origin.file), p.origin.line), p.obj,
                                 p.path, p.message, p.severity)
        print(f"{prefix}{p}", file=out)


def _load(args: argparse.Namespace) -> tuple[loader.Manifest, desired.Desired | None]:
    manifest = loader.load_dir(args.directory, default_namespace=args.namespace)
    if not manifest.ok:
        return manifest, None
    return manifest, desired.build(manifest)


def _validate(args: argparse.Namespace) -> int:
    manifest, state = _load(args)
    found = manifest.problems + (state.problems if state else [])
    _print_problems(found, args.directory, sys.stderr, quiet=args.quiet)
    errors, warns = len(problems.errors(found)), len(problems.warnings(found))
    where = f"{args.directory}: {len(manifest.objects)} objects in {manifest.files} files"
    if errors:
        print(f"{where}: invalid: {errors} errors, {warns} warnings", file=sys.stderr)
        return EXIT_INVALID
    print(f"{where}: valid ({warns} warnings)", file=sys.stderr)
    return EXIT_OK


def _plan(args: argparse.Namespace) -> int:
    manifest, state = _load(args)
    found = manifest.problems + (state.problems if state else [])
    _print_problems(found, args.directory, sys.stderr)
    if state is None or problems.errors(found):
        print(f"{args.directory}: invalid: nothing planned ({len(problems.errors(found))} errors)",
              file=sys.stderr)
        return EXIT_ERROR
    result = plan.offline(state)
    sys.stdout.write(plan.RENDERERS[args.output](result))
    return EXIT_OK if result.empty else EXIT_CHANGES


def _schemas(args: argparse.Namespace) -> int:
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
        return EXIT_CHANGES if stale or extra else EXIT_OK
    print(f"{args.dir}: {len(stale)} of {len(files)} files written", file=sys.stderr)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    return int(args.func(args))
