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
from agent.gate import safety
from agent.load.sourcefile import SourceFile
from agent.model import names
from agent.model.limits import Limits
from agent.observe import dnsobserve, kubeobserve
from agent.outcome import forge, notify
from agent.plan import build
from agent.plan.changes import Plan
from agent.plan.observed import Observed
from agent.run import collector, validation
from agent.run.memory import ONE_SHOT, Memory
from agent.run.revisions import Snapshot
from agent.run.steps import Steps, timed
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


def plan(snap: Snapshot, targets: Targets, options: Options, *, memory: Memory = ONE_SHOT,
         deadline: Deadline = UNBOUNDED, progress: Progress = quiet) -> Planned:
    """The one way a revision is planned, for `plan --kubeconfig`, `sync --dry-run` and a sync alike:
    validate, observe everything the revision touches, plan it whole, gate it. Writes nothing."""
    validated = validate(snap.files, options, limits=snap.limits, kube_api=targets.kube_api, memory=memory,
                         progress=progress)
    planned = Planned(validated, steps=dict(validated.steps))
    if not validated.ok:
        return planned
    desired = validated.desired
    assert desired is not None
    try:
        with timed(planned.steps, "observe"):
            _observe(planned, desired, targets, options, memory=memory, deadline=deadline, progress=progress)
    except AgentError as exc:
        planned.error = str(exc)
        return planned
    with collector.long_lived(), timed(planned.steps, "plan"):
        planned.plan = build.build(desired, planned.observed, revision=snap.revision,
                                   agent=options.agent_namespace, rotate_rndc_keys=options.rotate_rndc_keys,
                                   trust_hash=planned.kube_fast,
                                   memo=memory.plans if planned.dns_fast else NO_MEMO,
                                   force=options.policy.force, create_namespaces=options.create_namespaces)
    with timed(planned.steps, "gate"):
        planned.plan.refusals = safety.check(planned.plan, options.policy)
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


def _observe(planned: Planned, desired: Desired, targets: Targets, options: Options, *, memory: Memory,
             deadline: Deadline, progress: Progress) -> None:
    """What the revision touches in the cluster and on the DNS servers; from memory where it is fresh."""
    observed, api, namespace = planned.observed, targets.kube_api, options.agent_namespace
    planned.kube_fast = memory.kube_fresh(options.resync_after, namespace)
    planned.dns_fast = memory.dns_fresh(options.sweep_after)
    if api is not None:
        observed.kube = (kubeobserve.recall(api, desired, memory.kube, agent_namespace=namespace)
                         if memory.kube is not None and planned.kube_fast
                         else kubeobserve.observe(api, desired, agent_namespace=namespace,
                                                  with_crds=options.install_crds))
    endpoints = targets.endpoints
    planned.endpoints = endpoints(desired) if callable(endpoints) else endpoints
    if planned.endpoints is not None:
        focused = (planned.dns_fast and options.mode != "detect" and memory.serials_fresh(options.resync_after))
        observed.dns = dnsobserve.observe(
            desired, targets.store, planned.endpoints, deadline=deadline,
            memory=memory.dns if planned.dns_fast else dnsobserve.NOTHING_SEEN, refresh=not planned.dns_fast,
            focus=memory.dns.changed(desired) if focused else None,
            progress=lambda done, total: progress("observed", "zones", done, total), limits=options.transfer)
