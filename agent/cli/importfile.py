"""`bindy-agent import --zone-file FILE --zone Z`: a zone file (RFC 1035 master file, as BIND loads
it) read into the same CRs the AXFR import writes for the same zone served from that file
(agent/desired/zonefile.py). The file is read through the door of every file the operator names
(agent/sources/operatorfile.py: a regular file, opened without blocking, never more than the limit
read) within the transfer limits: at most --max-transfer-bytes octets and --max-transfer-records
records (counted as $GENERATE makes them); $INCLUDE is refused."""

from __future__ import annotations

import argparse
import os
import sys

from agent.cli import common
from agent.desired import zonefile
from agent.desired.rrsets import RRset
from agent.model.ownership import Key
from agent.sources import operatorfile

HELP = ("a zone file (RFC 1035 master file: $ORIGIN, $TTL and $GENERATE read as BIND reads them, "
        "$INCLUDE refused) to import instead of a live zone; --zone names its origin")


def add_argument(group: argparse._MutuallyExclusiveGroup) -> None:
    group.add_argument("--zone-file", type=common.readable_file, metavar="FILE", help=HELP)


def read(args: argparse.Namespace) -> dict[Key, RRset] | None:
    """The zone file's RRsets, or None when it cannot be imported (said on stderr)."""
    path, limit = args.zone_file, args.max_transfer_bytes
    try:
        size = os.stat(path).st_size
        if size > limit:
            print(f"bindy-agent import: error: {path}: {size:,} bytes, more than the {limit:,} an "
                  "import reads (--max-transfer-bytes)", file=sys.stderr)
            return None
        text = operatorfile.read_bytes(path, setting="--zone-file", limit=limit).decode("utf-8")
        return zonefile.parse(text, args.zone, filename=str(path),
                              max_records=args.max_transfer_records)
    except OSError as exc:
        print(f"bindy-agent import: error: {path}: cannot read it: {exc.strerror}", file=sys.stderr)
    except operatorfile.Unreadable as exc:
        print(f"bindy-agent import: error: {exc}", file=sys.stderr)
    except UnicodeDecodeError as exc:
        print(f"bindy-agent import: error: {path}: not UTF-8 text ({exc.reason} at byte "
              f"{exc.start})",
              file=sys.stderr)
    except zonefile.ZoneFileError as exc:
        print(f"bindy-agent import: error: {exc}", file=sys.stderr)
    return None
