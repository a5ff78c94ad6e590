"""`bindy-agent import`: adopt a live zone - its AXFR (or its zone file: agent/cli/importfile.py)
written as a DNSZone and record CRs.

    exit 0 written, 1 written but the DNSZone does not validate (the errors say why) or a zone file
    that cannot be read as one, 2 usage error, 3 could not run (server unreachable, transfer
    refused, output not writable)
"""

from __future__ import annotations

import argparse
import pathlib
import socket
import sys

import dns.exception
import dns.name

from agent.cli import common, flagsets, importfile
from agent.clients import axfr, endpoints
from agent.desired import adopt, rrsets
from agent.errors import AgentError, ConfigError, ZoneMissing
from agent.model import names
from agent.model.ownership import Key
from agent.sources import operatorfile

DESCRIPTION = ("Transfer a zone from a DNS server (AXFR, TSIG-signed with --tsig-key-file), or "
               "read its zone file (--zone-file), and write it as CRs: "
               "a DNSZone (its SOA as spec.soaRecord, its apex NS as spec.nameServers) and one "
               "record CR per RRset (per value for MX, TXT, NS, SRV and CAA), selected by the "
               "DNSZone's recordsFrom. The output validates, and a sync of it changes no RRset; "
               "what cannot be a CR (DNSSEC data, other types) is listed as skipped and left alone "
               "by the agent. With --output-dir DIR: DIR/zones/<zone>.yaml and "
               "DIR/records/<zone>.yaml (existing files are not overwritten); else stdout. Exit 0 "
               "written, 1 written but invalid, 2 usage error, 3 could not run.")


EXAMPLES = flagsets.examples(
    ("print a zone as CRs, transferred from its primary",
     "bindy-agent import --zone example.com --server ns1.example.com"),
    ("write them into the repository, for the zones of a Bind9Cluster",
     "bindy-agent import --zone example.com --server 192.0.2.53:53 --tsig-key-file transfer.key "
     "\\\n      --cluster-ref dns --output-dir dns/"))


def build(add: common.AddVerb) -> None:
    im = add(description=DESCRIPTION, epilog=EXAMPLES)
    im.set_defaults(func=run)
    add_arguments(im)


