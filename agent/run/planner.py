"""The planning half of a run, shared by a sync, `sync --dry-run` and `plan --kubeconfig`: what a
run is given (Targets, Options), then validate (load, desired, policy), observe, plan the whole
revision, gate it. Writes nothing; agent/run/orchestrator.py applies what it returns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from agent.clients import axfr
from agent.clients.deadline import UNBOUNDED, Deadline
from agent.clients.endpoints import Endpoint
from agent.clients.kubeapi import KubeApi
from agent.clients.statestore import Store
from agent.desired.hierarchy import Desired
from agent.desired.memo import NO_MEMO
from agent.errors import AgentError
from agent.gate import policy as repo_rules
from agent.gate import safety, verdict
from agent.load.sourcefile import SourceFile
from agent.model import names
from agent.model.limits import Limits
from agent.model.observed import KubeObserved, Observed
from agent.model.scope import ALL, Scope, ScopeRule
from agent.model.servers import instance_id
from agent.model.steps import Steps, timed
from agent.observe import dnsobserve, kubeobserve
from agent.outcome import forge, notify
from agent.plan import build
from agent.plan.changes import Plan
from agent.podready import gates as podgates
from agent.run import collector, validation
from agent.run.memory import ONE_SHOT, Memory
from agent.run.revisions import Snapshot
from agent.run.validation import Progress, Validated, quiet

Endpoints = Mapping[str, Endpoint] | Callable[[Desired], Mapping[str, Endpoint]]


@dataclasses.dataclass
class Targets:
    """Where a run reads and writes: the ownership store, and optionally a cluster and DNS servers."""

    store: Store
    kube_api: KubeApi | None = None
    endpoints: Endpoints | None = None
    forge: forge.ForgeSettings | None = None  # commit statuses
    alerts: notify.NotifySettings | None = None  # failure / refusal / recovery alerts


@dataclasses.dataclass(frozen=True)
class Options:
    dry_run: bool = False
    policy: safety.Policy = safety.Policy()  # the safety gate's limits and overrides
    repo_policy: repo_rules.PolicySettings = repo_rules.PolicySettings()  # what a repository may ask for
    agent_namespace: str = names.DEFAULT_AGENT_NAMESPACE
    default_namespace: str = names.DEFAULT_NAMESPACE
    install_crds: bool = True  # Bindy's CRDs are read (unless the cluster is remembered) and planned
    create_namespaces: bool = False
    rotate_rndc_keys: bool = False
    batch: int = 1000
    verify_wait: float = 10
    deadline: float | None = names.DEFAULT_DEADLINE  # seconds a run may take; None: unbounded
    push_notes: bool = True
    mode: str = "apply"  # "detect": plan every run and report drift, write nothing to the world
    suspend: bool = False  # runs read and write nothing (also: the suspend mark on the state record)
    # an unchanged head is re-reconciled, and the cluster read in full, after this long
    resync_after: float = names.DEFAULT_RESYNC_AFTER
    sweep_after: float = 3600  # every zone is transferred and compared in full after this long
    lock_wait: float = names.DEFAULT_LOCK_WAIT
    transfer: axfr.TransferLimits = axfr.TransferLimits()  # octets and records one AXFR may bring in


def validate(files: Sequence[SourceFile], options: Options, *, limits: Limits,
             kube_api: KubeApi | None = None, memory: Memory = ONE_SHOT,
             progress: Progress = quiet) -> Validated:
    """load -> desired -> policy (agent/run/validation.py) with a run's options."""
    return validation.validate(files, default_namespace=options.default_namespace, repo_policy=options.repo_policy,
                               delete_threshold=options.policy.delete_threshold, limits=limits, kube_api=kube_api,
                               files_cache=memory.files, memo=memory.desired, progress=progress)


@dataclasses.dataclass
class Planned:
    """What a sync of a revision would do, decided before any write: the gated plan of the whole
    revision, and what it was planned from (the apply step works on the same observations)."""

    validated: Validated
    plan: Plan | None = None  # None: the revision is invalid, or the world could not be observed
    error: str | None = None  # why the world could not be observed
    observed: Observed = dataclasses.field(default_factory=Observed)
    endpoints: Mapping[str, Endpoint] | None = None
    kube_fast: bool = False  # the cluster was remembered, not read in full (see Memory)
    dns_fast: bool = False  # the zones were checked by their SOA serials only
    steps: Steps = dataclasses.field(default_factory=dict)  # load .. gate: seconds each
    cut: bool = False  # the observe yielded to a push (`yield_to`): nothing was planned
    first: bool = False  # the push's zones alone were planned (`first`): the whole reconcile still waits


