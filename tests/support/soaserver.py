"""A UDP DNS server on loopback that answers SOA questions for the zones it holds and another rcode for
the rest: a secondary that refuses the agent, has not loaded a zone yet, or lost it."""

from __future__ import annotations

import socket
import threading

import dns.message
import dns.rcode
import dns.rrset


def _server(rcode: int, zones_held: tuple[str, ...] = ()) -> socket.socket:
    """A UDP DNS server answering each SOA question of `zones_held` with an SOA, every other with `rcode`."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                wire, peer = sock.recvfrom(4096)
            except OSError:
                return
            query = dns.message.from_wire(wire)
            reply = dns.message.make_response(query)
            name = query.question[0].name.to_text()
            if name in zones_held:
                reply.answer.append(dns.rrset.from_text(name, 60, "IN", "SOA", f"ns.{name} h.{name} 7 1 1 1 1"))
            else:
                reply.set_rcode(rcode)
            sock.sendto(reply.to_wire(), peer)

    threading.Thread(target=serve, daemon=True).start()
    return sock