class _OutputIsAFormat(argparse.Action):
    """`-o` names an output format in every verb: `-o yaml` is what import prints; its directory is
    --output-dir."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        if values == "yaml":
            return
        parser.error(f"-o/--output is an output format in every verb; give the directory with "
                     f"--output-dir {values} (import prints YAML when it has none)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--zone", required=True, metavar="NAME", type=_zone,
                   help="the zone to import, e.g. example.com")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--server", metavar="HOST:PORT", type=_server,
                        help="a server that allows the transfer (port 53 if none is given)")
    importfile.add_argument(source)
    p.add_argument("--tsig-key-file", type=common.readable_file, metavar="FILE",
                   help='BIND key file signing the transfer: key "name" { algorithm ...; secret '
                        '"..."; };')
    flagsets.add_namespace(p, f"namespace of the CRs (default: the agent's first allowed "
                           f"namespace, {names.DEFAULT_NAMESPACE})")
    p.add_argument("--cluster-ref", metavar="NAME",
                   help="the Bind9Cluster (or ClusterBind9Provider) to serve the zone: "
                        "spec.clusterRef")
    p.add_argument("--output-dir", type=pathlib.Path, metavar="DIR",
                   help="write DIR/zones/<zone>.yaml and DIR/records/<zone>.yaml instead of "
                        "printing")
    p.add_argument("-o", "--output", action=_OutputIsAFormat, metavar="yaml",
                   help="output format: yaml, the only one (the files of --output-dir DIR are YAML "
                        "too)")
    p.add_argument("--timeout", type=_timeout, default=60, metavar="SECONDS",
                   help="the most the whole transfer may take; a server that stalls or trickles is "
                   "cut then (default: %(default)s)")
    common.add_transfer_flags(p)


def _timeout(value: str) -> float:
    seconds = common.seconds(value)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} must be more than 0 seconds")
    return seconds


def _zone(value: str) -> str:
    try:
        name = dns.name.from_text(value)
    except dns.exception.DNSException as exc:
        raise argparse.ArgumentTypeError(f"{value!r} is not a zone name: {exc}") from None
    if name == dns.name.root or any(not label for label in name.labels[:-1]):
        raise argparse.ArgumentTypeError(f"{value!r} is not a zone name")
    return rrsets.absolute(name.to_text())


def _server(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or "]" in port:
        host, port = value, "53"
    if not host.strip("[]") or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{value!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def _endpoint(args: argparse.Namespace) -> endpoints.Endpoint:
    """The server to transfer from: a host name is resolved (DNS queries go to an address)."""
    host, port = args.server
    try:
        address = str(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4][0])
    except (socket.gaierror, UnicodeError) as exc:
        raise ConfigError(f"cannot resolve the server {host!r}: {exc}") from exc
    tsig = None
    if args.tsig_key_file:
        tsig = endpoints.parse_key_file(operatorfile.read_text(args.tsig_key_file,
                                                               setting="--tsig-key-file",
                                                             limit=operatorfile.KEY_BYTES),
                                        str(args.tsig_key_file))
    return endpoints.Endpoint(f"{host}:{port}", address, port, "", tsig=tsig)


def _write(args: argparse.Namespace, adopted: adopt.Adopted, header: str) -> list[pathlib.Path]:
    zone_text = adopt.to_yaml([adopted.zone], header)
    records_text = adopt.to_yaml(adopted.records, header) if adopted.records else ""
    if args.output_dir is None:
        sys.stdout.write(zone_text + ("---\n" + records_text if records_text else ""))
        return []
    stem = adopted.zone["metadata"]["name"]
    targets = [(args.output_dir / "zones" / f"{stem}.yaml", zone_text)]
    if records_text:
        targets.append((args.output_dir / "records" / f"{stem}.yaml", records_text))
    existing = [str(path) for path, _ in targets if path.exists()]
    if existing:
        raise FileExistsError(f"{', '.join(existing)} already exists; nothing written (remove it, "
                              "or choose another --output-dir)")
    for path, text in targets:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return [path for path, _ in targets]


def run(args: argparse.Namespace) -> int:
    if args.zone_file is not None:
        live = importfile.read(args)
        if live is None:
            return common.EXIT_INVALID
        return _adopted(args, live, f"{args.zone_file} (zone file of {args.zone})")
    try:
        endpoint = _endpoint(args)
        live = axfr.read_zone(endpoint, args.zone, timeout=min(10.0, args.timeout),
                              lifetime=args.timeout, limits=common.transfer_limits(args),
                              time_hint="give it more time with --timeout SECONDS")
    except ZoneMissing:
        host, port = args.server
        print(f"bindy-agent import: error: {host}:{port} does not serve zone {args.zone} (or "
              f"refuses it: NOTAUTH)",
              file=sys.stderr)
        return common.EXIT_UNREACHABLE
    except AgentError as exc:
        print(f"bindy-agent import: error: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    return _adopted(args, live, f"{endpoint.instance} (AXFR of {args.zone})")


def _adopted(args: argparse.Namespace, live: dict[Key, rrsets.RRset], source: str) -> int:
    """The zone's RRsets (`source`: where they came from, for the header) written as CRs."""
    try:
        adopted = adopt.adopt(args.zone, live, namespace=common.default_namespace(args),
                              cluster_ref=args.cluster_ref)
    except ValueError as exc:
        print(f"bindy-agent import: error: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    errors = adopt.check(adopted, namespace=common.default_namespace(args))
    header = f"# Imported by `bindy-agent import` from {source}.\n"
    try:
        written = _write(args, adopted, header)
    except OSError as exc:
        print(f"bindy-agent import: error: {exc}", file=sys.stderr)
        return common.EXIT_UNREACHABLE
    _summary(args, adopted, len(live), written)
    common.print_problems(errors, "imported DNSZone: ", sys.stderr)
    return common.EXIT_INVALID if errors else common.EXIT_OK


def _summary(args: argparse.Namespace, adopted: adopt.Adopted, count: int,
             written: list[pathlib.Path]) -> None:
    where = f" to {', '.join(str(p) for p in written)}" if written else ""
    print(f"{args.zone}: {count} RRsets -> 1 DNSZone and {len(adopted.records)} record CRs{where}",
          file=sys.stderr)
    for line in adopted.moved:
        print(f"  into the DNSZone: {line}", file=sys.stderr)
    for line in adopted.skipped:
        print(f"  skipped (the agent leaves it alone): {line}", file=sys.stderr)
    if not args.cluster_ref:
        print("note: the DNSZone names no servers yet: add spec.clusterRef (--cluster-ref) or "
              "bind9InstancesFrom, or label it for a cluster's zonesFrom", file=sys.stderr)
