"""A zone on a real named pair and zone API that someone changes between a run's observe and its apply:
the started world (fixture `started`, over the integration fixtures `bind` and `zone_api`), the race that
makes the change, and what a server serves."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from agent.clients import axfr
from agent.clients import endpoints as config
from tests.support import agentrun, dnsworld
from tests.support import bind as bind_support

APEX_NS = "ns1.example.com."  # the zone's own NS (its SOA's primary name server): Git declares it too


def _world(tmp_path: pathlib.Path, bind: bind_support.BindPair, zone_api: Any) -> dnsworld.Dns:
    return dnsworld.Dns(bind, zone_api, dnsworld.endpoint_map(tmp_path / "endpoints", bind, zone_api))


def _write(repo: pathlib.Path, rev: dnsworld.Revision, zone: str) -> None:
    """The revision, and the zone's apex NS declared in Git (so the agent manages it)."""
    dnsworld.write_repo(repo, rev)
    path = repo / f"zone-{zone}.yaml"
    path.write_text(path.read_text() + f"---\n{dnsworld.HEAD}kind: NSRecord\nmetadata: {{name: apex-ns, namespace: "
                    f"dns-system}}\nspec:\n  name: {zone}.\n  ttl: 300\n"
                    f"  nameserver: {APEX_NS}\n")


def _race(monkeypatch: pytest.MonkeyPatch, world: dnsworld.Dns, zone: str, change: Any) -> list[str]:
    """Someone changes the zone right after the agent's first transfer of it (before its UPDATE);
    returns the list of zones transferred, in order."""
    real, read, raced = axfr.read_zone, [], []

    def read_then_race(endpoint: Any, name: str, **kw: Any) -> Any:
        seen = real(endpoint, name, **kw)
        read.append(name)
        if name == f"{zone}." and not raced:
            raced.append(name)
            world.update(zone, change)
        return seen

    monkeypatch.setattr(axfr, "read_zone", read_then_race)
    return read


@pytest.fixture
def started(tmp_path: pathlib.Path, bind: bind_support.BindPair, zone_api: Any) -> dict[str, Any]:
    world = _world(tmp_path, bind, zone_api)
    (zone,) = dnsworld.zone_names(1)
    repo, state = tmp_path / "repo", tmp_path / "state"
    endpoints = config.load_endpoints(world.endpoints)
    a = dnsworld.revision([zone], 12)
    _write(repo, a, zone)
    first = agentrun.sync_dir(repo, state=state, endpoints=endpoints, force=True)  # the apex NS is a create
    assert first.outcome == "applied", (first.failures, first.refusals, [str(p) for p in first.problems])
    return {"world": world, "zone": zone, "repo": repo, "state": state, "endpoints": endpoints, "a": a}


def _served(world: dnsworld.Dns, zone: str, name: str, rtype: str) -> tuple[str, ...] | None:
    served = world.axfr(world.pair.primary, zone) or {}
    found = served.get((f"{name}.{zone}." if name != "@" else f"{zone}.", rtype))
    return found[1] if found else None
