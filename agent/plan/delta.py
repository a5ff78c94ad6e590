"""The delta of a pull request (pure): what applying `head` changes in a world where `base` was
applied.

    base ──plan against an empty world──► the world base leaves behind (`would_be`)
    head ──plan against that world──────► the delta: every Kubernetes object, zone placement
                                          and RRset that head adds, changes or removes

`would_be` is what the agent's own runs would have left: every object applied with the agent's
labels and hash, every zone placed on its instances, every RRset written and owned. So the delta
is exactly what a sync of head would plan right after a sync of base, including what the safety
gate would then see (the gate runs above this layer, on the returned Plan).
"""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

from agent.desired.hierarchy import Desired, KubeObject
from agent.model import names, servers
from agent.model.observed import DnsObserved, KubeObserved, Observed, ZoneObserved
from agent.model.ownership import ZoneOwnership
from agent.plan import build, kubechange, zonediff
from agent.plan.changes import Action, Change, KubeTarget, Plan, mask_secrets


def _as_applied(obj: KubeObject, agent: str) -> dict[str, Any]:
    """The live object a sync of `obj` leaves: the manifest, a Secret's values in `data` as the API
    server has them."""
    body = kubechange.manifest(obj, agent)
    if body.get("kind") == "Secret" and isinstance(body.get("stringData"), dict):
        data = {k: base64.b64encode(str(v).encode()).decode()
                for k, v in body.pop("stringData").items()}
        body["data"] = {**(body.get("data") or {}), **data}
    return body


def _kube_world(desired: Desired, agent: str) -> KubeObserved:
    live = {o.key: _as_applied(o, agent) for o in desired.objects}
    namespaces = {o.key.namespace for o in desired.objects if o.key.namespace}
    return KubeObserved(live, set(live), namespaces)


def _dns_world(desired: Desired, reachable: set[str]) -> DnsObserved:
    ownership: dict[str, ZoneOwnership] = {}
    zones: dict[str, dict[str, ZoneObserved]] = {}
    for zone in desired.zones:
        placements = {**{servers.instance_id(k): "secondary" for k in zone.secondaries},
                      **{servers.instance_id(k): "primary" for k in zone.primaries}}
        annotations = {k: v for k, v in zone.annotations.items() if k in zonediff.GATE_ANNOTATIONS}
        ownership[zone.name] = ZoneOwnership(zone.name, placements, set(zone.rrsets), annotations)
        zones[zone.name] = {instance: ZoneObserved(dict(zone.rrsets)) for instance in placements}
    return DnsObserved(ownership, zones, reachable)


def instances(*states: Desired) -> set[str]:
    """Every instance id the states place a zone on: offline, each of them is reachable."""
    return {servers.instance_id(k) for state in states for z in state.zones for k in z.instances}


def would_be(desired: Desired, *, agent: str = names.DEFAULT_AGENT_NAMESPACE,
             reachable: set[str] | None = None) -> Observed:
    """The world right after a sync of `desired`, as a run would observe it."""
    return Observed(_kube_world(desired, agent),
                    _dns_world(desired, instances(desired) | (reachable or set())))


def changed_fields(before: Any, after: Any, path: str = "") -> list[str]:
    """Field paths whose value differs, including fields only one side has (unlike kubediff, which
    may ignore what the server added: both sides here are the agent's own bodies)."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in sorted(set(before) | set(after), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in before or key not in after:
                out.append(sub)
            else:
                out += changed_fields(before[key], after[key], sub)
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [p for i, (b, a) in enumerate(zip(before, after, strict=True))
                for p in changed_fields(b, a, f"{path}[{i}]")]
    return [] if before == after else [path or "."]


def _exact_update(change: Change, base: dict[KubeTarget, KubeObject]) -> Change:
    old = base.get(change.target) if isinstance(change.target, KubeTarget) else None
    if change.action is not Action.UPDATE or old is None or change.after is None:
        return change
    before = mask_secrets(old.body)  # `after` is the head's body, masked the same way
    fields = tuple(changed_fields(before, change.after))
    return dataclasses.replace(change, old=before, fields=fields or change.fields)


def delta(base: Desired, head: Desired, *, base_revision: str | None = None,
          head_revision: str | None = None, agent: str = names.DEFAULT_AGENT_NAMESPACE) -> Plan:
    """What `head` changes relative to `base`, as a sync of head would plan it after a sync of
    base."""
    world = would_be(base, agent=agent, reachable=instances(head))
    plan = build.build(head, world, revision=head_revision, agent=agent)
    by_target = {KubeTarget(o.key.kind, o.key.namespace, o.key.name): o for o in base.objects}
    return dataclasses.replace(plan, base=base_revision,
                               changes=[_exact_update(c, by_target) for c in plan.changes])
