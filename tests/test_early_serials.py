"""Serials asked early, while a revision loads, count only when asked of the endpoint the plan uses."""

from __future__ import annotations

import socket

from agent.plan.observed import ZoneObserved
from agent.reconcile import dnsobserve
from agent.reconcile.deadline import Deadline
from agent.reconcile.endpoints import Endpoint


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_answers_from_another_address_are_not_trusted() -> None:
    memory = dnsobserve.DnsMemory()
    memory.remember("example.com.", "dns/primary-0", ZoneObserved({}, serial=7))
    memory.remember("example.org.", "dns/elsewhere", ZoneObserved({}, serial=7))
    asked = Endpoint("dns/primary-0", "127.0.0.1", _closed_port(), "http://127.0.0.1:1")
    early = dnsobserve.EarlySerials(memory, {"dns/primary-0": asked}, Deadline(5))

    # nothing listens there: the zone was asked and got no answer (so it is transferred)
    assert early.answers("dns/primary-0", asked) == {"example.com.": None}
    moved = Endpoint("dns/primary-0", "127.0.0.2", asked.dns_port, asked.api_url)
    assert early.answers("dns/primary-0", moved) == {}  # the instance moved: ask again, there
    assert early.answers("dns/elsewhere", asked) == {}  # no endpoint was known for it: not asked
