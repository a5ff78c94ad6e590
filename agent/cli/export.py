"""`bindy-agent export DIR --output-dir OUT`: the repository as zone files, one per DNSZone, each as
named loads it (agent/desired/zonefile.py): for a migration away, a backup a DNS person can read, or
a check with BIND's own tools (`named-checkzone`). The repository is validated first, as `validate`
does; an invalid one writes nothing.

    exit 0 written, 1 invalid (nothing written), 2 usage error, 3 could not write
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from agent.cli import common, flagsets

DESCRIPTION = ("Write each DNSZone of DIR as a zone file (RFC 1035 master file) named loads: "
               "OUT/<zone>.zone with the DNSZone's SOA and TTL, its name servers and glue, and "
               "every record. DIR is validated first; an invalid repository writes nothing, and an "
               "existing file is not overwritten. Exit 0 written, 1 invalid, 2 usage error, 3 "
               "could not write.")
FORMATS = ("zonefiles",)
EXAMPLES = flagsets.examples(
    ("every zone of a repository as a zone file", "bindy-agent export dns/ --output-dir zones/"),
    ("an overlay as kustomize builds it, with objects that name no namespace in dns-lab",
     "bindy-agent export overlays/lab --output-dir zones/lab/ -n dns-lab --allowed-namespaces "
     "dns-lab"))


def build(add: common.AddVerb) -> None:
    ex = add(parents=[flagsets.directory(), flagsets.guard()], description=DESCRIPTION,
             epilog=EXAMPLES)
    ex.set_defaults(func=run)
    add_arguments(ex)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", choices=FORMATS, default=FORMATS[0],
                   help="what to write (default: %(default)s: one zone file per zone)")
    p.add_argument("--output-dir", type=pathlib.Path, metavar="OUT", required=True,
                   help="the directory the zone files are written to (made if missing)")


def run(args: argparse.Namespace) -> int:
    from agent.desired import zonefile
    from agent.model import problems
    from agent.sources import localdir

    validated = common.validate(localdir.files(args.directory), args)
    found = validated.problems
    common.print_problems(found, args.directory, sys.stderr, errors_only=True)
    if not validated.ok or validated.desired is None:
        print(f"{args.directory}: invalid: nothing exported ({len(problems.errors(found))} errors)",
              file=sys.stderr)
        return common.EXIT_INVALID
    zones = validated.desired.zones
    targets = [(args.output_dir / f"{zone.name.rstrip('.') or 'root'}.zone", zone)
               for zone in zones]
    existing = [str(path) for path, _ in targets if path.exists()]
    if existing:
        print(f"bindy-agent export: error: {', '.join(existing)} already exists; nothing written "
              "(remove it, or choose another --output-dir)", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    header = f"; Exported by `bindy-agent export` from {args.directory}"
    try:
        args.output_dir.mkdir(parents=True, exist_ok=True)
        for path, zone in targets:
            path.write_text(zonefile.render(zone, f"{header}, DNSZone "
                                                  f"{zone.key.namespace}/{zone.key.name}."))
    except OSError as exc:
        print(f"bindy-agent export: error: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    for path, zone in targets:
        print(f"{zone.name}: {sum(len(rr.rdatas) for rr in zone.rrsets.values()) + 1} records -> "
              f"{path}",
              file=sys.stderr)
    return common.EXIT_OK
