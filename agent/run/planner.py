"""The planning half of a run, the one planner of a sync, `sync --dry-run`, a standby's follow, a
push's zones first, `plan --kubeconfig` and the second DNS round alike:

    plan(snapshot, scope, reading)   validate (load, desired, policy) -> plan_validated
    plan_validated(validated, ...)   observe (endpoints, Kubernetes, DNS; as `reading` says, what
                                     `scope` covers) -> build -> the gate (agent/gate/verdict.py)

`scope` says what is planned (every zone and Kubernetes; the zones a push changed; the zones found
stale while written), `reading` how the world is read (listed, recalled from memory, serials, zone
transfers). Writes nothing; agent/run/execute.py applies what it returns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from agent.clients.deadline import UNBOUNDED, Deadline
from agent.clients.endpoints import Endpoint
from agent.clients.kubeapi import KubeApi
from agent.desired.hierarchy import Desired
from agent.desired.memo import NO_MEMO
from agent.errors import AgentError
from agent.gate import verdict
from agent.load.sourcefile import SourceFile
from agent.model import reading as reading_in
from agent.model.limits import Limits
from agent.model.observed import DnsObserved, KubeObserved, Observed
from agent.model.reading import KubeRead, Reading
from agent.model.scope import ALL, Scope, ScopeRule
from agent.model.servers import instance_id
from agent.model.steps import Steps, timed
from agent.observe import dnsobserve, kubeobserve
from agent.plan import build
from agent.plan.changes import Plan
from agent.run import collector, validation
from agent.run import options as run_options
from agent.run.memory import ONE_SHOT, Memory
from agent.run.options import Endpoints as Endpoints
from agent.run.options import Options as Options
from agent.run.options import Targets as Targets
from agent.run.revisions import Snapshot
from agent.run.validation import Progress, Validated, quiet

# a one-shot run: the cluster listed, every zone transferred, nothing remembered
WHOLE = reading_in.IN_FULL
# How a push's zones are read once known (scope CHANGED_ZONES): agent/model/reading.py
PUSH_FIRST = reading_in.PUSHED_ZONES
# The second DNS round (scope STALE): the zones as they are now, in full, their ownership read back.
AGAIN = dataclasses.replace(reading_in.IN_FULL, kube=KubeRead.NONE)


def validate(files: Sequence[SourceFile], options: Options, *, limits: Limits,
             kube_api: KubeApi | None = None, memory: Memory = ONE_SHOT,
             progress: Progress = quiet) -> Validated:
    """load -> desired -> policy (agent/run/validation.py) with a run's options; with a cluster, the
    live labels of the Secrets the revision references are read between (metadata only): what the
    policy checks them against. Without one, such references are only warned about."""
    validated = validation.load(files, default_namespace=options.default_namespace, limits=limits,
                                files_cache=memory.files, memo=memory.desired, progress=progress)
    if validated.desired is None:
        return validated
    labels = None
    if kube_api is not None:
        with timed(validated.steps, "validate"):
            labels = kubeobserve.secret_labels(kube_api, validation.secrets_to_observe(validated))
    validation.check(validated, repo_policy=options.repo_policy,
                     delete_threshold=options.policy.delete_threshold, secret_labels=labels)
    return validated


@dataclasses.dataclass
class Planned:
    """What a sync of a revision would do, decided before any write: the gated plan of what `scope`
    covers, and what it was planned from (the apply step works on the same observations)."""

    validated: Validated
    plan: Plan | None = None  # None: the revision is invalid, or the world could not be observed
    error: str | None = None  # why the world could not be observed
    observed: Observed = dataclasses.field(default_factory=Observed)
    endpoints: Mapping[str, Endpoint] | None = None
    kube_fast: bool = False  # the cluster was remembered, not read in full (see Memory)
    dns_fast: bool = False  # the zones were checked by their SOA serials only
    steps: Steps = dataclasses.field(default_factory=dict)  # load .. gate: seconds each
    cut: bool = False  # the observe yielded to a push (`stop`): nothing was planned
    scope: Scope = ALL  # what was planned: a push's zones resolved, or ALL when they could not be
    reading: Reading = WHOLE  # how the world was read

    @property
    def first(self) -> bool:
        """The push's zones alone were planned: the whole reconcile still waits."""
        return self.scope.rule is ScopeRule.CHANGED_ZONES


