"""The conditions of a DNSZone and of its records after a sync (pure): from the zone's result on its
servers (configured, failed, refused, not answering the new data), whether its servers serve the
same DNSSEC keys, whether every instance it is placed on has its pods ready, and whether every
server serves exactly the RRsets Git wants (`in_sync`, with the zone's hash)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent.desired.placement import Zone
from agent.model.key import ObjectKey
from agent.outcome import dnssecstatus
from agent.outcome.conditions import Outcome, condition, conditions, is_ready, readiness
from agent.plan.zoneplan import ZonePlan
from agent.reconcile.dnsresult import ZoneResult

IN_SYNC = "InSync"


def zone(zr: ZoneResult | None) -> list[dict[str, str]]:
    if zr is None:
        return conditions(Outcome(False, "the zone selects no Bind9Instance, so it is not served",
                                  "NoInstances"))
    if zr.primary_error:
        return conditions(Outcome(False, f"Failed to configure zone on primaries: "
                                         f"{zr.primary_error}", "PrimaryFailed"))
    if zr.refused:
        return conditions(Outcome(False, zr.refused, "PlanRefused"))
    configured = [i for i, (state, _) in zr.instances.items() if state == "Configured"]
    primaries = sum(1 for i in configured if i in zr.primaries)
    secondaries = len(configured) - primaries
    message = f"Configured on {primaries} primary server(s) and {secondaries} secondary server(s)"
    message += "".join(f"; {i} served by {ok}/{total} pods"
                       for i, (ok, total) in sorted(zr.served.items()))
    bad = sorted({f"{c.server} ({c.name} {c.rtype})" for c in zr.checks if not c.ok})
    if zr.secondary_error:
        degraded = condition("Degraded", "True", "SecondaryFailed",
                             f"{message}, but secondary configuration failed: {zr.secondary_error}")
    elif bad:
        degraded = condition("Degraded", "True", "NotServed",
                             "not answering the new data: " + ", ".join(bad[:10]))
    else:
        degraded = condition("Degraded", "False", "ReconcileSucceeded", "")
    waiting = "; ".join(sorted({m for state, m in zr.instances.values() if state == "Claimed"}))
    if waiting and not configured:  # no server has a pod yet: a start-up, not a failure
        return [condition("Ready", "False", "WaitingForServers", waiting),
                condition("Progressing", "True", "WaitingForServers", waiting), degraded]
    return [condition("Ready", "True", "ReconcileSucceeded", message), degraded,
            *([condition("Progressing", "True", "WaitingForServers", waiting)] if waiting else [])]


def signed_alike(zone: Zone | None, zr: ZoneResult | None,
                 conds: list[dict[str, str]]) -> list[dict[str, str]]:
    """A signed zone whose servers serve different keys is Degraded: no DS would validate on all of
    them."""
    if zone is None or zr is None or not zr.after or not zone.spec.dnssec_policy:
        return conds
    differs = dnssecstatus.differs(zone, ((server, seen.rrsets or {})
                                          for server, seen in zr.after.items()))
    if not differs:
        return conds
    return [c for c in conds
            if c["type"] != "Degraded"] + [condition("Degraded", "True", "KeysDiffer", differs)]


def served_now(zone: Zone | None, deployments: Mapping[ObjectKey, dict[str, Any]],
               conds: list[dict[str, str]], ) -> list[dict[str, str]]:
    """A zone is not Ready while none of its instances has a ready pod, and is Degraded while some
    have fewer ready pods than they want (scaled to 0, pods gone, crashing: the pod's reason is
    given); while such an instance's pods are still starting, it is Progressing, waiting for them. A
    zone that already failed (Ready False for another reason) is left as it is."""
    waiting = any(c["type"] == "Ready" and c["reason"] == "WaitingForServers" for c in conds)
    if zone is None or not (is_ready(conds) or waiting):
        return conds
    lacking, starting, serving = [], [], 0
    for inst in zone.instances:
        deployment = deployments.get(inst)
        if deployment is None:
            continue
        want = int((deployment.get("spec") or {}).get("replicas", 1))
        ready = int((deployment.get("status") or {}).get("readyReplicas") or 0)
        serving += ready > 0
        shown = {c["type"]: c for c in readiness(deployment)}
        if want == 0:
            lacking.append(f"{inst.name} is scaled to 0 pods")
        elif ready < want and shown.get("Degraded", {}).get("status") == "True":
            # why its pods do not start
            lacking.append(f"{inst.name}: {shown['Degraded']['message']}")
        elif ready < want:
            lacking.append(f"{inst.name} has {ready}/{want} pods ready")
            starting.append(inst.name)
    if not lacking:
        return conds
    message = "not served by every server: " + "; ".join(lacking)
    out = [c for c in conds if c["type"] not in ("Degraded", "Progressing")]
    if not serving:
        out = [condition("Ready", "False", "NotServed" if not waiting else "WaitingForServers",
                         message)]
    # a first start, nothing failing: not degraded (yet)
    first = waiting and len(starting) == len(lacking)
    out.append(condition("Degraded", "False", "WaitingForServers", "") if first else
               condition("Degraded", "True", "NotServed", message))
    if starting:
        out.append(condition("Progressing", "True", "WaitingForServers",
                             "waiting for " + ", ".join(starting) + " to start"))
    return out


def record(zr: ZoneResult | None, owner: str, rtype: str) -> list[dict[str, str]]:
    if zr is None or zr.primary_error or zr.refused:
        why = "its zone selects no instance" if zr is None else (zr.primary_error or zr.refused)
        return conditions(Outcome(False, f"Failed to configure record: {why}", "RecordFailed"))
    conflict = next((c for c in zr.conflicts if c.startswith(f"{owner} {rtype}:")), None)
    if conflict:
        return conditions(Outcome(False, f"Failed to configure record: conflict: {conflict}",
                                  "RecordFailed"))
    checks = [c for c in zr.checks if (c.name, c.rtype) == (owner, rtype)]
    configured = sum(1 for s, _ in zr.instances.values() if s == "Configured")
    if not configured and any(s == "Claimed" for s, _ in zr.instances.values()):
        why = "waiting for its zone's servers to start"
        return [condition("Ready", "False", "WaitingForServers", why),
                condition("Progressing", "True", "WaitingForServers", why)]
    served = sum(1 for c in checks if c.ok) if checks else configured
    if checks and served < len(checks):
        missing = ", ".join(c.server for c in checks if not c.ok)
        return conditions(Outcome(False, f"Record configured, but not served yet by: {missing}",
                                  "RecordFailed"))
    return conditions(Outcome(True, f"Record configured on {served} endpoint(s)"))


def _left(zp: ZonePlan | None, zr: ZoneResult) -> dict[str, set[tuple[str, str]]]:
    """Each server and the RRsets it serves otherwise than Git after the run: a primary's planned
    changes it did not take and the foreign RRsets in the way (conflicts, never overwritten), and
    what a server did not answer as written when verified (a secondary behind its primary: SOA)."""
    out: dict[str, set[tuple[str, str]]] = {}
    written = set(zr.written)
    records = zp.records if zp is not None else {s: None for s in zr.applied_on}
    for server, rp in records.items():
        conflicts = rp.conflicts if rp is not None else zr.conflicts
        left = {_conflict_key(c) for c in conflicts}
        if rp is not None and server not in zr.applied_on:
            left |= {c.key for c in rp.changes if c not in written}
        if left:
            out[server] = left
    for check in zr.checks:
        if not check.ok:
            out.setdefault(check.server, set()).add((check.name, check.rtype))
    return out


def _conflict_key(conflict: str) -> tuple[str, str]:
    owner, _, rtype = conflict.split(":", 1)[0].partition(" ")
    return owner, rtype


def _differ(keys: set[tuple[str, str]]) -> str:
    if all(rtype == "SOA" for _, rtype in keys):
        return "behind its primary's serial"
    return "1 RRset differs" if len(keys) == 1 else f"{len(keys)} RRsets differ"


def in_sync(digest: str, zp: ZonePlan | None, zr: ZoneResult | None) -> dict[str, str]:
    """Whether every server of the zone serves exactly the RRsets Git wants (`digest`: their hash),
    from what the run read and wrote: a primary does when the zone's plan left no RRset change
    there (each written, no foreign RRset in the way), a secondary when it is at its primary's
    serial (the verify step asks it: reconcile/dnsconfirm.py). Drifted names each server that does
    not and how many RRsets differ; a server that failed, or whose pods have not started, is not
    known."""
    if zr is None:
        return condition(IN_SYNC, "Unknown", "NotRead",
                         f"Git wants {digest}; the zone's servers were not read")
    servers = sorted(zr.servers)
    if not servers:
        return condition(IN_SYNC, "False", "NoInstances", f"Git wants {digest}; no server has it")
    drifted = _left(zp, zr)
    unknown = sorted(s for s, (state, _) in zr.servers.items()
                     if state != "Configured" and s not in drifted)
    serving = [s for s in servers if s not in drifted and s not in unknown]
    message = f"{len(serving)}/{len(servers)} servers serve {digest}"
    if drifted:
        shown = sorted(drifted.items())
        return condition(IN_SYNC, "False", "Drifted", message + "; drifted: " + ", ".join(
            f"{server} ({_differ(keys)})" for server, keys in shown[:10])
            + (f" and {len(shown) - 10} more" if len(shown) > 10 else "")
            + (f"; not known: {', '.join(unknown[:10])}" if unknown else ""))
    if unknown:
        return condition(IN_SYNC, "Unknown", "NotKnown",
                         f"{message}; not known: {', '.join(unknown[:10])}")
    return condition(IN_SYNC, "True", "Served", message)
