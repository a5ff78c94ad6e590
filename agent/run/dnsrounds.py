"""The DNS part of applying a plan, in at most two rounds. The first applies the plan; a zone whose
UPDATE found it changed since it was observed (a prerequisite failed) comes back `stale`, with its
intent left in the store. The second round takes just those zones through observe -> plan -> gate
-> apply once more: the plan is made from the zone as it is now (what the first round's earlier
batches wrote included, through the stored intent), a refusal is the gate's like any other, and a
zone still stale after it is reported (the next run tries again). What the first round's earlier
batches wrote stays on the zone's result (`written`, `changes`) and is named in the message of a
refusal or of a zone still stale: the zone serves it whatever the second round decides.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from agent.clients.deadline import Deadline
from agent.clients.endpoints import Endpoint
from agent.clients.statestore import Store
from agent.desired.hierarchy import Desired
from agent.errors import AgentError
from agent.gate import verdict
from agent.model.observed import Observed
from agent.model.scope import Scope
from agent.model.steps import Steps, timed
from agent.observe import dnsobserve
from agent.plan import build
from agent.plan.changes import Plan
from agent.plan.zoneplan import ZonePlan
from agent.reconcile import dnsapply, dnsresult, insync
from agent.run.planner import Options
from agent.run.validation import Progress

log = logging.getLogger(__name__)
AGAIN = "observed and planned again, it changed again; the next run tries again"


@dataclasses.dataclass
class Rounds:
    store: Store
    endpoints: Mapping[str, Endpoint]
    options: Options
    revision: str | None
    deadline: Deadline
    steps: Steps
    progress: Progress
    reported: insync.Reported | None = None  # a long-running agent's zones in sync (dnsapply.apply)

    def apply(self, zones: list[ZonePlan], *, focus: set[str] | None) -> dnsresult.DnsResult:
        options, endpoints = self.options, self.endpoints
        dns_options = dnsapply.DnsApplyOptions(options.batch, options.verify_wait, self.revision)
        with timed(self.steps, "apply_dns"):
            done = dnsapply.apply(zones, endpoints, self.store, options=dns_options, deadline=self.deadline,
                                  progress=lambda n, total: self.progress("applied", "zones", n, total), focus=focus,
                                  reported=self.reported)
        self.steps["apply_dns"] -= done.verify_seconds  # verification is a step of its own
        self.steps["verify"] = self.steps.get("verify", 0.0) + done.verify_seconds
        return done

    def again(self, desired: Desired, first: dnsresult.DnsResult) -> Plan | None:
        """The zones `first` found stale, once more: observed (their stored intent included), planned,
        gated, and applied where the gate passes; `first` is updated with the outcome. Returns the
        second round's plan (None: the zones could not be observed again)."""
        stale = set(first.stale)
        log.warning("observing, planning and gating again the zones that changed while being written: %s",
                    ", ".join(sorted(stale)))
        try:
            with timed(self.steps, "observe"):
                dns = dnsobserve.observe(desired, self.store, self.endpoints, deadline=self.deadline,
                                         limits=self.options.transfer, only=stale)
        except AgentError as exc:
            first.errors.append(f"zones that changed while being written could not be observed again: {exc}")
            for zone in (z for z in first.zones if z.stale):
                zone.stale += dnsresult.landed(zone.written)
            first.stale = {}
            return None
        scope = Scope.stale(frozenset(stale))
        with timed(self.steps, "plan"):
            again = build.build(desired, Observed(None, dns), revision=self.revision,
                                agent=self.options.agent_namespace, force=self.options.policy.force, scope=scope)
        with timed(self.steps, "gate"):
            again = verdict.approve(again, self.options.policy, scope)
            refused = {r.zone or "": r.text for r in again.refused}
        second = self.apply([zp for zp in again.zones or [] if zp.name not in refused], focus=None)
        _merge(first, second, refused)
        return again


def _merge(first: dnsresult.DnsResult, second: dnsresult.DnsResult, refused: dict[str, str]) -> None:
    """The second round's outcome in place of the first's, for the zones it took."""
    by_name = {z.name: z for z in second.zones}
    for i, zone in enumerate(first.zones):
        if zone.name in refused:  # what the first round wrote before it stopped stays written: say so
            zone.stale, zone.refused = "", refused[zone.name] + dnsresult.landed(zone.written)
        elif zone.name in by_name:
            earlier, zone = zone, by_name[zone.name]
            zone.written = dnsresult.union(earlier.written, zone.written)
            zone.changes = dnsresult.union(earlier.written, zone.changes)
            first.zones[i] = zone
        if zone.stale:  # changed again while written a second time
            zone.primary_error = f"records not applied: {zone.stale} ({AGAIN}){dnsresult.landed(zone.written)}"
            zone.stale = ""
    placed = {z.name for z in first.zones}
    first.deleted = sorted(set(first.deleted) | set(second.deleted))
    first.updates_sent += second.updates_sent
    first.errors += second.errors
    first.errors += [f"zone {name}: refused after it changed while being written: {why}"
                     for name, why in refused.items() if name not in placed]
    first.errors += [f"zone {name}: records not applied: {why} ({AGAIN})"
                     for name, why in second.stale.items() if name not in placed]
    first.stale = {}