@dataclasses.dataclass(frozen=True)
class Planning:
    """What a run plans with, whatever it plans: where it reads and writes (`targets`), its options,
    what a long-running agent remembers, the run's deadline and who hears its progress."""

    targets: Targets
    options: Options
    # the one-shot memory itself (it keeps nothing), not a copy
    memory: Memory = dataclasses.field(default_factory=lambda: ONE_SHOT)
    deadline: Deadline = UNBOUNDED
    progress: Progress = quiet


def plan(snapshot: Snapshot, scope: Scope, reading: Reading, planning: Planning, *,
         stop: Callable[[], bool] | None = None) -> Planned:
    """The one way a revision is planned: validate, then `plan_validated`. Writes nothing.

    `scope` ALL plans everything the revision touches; CHANGED_ZONES (a push while the reconcile it
    cut waits) the zones the push changed (`Memory.base_zones`, `Memory.dns.changed`), read as
    PUSH_FIRST, Kubernetes not at all - or, when they cannot be told apart (a zone or object
    removed, none changed, a changed zone on an instance without an endpoint yet), everything, read
    as `reading` says (`Planned.scope` is then ALL). `stop` is asked as each zone's transfers finish
    when `reading.zones_first`: when it says a push waits, the observe stops (`Planned.cut`, what
    was read in `observed.dns`)."""
    validated = validate(snapshot.files, planning.options, limits=snapshot.limits,
                         kube_api=planning.targets.kube_api, memory=planning.memory,
                         progress=planning.progress)
    planned = Planned(validated, steps=dict(validated.steps))
    if validated.ok:
        _plan(planned, scope, reading, planning, revision=snapshot.revision, stop=stop)
    return planned


def plan_validated(validated: Validated, scope: Scope, reading: Reading, planning: Planning, *,
                   revision: str | None,
                   endpoints: Mapping[str, Endpoint] | None = None) -> Planned:
    """A valid revision observed, planned and gated for `scope` (its steps are this call's alone).
    `endpoints`: as read earlier in the run (the second DNS round), else read now."""
    planned = Planned(validated, endpoints=endpoints)
    _plan(planned, scope, reading, planning, revision=revision, stop=None)
    return planned


def _plan(planned: Planned, scope: Scope, reading: Reading, planning: Planning, *,
          revision: str | None, stop: Callable[[], bool] | None) -> None:
    targets, options, memory = planning.targets, planning.options, planning.memory
    desired = planned.validated.desired
    assert desired is not None
    try:
        with timed(planned.steps, "observe"):
            # read once, however observed
            if planned.endpoints is None and targets.endpoints is not None:
                read = run_options.endpoints(targets.endpoints, desired, targets.kube_api, options)
                planned.endpoints = read
            scope, reading = _resolved(scope, reading, desired, planned.endpoints, memory)
            planned.scope, planned.reading = scope, reading
            planned.kube_fast, planned.dns_fast = reading.kube is KubeRead.RECALL, reading.plan_memo
            _observe(planned, desired, scope, reading, planning,
                     stop=stop if reading.zones_first else None)
    except dnsobserve.Cut as cut:
        planned.cut, planned.observed.dns = True, cut.observed
        return
    except AgentError as exc:
        planned.error = str(exc)
        return
    with collector.long_lived(), timed(planned.steps, "plan"):
        choices = build.KubeChoices(rotate_rndc_keys=options.rotate_rndc_keys,
                                    create_namespaces=options.create_namespaces)
        recalled = build.Recalled(memo=memory.plans if reading.plan_memo else NO_MEMO,
                                  kube_memo=memory.desired, trust_hash=planned.kube_fast)
        plan = build.build(desired, planned.observed, revision=revision,
                           agent=options.agent_namespace, force=options.policy.force, scope=scope,
                           choices=choices, recalled=recalled)
    with timed(planned.steps, "gate"):
        planned.plan = verdict.approve(plan, options.policy, scope)


