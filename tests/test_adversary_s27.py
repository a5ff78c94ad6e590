"""Holes a second attack on session 27's changes found, each shown closed: a webhook run's fetch read
by a later caller, a pod waiting for its zones while the head is rejected given the rejected head
again, and a secondary that refuses the
agent (its allow-query) or has not loaded a zone yet taken as having lost its zones."""

from __future__ import annotations

import pathlib
import socket
import threading
import time
import types
from typing import Any

import dns.message
import dns.rcode
import dns.rrset

from agent.clients import rfc2136
from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint
from agent.model.key import ObjectKey
from agent.model.ownership import RunState
from agent.observe import soaserials
from agent.run import memorize, orchestrator
from agent.run.decision import Head, Why
from agent.run.memory import Memory
from agent.run.planner import Options
from agent.run.revisions import GitRevisions
from agent.sources.git import GitSource
from tests.support.gitremote import GitRemote


def test_what_a_webhook_run_fetched_is_not_read_after_its_run(tmp_path: pathlib.Path) -> None:
    remote = GitRemote(tmp_path / "git")
    first = remote.commit("first", {"dns/a.yaml": "x: 1\n"})
    remote.push()
    revisions = GitRevisions(GitSource(remote.url, tmp_path / "cache"))
    revisions.bound(lambda: 60.0)  # a webhook run starts (agent/run/runhold.py)
    assert revisions.head(fetch=True) == first  # ... finds the head unchanged and stops
    revisions.bound(None)  # its end
    second = remote.commit("second", {"dns/a.yaml": "x: 2\n"})
    remote.push()
    assert revisions.snapshot().revision == second  # what a standby's follow reads next


class _Source:
    """Which revision a run reads: the head (`snapshot`) or the one that serves (`at`)."""

    def __init__(self) -> None:
        self.read: list[str] = []

    def snapshot(self) -> str:
        self.read.append("head")
        return "head"

    def at(self, sha: str) -> str:
        self.read.append(f"at {sha[:4]}")
        return "serving"


def test_a_pod_waiting_for_its_zones_while_the_head_is_rejected_gets_the_revision_that_serves() -> None:
    memory = Memory()
    memorize.pods_seen(memory, True, frozenset())
    memory.served_at = time.monotonic()  # the last resync was just now: none is due
    memory.serials_at = 123.0
    source = _Source()
    run = orchestrator._Run(source, None, Options(resync_after=3600), "r1", memory)  # type: ignore[arg-type]
    run.state = RunState("a" * 40, "b" * 40, "rejected", time.time() - 60, message="rejected")
    assert run._decide(Head("b" * 40)).why is Why.REPAIR_FOR_PODS  # not unchanged, not a resync
    run._snapshot("b" * 40)
    assert source.read == ["at aaaa"] and run.repairing
    assert memory.serials_at == 123.0  # not a resync: what the agent knows of the servers is kept


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


def _zone(name: str) -> Any:
    return types.SimpleNamespace(name=name, secondaries=[ObjectKey("Bind9Instance", "ns", "sec")])


def _lost(rcode: int, held: tuple[str, ...]) -> list[tuple[str, str]]:
    sock = _server(rcode, held)
    try:
        endpoint = Endpoint("ns/sec", "127.0.0.1", sock.getsockname()[1], "http://127.0.0.1:1")
        zones = ["a.example.", "b.example."]
        desired: Any = types.SimpleNamespace(zones=[_zone(z) for z in zones])
        owned = types.SimpleNamespace(placements={"ns/sec": "secondary"})
        questions = soaserials.Questions()
        soaserials.secondaries(questions, desired, {z: owned for z in zones},  # type: ignore[arg-type]
                               {"ns/sec": endpoint}, {}, None, None)
        return soaserials.without(questions, soaserials.ask(questions, {"ns/sec": endpoint}, Deadline(30)))
    finally:
        sock.close()


def test_a_secondary_is_taken_as_without_a_zone_only_when_it_answers_for_another() -> None:
    assert _lost(dns.rcode.REFUSED, ("a.example.",)) == [("b.example.", "ns/sec")]  # lost: put back
    assert _lost(dns.rcode.REFUSED, ()) == []  # refuses everything: its allow-query, not lost zones
    assert _lost(dns.rcode.SERVFAIL, ("a.example.",)) == []  # held, not loaded yet (or expired)


def test_holds_tells_no_such_zone_from_not_loaded() -> None:
    for rcode, want in ((dns.rcode.REFUSED, False), (dns.rcode.NOTAUTH, False), (dns.rcode.SERVFAIL, None)):
        sock = _server(rcode)
        try:
            endpoint = Endpoint("ns/sec", "127.0.0.1", sock.getsockname()[1], "http://127.0.0.1:1")
            assert rfc2136.holds(endpoint, ["a.example."], timeout=0.5) == {"a.example.": want}, rcode
        finally:
            sock.close()