def plan(snap: Snapshot, targets: Targets, options: Options, *, memory: Memory = ONE_SHOT,
         deadline: Deadline = UNBOUNDED, progress: Progress = quiet, yield_to: Callable[[], bool] | None = None,
         first: bool = False) -> Planned:
    """The one way a revision is planned, for `plan --kubeconfig`, `sync --dry-run` and a sync alike:
    validate, observe everything the revision touches, plan it whole, gate it. Writes nothing.

    Pushes first (agent/run/orchestrator.py): `yield_to` is asked as each zone's transfers finish;
    when it says a push waits, the observe stops (`Planned.cut`, what was read in `observed.dns`).
    `first`: the run of that push, while the reconcile it cut waits: only the zones the push changed
    (`Memory.dns.changed`) are observed and planned, Kubernetes not at all (the reconcile that
    follows at once applies the rest)."""
    validated = validate(snap.files, options, limits=snap.limits, kube_api=targets.kube_api, memory=memory,
                         progress=progress)
    planned = Planned(validated, steps=dict(validated.steps))
    if not validated.ok:
        return planned
    desired = validated.desired
    assert desired is not None
    only = None
    try:
        with timed(planned.steps, "observe"):
            endpoints = targets.endpoints  # read once, whichever way the revision is observed
            planned.endpoints = endpoints(desired) if callable(endpoints) else endpoints
            if first:
                only = _observe_first(planned, desired, targets, options, memory=memory, deadline=deadline)
            planned.first = only is not None
            if only is None:
                _observe(planned, desired, targets, options, memory=memory, deadline=deadline, progress=progress,
                         stop=yield_to)
    except dnsobserve.Cut as cut:
        planned.cut, planned.observed.dns = True, cut.observed
        return planned
    except AgentError as exc:
        planned.error = str(exc)
        return planned
    scope = ALL if only is None else Scope(frozenset(only), False, ScopeRule.CHANGED_ZONES)
    with collector.long_lived(), timed(planned.steps, "plan"):
        plan = build.build(desired, planned.observed, revision=snap.revision, agent=options.agent_namespace,
                           rotate_rndc_keys=options.rotate_rndc_keys, trust_hash=planned.kube_fast,
                           memo=memory.plans if planned.dns_fast else NO_MEMO, force=options.policy.force,
                           create_namespaces=options.create_namespaces, scope=scope, kube_memo=memory.desired)
    with timed(planned.steps, "gate"):
        planned.plan = verdict.approve(plan, options.policy, scope)
    return planned


def offline(validated: Validated) -> Planned:
    """`plan DIR` without a cluster: the revision planned against the empty world, where every
    object, zone and RRset is a create."""
    planned = Planned(validated)
    if validated.ok:
        assert validated.desired is not None
        with collector.long_lived():
            planned.plan = build.offline(validated.desired)
    return planned


def _first_zones(memory: Memory, desired: Desired, endpoints: Mapping[str, Endpoint]) -> set[str] | None:
    """The zones a push's run plans while a cut reconcile waits: those that are not as taken as applied
    (their spec, placement or RRsets differ; or not confirmed since). None - plan the whole revision,
    gate it whole - when no zone changed; when the push removes a zone or a Kubernetes object (the
    gate's refusals of removals, a whole zone or a prune, are decided on the whole plan, which the
    push's zones alone would not show); or when a changed zone is on an instance with no endpoint yet
    (its Kubernetes objects come first)."""
    base = memory.base_zones
    if set(base) - {z.name for z in desired.zones} or memory.base_objects - {o.key for o in desired.objects}:
        return None
    changed = [z for z in desired.zones if base.get(z.name) != z]
    names = {z.name for z in changed} | memory.dns.changed(desired)
    placed = (z for z in desired.zones if z.name in names)
    if not names or any(instance_id(k) not in endpoints for z in placed for k in z.instances):
        return None
    return names


def _observe_first(planned: Planned, desired: Desired, targets: Targets, options: Options, *,
                   memory: Memory, deadline: Deadline) -> set[str] | None:
    """A push's zones while a cut reconcile waits (`_first_zones`): those zones alone, their serials
    against memory; None when the revision is to be observed whole."""
    found = planned.endpoints
    only = _first_zones(memory, desired, found) if found is not None else None
    if found is None or only is None:
        return None
    planned.dns_fast = True  # not a full comparison: the reconcile that follows is
    planned.observed.dns = dnsobserve.observe(desired, targets.store, found, deadline=deadline, memory=memory.dns,
                                              refresh=False, focus=only, only=only, limits=options.transfer)
    return only


def _observe(planned: Planned, desired: Desired, targets: Targets, options: Options, *, memory: Memory,
             deadline: Deadline, progress: Progress, stop: Callable[[], bool] | None = None) -> None:
    """What the revision touches in the cluster and on the DNS servers; from memory where it is fresh
    (and, after a reconcile cut for a push, what that reconcile read: asked by serial, not transferred)."""
    observed, api, namespace = planned.observed, targets.kube_api, options.agent_namespace
    planned.kube_fast = memory.kube_fresh(options.resync_after, namespace)
    planned.dns_fast = memory.dns_fresh(options.sweep_after)
    recalled = planned.dns_fast or memory.reconcile_pending
    if api is not None and stop is None:
        observed.kube = _kube(api, desired, options, memory, fast=planned.kube_fast)
    if planned.endpoints is not None:
        focused = (planned.dns_fast and options.mode != "detect" and memory.serials_fresh(options.resync_after))
        observed.dns = dnsobserve.observe(
            desired, targets.store, planned.endpoints, deadline=deadline,
            memory=memory.dns if recalled else dnsobserve.NOTHING_SEEN, refresh=not planned.dns_fast,
            # and a new pod's zones: it has none (agent/podready/gates.py)
            focus=memory.dns.changed(desired) | podgates.zones_of_waiting(desired, planned.endpoints)
            if focused else None,
            progress=lambda done, total: progress("observed", "zones", done, total), limits=options.transfer,
            stop=stop)
    if api is not None and stop is not None:  # a reconcile that may yield reads the zones first: they take long
        if observed.dns is not None and stop():
            raise dnsobserve.Cut(observed.dns)
        observed.kube = _kube(api, desired, options, memory, fast=planned.kube_fast)


def _kube(api: KubeApi, desired: Desired, options: Options, memory: Memory, *, fast: bool) -> KubeObserved:
    """The cluster as the revision needs it: listed in full, or what was left there recalled (`fast`)."""
    if memory.kube is not None and fast:
        return kubeobserve.recall(api, desired, memory.kube, agent_namespace=options.agent_namespace,
                                  recheck=memory.kube_recheck)
    return kubeobserve.observe(api, desired, agent_namespace=options.agent_namespace, with_crds=options.install_crds)
