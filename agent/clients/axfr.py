"""A zone transfer (AXFR over TCP) that the peer cannot hold: bounded in time, octets and records.

dnspython's `inbound_xfr` restarts its per-message `timeout` with every message and counts
nothing: a server that streams records without end fills memory until the transfer's lifetime
ends, and one that trickles a message every few seconds is only cut by that lifetime. Here the
transfer is read message by message (dnspython parses each one, checks its TSIG and builds the
zone: `dns.xfr.Inbound`), and it stops at whichever comes first: the deadline (`lifetime`), no
data for `timeout` seconds, `max_bytes` octets or `max_records` records. The error says which,
for which server and zone, and how to raise it.
"""

from __future__ import annotations

import dataclasses
import select
import socket
import struct
import time

import dns.exception
import dns.message
import dns.rcode
import dns.rdatatype
import dns.xfr
import dns.zone

from agent.clients import endpoints, rfc2136
from agent.desired import rrsets, zonefile
from agent.errors import TransferRefused, ZoneMissing, ZoneTransferError
from agent.model import calls
from agent.model.ownership import Key

MiB = 1024 * 1024


@dataclasses.dataclass(frozen=True)
class TransferLimits:
    """How much one zone transfer may bring in. Sized for the agent's own limits: a revision holds
    at most 250,000 documents (max_documents) of 64 MiB of YAML (max_revision_bytes); a zone's
    transfer is allowed twice that in records, for multi-valued RRsets and data the agent did not
    write."""

    max_bytes: int = 128 * MiB
    max_records: int = 500_000

    def __post_init__(self) -> None:
        if self.max_bytes < 1 or self.max_records < 1:
            raise ValueError("transfer limits must be at least 1")


DEFAULT_LIMITS = TransferLimits()
BYTES_HELP = ("most octets one zone transfer (AXFR) may bring in before it is cut (default 128 "
              "MiB; 100,000 records weigh about 5 MB on the wire)")
RECORDS_HELP = ("most records one zone transfer (AXFR) may bring in before it is cut (default "
                "500,000: twice the 250,000 documents a revision may hold)")


class TransferCut(ZoneTransferError):
    """The transfer hit one of its bounds; `limit` names which ("time", "idle", "bytes",
    "records")."""

    def __init__(self, message: str, *, limit: str) -> None:
        super().__init__(message, retryable=limit in ("time", "idle"))
        self.limit = limit


def _read(sock: socket.socket, count: int, until: float) -> bytes:
    """Exactly `count` octets, or TimeoutError at `until` (time.monotonic()), EOFError if closed."""
    out = bytearray()
    while len(out) < count:
        left = until - time.monotonic()
        if left <= 0 or not select.select([sock], [], [], left)[0]:
            raise TimeoutError
        chunk = sock.recv(count - len(out))
        if not chunk:
            raise EOFError
        out += chunk
    return bytes(out)


@dataclasses.dataclass(frozen=True)
class TransferBounds:
    """Where one transfer is cut: no data for `timeout` seconds, the whole of it past `lifetime`
    seconds, or the octets and records of `limits`; `time_hint` says how the operator gives it more
    time."""

    timeout: float
    lifetime: float
    limits: TransferLimits
    time_hint: str


@dataclasses.dataclass
class _Progress:
    """What a transfer brought in so far, held to its bounds: each count past its limit, and a
    timeout, is a TransferCut saying which bound, for which server and zone, and how to raise it."""

    server: str
    zone: str
    bounds: TransferBounds
    start: float
    octets: int = 0
    records: int = 0

    def cut(self, limit: str, what: str, how: str) -> TransferCut:
        return TransferCut(f"{self.server}: AXFR of {self.zone} cut: {what}; {how}", limit=limit)

    def until(self) -> float:
        """When the next octets must have come (time.monotonic())."""
        return min(time.monotonic() + self.bounds.timeout, self.start + self.bounds.lifetime)

    def add_octets(self, count: int) -> None:
        self.octets += count
        limit = self.bounds.limits.max_bytes
        if self.octets > limit:
            raise self.cut("bytes", f"more than {limit:,} octets ({self.records:,} records so far)",
                           "the limit is max_transfer_bytes: raise it with --max-transfer-bytes "
                           "(setting BINDY_AGENT_MAX_TRANSFER_BYTES) if the zone is really that "
                           "large")

    def add_records(self, count: int) -> None:
        self.records += count
        limit = self.bounds.limits.max_records
        if self.records > limit:
            raise self.cut("records",
                           f"more than {limit:,} records ({self.octets:,} octets so far)",
                           "the limit is max_transfer_records: raise it with "
                           "--max-transfer-records (setting BINDY_AGENT_MAX_TRANSFER_RECORDS) if "
                           "the zone is really that large")

    def timed_out(self) -> TransferCut:
        """The cut for a TimeoutError: the transfer's lifetime ran out, or no data came."""
        took = time.monotonic() - self.start
        so_far = f"{self.records:,} records, {self.octets:,} octets so far"
        if took >= self.bounds.lifetime - 0.01:
            return self.cut("time", f"not finished within {self.bounds.lifetime:.0f} s ({so_far})",
                            self.bounds.time_hint)
        return self.cut("idle", f"no data for {self.bounds.timeout:.0f} s ({so_far})",
                        "the server stalled; the next attempt asks again")