def _resolved(scope: Scope, reading: Reading, desired: Desired,
              endpoints: Mapping[str, Endpoint] | None, memory: Memory) -> tuple[Scope, Reading]:
    """A push's zones, once the revision is known (`_first_zones`), read as PUSH_FIRST; the whole
    revision, read as `reading` says, when they cannot be told apart (or no DNS server is known)."""
    if scope.rule is not ScopeRule.CHANGED_ZONES or scope.zones is not None:
        return scope, reading
    zones = _first_zones(memory, desired, endpoints) if endpoints is not None else None
    if zones is None:
        return ALL, reading
    return Scope(frozenset(zones), False, ScopeRule.CHANGED_ZONES), PUSH_FIRST


def offline(validated: Validated) -> Planned:
    """`plan DIR` without a cluster: the revision planned against the empty world, where every
    object, zone and RRset is a create."""
    planned = Planned(validated)
    if validated.ok:
        assert validated.desired is not None
        with collector.long_lived():
            planned.plan = build.offline(validated.desired)
    return planned


def _first_zones(memory: Memory, desired: Desired,
                 endpoints: Mapping[str, Endpoint]) -> set[str] | None:
    """The zones a push's run plans while a cut reconcile waits: those that are not as taken as
    applied (their spec, placement or RRsets differ; or not confirmed since). None - plan the whole
    revision, gate it whole - when no zone changed; when the push removes a zone or a Kubernetes
    object (the gate's refusals of removals, a whole zone or a prune, are decided on the whole plan,
    which the push's zones alone would not show); or when a changed zone is on an instance with no
    endpoint yet (its Kubernetes objects come first)."""
    base = memory.base_zones
    if (set(base) - {z.name for z in desired.zones}
        or memory.base_objects - {o.key for o in desired.objects}):
        return None
    changed = [z for z in desired.zones if base.get(z.name) != z]
    names = {z.name for z in changed} | memory.dns.changed(desired)
    placed = (z for z in desired.zones if z.name in names)
    if not names or any(instance_id(k) not in endpoints for z in placed for k in z.instances):
        return None
    return names


def _observe(planned: Planned, desired: Desired, scope: Scope, reading: Reading,
             planning: Planning, *, stop: Callable[[], bool] | None = None) -> None:
    """What `scope` of the revision touches in the cluster and on the DNS servers, as `reading`
    says; a reconcile that may yield (`stop`) reads the zones first: they take long."""
    observed, api = planned.observed, planning.targets.kube_api
    options, memory = planning.options, planning.memory
    kube = api is not None and reading.kube is not KubeRead.NONE and scope.kubernetes
    if kube and stop is None:
        assert api is not None
        observed.kube = _kube(api, desired, options, memory, reading)
    if planned.endpoints is not None:
        observed.dns = _dns(desired, planned.endpoints, scope, reading, planning, stop=stop)
    if kube and stop is not None:
        assert api is not None
        if observed.dns is not None and stop():
            raise dnsobserve.Cut(observed.dns)
        observed.kube = _kube(api, desired, options, memory, reading)


def _dns(desired: Desired, endpoints: Mapping[str, Endpoint], scope: Scope, reading: Reading,
         planning: Planning, *, stop: Callable[[], bool] | None) -> DnsObserved:
    """The zones of `scope`, as `reading` says (agent/observe/dnsobserve.py)."""
    progress = planning.progress

    def observed(done: int, total: int) -> None:
        progress("observed", "zones", done, total)

    pace = dnsobserve.Pace(planning.deadline, progress=observed, stop=stop)
    return dnsobserve.observe(desired, planning.targets.store, endpoints, reading, pace=pace,
                              memory=planning.memory.dns, scope=scope,
                              limits=planning.options.transfer)


def _kube(api: KubeApi, desired: Desired, options: Options, memory: Memory,
          reading: Reading) -> KubeObserved:
    """The cluster as the revision needs it: listed in full, or what was left there recalled."""
    if memory.kube is not None and reading.kube is KubeRead.RECALL:
        return kubeobserve.recall(api, desired, memory.kube,
                                  agent_namespace=options.agent_namespace,
                                  recheck=memory.kube_recheck)
    return kubeobserve.observe(api, desired, agent_namespace=options.agent_namespace,
                               with_crds=options.install_crds)
