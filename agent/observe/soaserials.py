"""The SOA serials one observe asks: every server once, all its zones in one exchange.

A primary is asked for the zones the agent remembers there (the same serial: not transferred
again, agent/observe/dnsobserve.py), a secondary's pod for the zones it must serve (one without
the zone's serial is written again), and, on a run that asks every zone, a secondary reached
through one address whether it holds its zones (one that answers for some and not for others lost
those). A server in several of these roles (primary of some zones, secondary of others) is asked
once for all of them; the answers are kept (`DnsObserved.serials`) for what the run reuses later.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Protocol

from agent.clients import dnsquery
from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint
from agent.desired.hierarchy import Desired
from agent.model.observed import ZoneObserved
from agent.model.ownership import ZoneOwnership
from agent.model.servers import instance_id

# server -> zone -> what its SOA query answered (dnsquery.soa)
Answers = dict[str, dict[str, int | None]]


class Memory(Protocol):
    """What the agent last saw of a zone on a server (agent/observe/dnsobserve.DnsMemory)."""

    def seen(self, zone: str, primary: str) -> ZoneObserved | None: ...


@dataclasses.dataclass
class Questions:
    """Server -> zones, for each reason a server is asked (a server may be in several)."""

    # primaries: serial moved?
    remembered: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    # secondary pods: serial there?
    pods: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    # secondaries: zone held?
    addresses: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    def by_server(self) -> dict[str, list[str]]:
        """Each server's zones, once, in the order asked (primaries, then pods, then addresses)."""
        out: dict[str, dict[str, None]] = {}
        for asked in (self.remembered, self.pods, self.addresses):
            for server, zones in asked.items():
                out.setdefault(server, {}).update(dict.fromkeys(zones))
        return {server: list(zones) for server, zones in out.items()}


def serial(answer: int | None) -> int | None:
    """The serial in an answer (None: no answer, or the server does not hold the zone)."""
    return answer if answer is not None and answer != dnsquery.NOT_HELD else None


def ask(questions: Questions, servers: Mapping[str, Endpoint], deadline: Deadline) -> Answers:
    """One SOA exchange per server, for all its zones; none once the deadline has passed."""
    out: Answers = {}
    for server, zones in questions.by_server().items():
        if deadline.expired:
            break
        out[server] = dnsquery.soa(servers[server], zones, timeout=deadline.timeout(2))
    return out


def remembered(questions: Questions, jobs: Iterable[tuple[str, str]], memory: Memory,
               focus: set[str] | None) -> dict[tuple[str, str], ZoneObserved]:
    """The (zone, primary server) jobs the agent remembers: asked (into `questions.remembered`), or,
    outside a `focus`, taken as remembered without asking (returned)."""
    out: dict[tuple[str, str], ZoneObserved] = {}
    for zone, server in jobs:
        seen = memory.seen(zone, server)
        if seen is None:
            continue
        if focus is not None and zone not in focus and seen.serial is not None:
            out[(zone, server)] = seen
        else:
            questions.remembered.setdefault(server, []).append(zone)
    return out


def unmoved(questions: Questions, answers: Answers,
            memory: Memory) -> dict[tuple[str, str], ZoneObserved]:
    """The remembered zones whose serial on their primary is the one the agent last saw: what it saw
    then."""
    out: dict[tuple[str, str], ZoneObserved] = {}
    for server, zones in questions.remembered.items():
        now = answers.get(server, {})
        for zone in zones:
            seen = memory.seen(zone, server)
            if seen is not None and serial(now.get(zone)) is not None and now[zone] == seen.serial:
                out[(zone, server)] = seen
    return out


def secondaries(questions: Questions, desired: Desired, ownership: Mapping[str, ZoneOwnership],
                servers: Mapping[str, Endpoint], pods: Mapping[str, tuple[str, ...]],
                focus: set[str] | None, only: set[str] | None) -> None:
    """The secondary servers to ask (into `questions`): each pod of a secondary instance the zone is
    placed on (has it the zone's serial?), and, on a run that reads every zone (no `focus`: a
    resync), an instance reached through one address (does it hold the zone?)."""
    for z in desired.zones:
        if (only is not None and z.name not in only) or (focus is not None and z.name not in focus):
            continue
        owned = ownership.get(z.name)
        for key in z.secondaries:
            inst = instance_id(key)
            if owned is None or owned.placements.get(inst) != "secondary":
                continue
            if inst in pods:
                for server in pods[inst]:
                    questions.pods.setdefault(server, []).append(z.name)
            elif inst in servers and focus is None:
                questions.addresses.setdefault(inst, []).append(z.name)


def without(questions: Questions, answers: Answers) -> list[tuple[str, str]]:
    """(zone, server) for each secondary server that does not serve a zone placed on it: a pod
    without the zone's serial (started after the zone was placed, or restarted with an empty
    emptyDir); an instance reached through one address that answers for some of its zones and not
    for this one (deleted by hand, or its data lost). Such a zone is planned on that server
    again."""
    out: list[tuple[str, str]] = []
    for server, zones in questions.pods.items():
        if server in answers:
            out += [(zone, server) for zone in zones if serial(answers[server].get(zone)) is None]
    # a server that does not answer is not taken as empty, nor one that refuses every zone (its
    # allow-query may not let the agent in)
    for server, zones in questions.addresses.items():
        held = answers.get(server, {})
        if any(serial(held.get(zone)) is not None for zone in zones):
            out += [(zone, server) for zone in zones if held.get(zone) == dnsquery.NOT_HELD]
    return out
