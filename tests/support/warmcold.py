"""A long-running agent's memoized runs against a cold agent's: the world (what a cold run would still
plan) and the CRs' statuses (what a cold run would rewrite), on the sample world (tests/support/sampleworld.py)."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from agent.clients import rfc2136 as records
from agent.model import kinds
from agent.run import orchestrator
from agent.run.memory import Memory
from tests.support import sampleworld

WEB = "records/example-com/web.yaml"
SITE = "records/example-org/site.yaml"
ORG_ZONE = "zones/example-org.yaml"

Conditions = list[tuple[str, str, str, str]]  # (type, status, reason, message), sorted


def world_of(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """The sample world with a long-running agent's memory (`world["memory"]`)."""
    world = sampleworld.sample_world(*args, **kwargs)
    world["memory"] = Memory()
    return world


def run(world: dict[str, Any], memory: Memory | None = None, **kwargs: Any) -> orchestrator.RunOutcome:
    return sampleworld.run(world, world["memory"] if memory is None else memory, **kwargs)


def commit(world: dict[str, Any], files: dict[str, str | None], message: str = "change") -> str:
    sha: str = world["remote"].commit(message, files)
    world["remote"].push()
    return sha


def lines(out: orchestrator.RunOutcome) -> list[str]:
    """Every line of a run's plan, as text."""
    plan = out.plan
    assert plan is not None
    got = [f"{c.action.value} {c.target} {c.fields or ''} {c.after if c.target.layer == 'records' else ''}"
           for c in plan.changes]
    return got + [f"conflict {c}" for c in plan.conflicts] + [f"refusal {r}" for r in plan.refusals]


def cold_plan(world: dict[str, Any], **kwargs: Any) -> list[str]:
    """What a cold agent (a fresh memory) would change now."""
    out = run(world, Memory(), dry_run=True, **kwargs)
    assert out.outcome == "planned", (out.outcome, out.message, out.failures)
    return lines(out)


def statuses(world: dict[str, Any]) -> dict[str, Conditions]:
    """Every namespaced Bindy CR's conditions, by kind/name, as the cluster holds them."""
    api = client.CustomObjectsApi(world["api"].client)
    out: dict[str, Conditions] = {}
    for kind in kinds.KINDS.values():
        if not kind.namespaced:
            continue
        items = api.list_namespaced_custom_object(kinds.GROUP, "v1beta1", world["namespace"], kind.plural)
        for item in items["items"]:
            conds = (item.get("status") or {}).get("conditions") or []
            out[f"{kind.name}/{item['metadata']['name']}"] = sorted(
                (c.get("type", ""), c.get("status", ""), c.get("reason", ""), c.get("message", "")) for c in conds)
    return out


def serves(world: dict[str, Any], name: str, rtype: str = "A") -> dict[str, tuple[str, ...]]:
    """What every server answers for `name`, by instance."""
    return {k: records.query(e, name, rtype) for k, e in world["endpoints"].items()}


def status_vs_cold(world: dict[str, Any], **kwargs: Any) -> dict[str, tuple[Conditions | None, Conditions | None]]:
    """The statuses the memoized runs left against those a cold run then writes: {CR: (warm, cold)} that differ."""
    warm = statuses(world)
    cold = run(world, Memory(), **kwargs)
    assert cold.outcome == "applied", (cold.outcome, cold.failures, cold.message)
    after = statuses(world)
    return {k: (warm.get(k), after.get(k)) for k in set(warm) | set(after) if warm.get(k) != after.get(k)}


def docs_without(text: str, name: str) -> str:
    """A multi-document file without the CR named `name`."""
    return "\n---\n".join(d for d in text.split("\n---\n") if f"  name: {name}\n  namespace" not in d)