@calls.measured("axfr", "axfr")
def transfer(host: str, port: int, xfr: dns.zone.Zone, request: dns.message.Message, *,
             server: str, bounds: TransferBounds) -> None:
    """Transfers the zone `request` asks for from host:port into `xfr`, within `bounds`. Raises
    TransferCut at a bound; dnspython's errors, OSError and EOFError otherwise."""
    zone = xfr.origin.to_text() if xfr.origin else "?"
    progress = _Progress(server, zone, bounds, time.monotonic())
    try:
        connect = max(0.001, min(bounds.timeout, bounds.lifetime))
        with socket.create_connection((host, port), timeout=connect) as sock:
            wire = request.to_wire()
            sock.sendall(struct.pack("!H", len(wire)) + wire)
            _receive(sock, xfr, request, progress)
    except TimeoutError:
        raise progress.timed_out() from None


def _receive(sock: socket.socket, xfr: dns.zone.Zone, request: dns.message.Message,
             progress: _Progress) -> None:
    """The transfer's messages, one by one into `xfr` (dnspython checks each one's TSIG), each
    counted against the bounds."""
    with dns.xfr.Inbound(xfr, dns.rdatatype.AXFR, None, False) as inbound:
        done, tsig_ctx = False, None
        while not done:
            (length,) = struct.unpack("!H", _read(sock, 2, progress.until()))
            progress.add_octets(2 + length)
            message = dns.message.from_wire(_read(sock, length, progress.until()),
                                            keyring=request.keyring, request_mac=request.mac,
                                            xfr=True, origin=xfr.origin, tsig_ctx=tsig_ctx,
                                            multi=True)
            if message.id != request.id:
                raise dns.exception.FormError(f"{progress.server}: the transfer answers another "
                                              f"query (id {message.id})")
            progress.add_records(sum(len(rrset) for rrset in message.answer))
            done = inbound.process_message(message)
            tsig_ctx = message.tsig_ctx


def read_zone(endpoint: endpoints.Endpoint, zone: str, *, timeout: float = 10,
              lifetime: float | None = None, limits: TransferLimits = DEFAULT_LIMITS,
              time_hint: str = "give the run more time with --deadline",
              ) -> dict[Key, rrsets.RRset]:
    """The zone's RRsets, read with a TSIG-signed AXFR from `endpoint`: cut when no data comes for
    `timeout` seconds, when the whole transfer takes `lifetime` (default three times `timeout`), or
    at the octets and records of `limits` (`transfer`)."""
    keyring, keyname, algorithm = rfc2136.tsig_keyring(endpoint.tsig)
    xfr = dns.zone.Zone(zone)
    request, _ = dns.xfr.make_query(xfr)
    if keyring is not None:
        request.use_tsig(keyring, keyname, algorithm=algorithm)
    try:
        bounds = TransferBounds(timeout, timeout * 3 if lifetime is None else lifetime, limits,
                                time_hint)
        transfer(endpoint.dns_host, endpoint.dns_port, xfr, request, server=endpoint.instance,
                 bounds=bounds)
    except dns.xfr.TransferError as exc:
        if exc.rcode in (dns.rcode.NOTAUTH, dns.rcode.NOTZONE):
            raise ZoneMissing(f"{endpoint.instance}: does not serve zone {zone}") from exc
        if exc.rcode == dns.rcode.REFUSED:
            raise TransferRefused(f"{endpoint.instance}: AXFR of {zone} refused (the zone's "
                                  "allow-transfer does not list the agent's address)") from exc
        raise ZoneTransferError(f"{endpoint.instance}: AXFR of {zone} failed: {exc}") from exc
    except rfc2136.NETWORK_ERRORS as exc:
        raise ZoneTransferError(f"{endpoint.instance}: AXFR of {zone} failed: "
                                f"{rfc2136.why(exc)}") from exc
    return zonefile.rrsets_of(xfr, zone)  # as a zone file of the same zone reads
