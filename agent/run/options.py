"""What a run is given: where it reads and writes (`Targets`) and how it behaves (`Options`), and
the one builder of Options from values named as `run`'s settings are (`of`): `sync`'s flags, `plan
--kubeconfig`'s and `run`'s settings alike, so a flag and a setting of the same name mean the
same."""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Mapping
from typing import Any

from agent.clients import axfr, commitstatus
from agent.clients import endpoints as endpoint_map
from agent.clients.endpoints import Endpoint
from agent.clients.kubeapi import KubeApi
from agent.clients.statestore import Store
from agent.desired import policy as repo_rules
from agent.desired.hierarchy import Desired
from agent.gate import safety
from agent.model import names
from agent.observe import instancereach
from agent.outcome import forge, notify


@dataclasses.dataclass(frozen=True)
class EndpointMap:
    """The DNS servers of each instance from a map file (--endpoints), read again by each run's
    observe step: keys and tokens rotate."""

    path: pathlib.Path

    def read(self, desired: Desired, api: KubeApi | None,
             options: Options) -> Mapping[str, Endpoint]:
        return endpoint_map.load_endpoints(self.path)


@dataclasses.dataclass(frozen=True)
class InCluster:
    """The DNS servers of each instance found in the cluster (--in-cluster-dns): its Service's pods
    and RNDC Secret; the zone-API token (from `token_file`, for `audience`) goes only to instances
    in the namespaces the repository policy allows, the others are reached without one."""

    token_file: pathlib.Path = endpoint_map.ZONE_API_TOKEN
    audience: str = endpoint_map.ZONE_API_AUDIENCE

    def read(self, desired: Desired, api: KubeApi | None,
             options: Options) -> Mapping[str, Endpoint]:
        assert api is not None  # agent/run/compose.py: in-cluster DNS needs a cluster
        allowed = options.repo_policy.namespace_allowed
        return instancereach.from_cluster(
            api, desired, token_file=self.token_file, audience=self.audience,
            send_token_to=lambda key: allowed(key.namespace or ""),
            agent_addresses=instancereach.agent_addresses(api, options.agent_namespace))


# How a run reaches the DNS servers: a fixed map (tests, a caller that read it), or read by the
# run's observe step (agent/run/planner.py)
Endpoints = Mapping[str, Endpoint] | EndpointMap | InCluster


def endpoints(dns: Endpoints, desired: Desired, api: KubeApi | None,
              options: Options) -> Mapping[str, Endpoint]:
    """The DNS servers of each instance the revision places a zone on, as this run reaches them."""
    return dns if isinstance(dns, Mapping) else dns.read(desired, api, options)


@dataclasses.dataclass
class Targets:
    """Where a run reads and writes: the ownership store, and optionally a cluster and DNS
    servers."""

    store: Store
    kube_api: KubeApi | None = None
    endpoints: Endpoints | None = None
    forge: forge.ForgeSettings | None = None  # commit statuses
    alerts: notify.NotifySettings | None = None  # failure / refusal / recovery alerts
    # the status posted on a commit when a run's writes begin (agent/run/execute.py `_writes_begin`)
    pending: commitstatus.CommitStatus | None = dataclasses.field(init=False, default=None)

    def __post_init__(self) -> None:
        self.pending = forge.pending(self.forge)


@dataclasses.dataclass(frozen=True)
class Options:
    dry_run: bool = False
    policy: safety.Policy = safety.Policy()  # the safety gate's limits and overrides
    # what a repository may ask for
    repo_policy: repo_rules.PolicySettings = repo_rules.PolicySettings()
    agent_namespace: str = names.DEFAULT_AGENT_NAMESPACE
    default_namespace: str = names.DEFAULT_NAMESPACE
    # Bindy's CRDs are read (unless the cluster is remembered) and planned
    install_crds: bool = True
    create_namespaces: bool = False
    rotate_rndc_keys: bool = False
    batch: int = 1000
    verify_wait: float = 10
    deadline: float | None = names.DEFAULT_DEADLINE  # seconds a run may take; None: unbounded
    push_notes: bool = True
    mode: str = "apply"  # "detect": plan every run and report drift, write nothing to the world
    # runs read and write nothing (also: the suspend mark on the state record)
    suspend: bool = False
    # an unchanged head is re-reconciled, and the cluster read in full, after this long
    resync_after: float = names.DEFAULT_RESYNC_AFTER
    sweep_after: float = 3600  # every zone is transferred and compared in full after this long
    lock_wait: float = names.DEFAULT_LOCK_WAIT
    # octets and records one AXFR may bring in
    transfer: axfr.TransferLimits = axfr.TransferLimits()


def of(values: Mapping[str, Any], repo_policy: repo_rules.PolicySettings) -> Options:
    """The options of a run from values named as run's settings are (sync's flags have the same
    names); a name a verb does not have keeps the default."""
    default = Options()

    def given(name: str, fallback: Any) -> Any:
        value = values.get(name)
        return fallback if value is None else value

    limits = default.transfer
    transfer = axfr.TransferLimits(int(given("max_transfer_bytes", limits.max_bytes)),
                                   int(given("max_transfer_records", limits.max_records)))
    return Options(
        dry_run=bool(given("dry_run", default.dry_run)),
        policy=safety.Policy.of(values),
        repo_policy=repo_policy,
        agent_namespace=given("agent_namespace", default.agent_namespace),
        default_namespace=given("namespace", repo_policy.default_namespace),
        install_crds=bool(given("install_crds", default.install_crds)),
        create_namespaces=bool(given("create_namespaces", default.create_namespaces)),
        rotate_rndc_keys=bool(given("rotate_rndc_keys", default.rotate_rndc_keys)),
        batch=int(given("batch", default.batch)),
        deadline=given("deadline", default.deadline) or None,
        push_notes=bool(given("push_notes", default.push_notes)),
        mode=given("mode", default.mode), suspend=bool(given("suspend", default.suspend)),
        resync_after=float(given("resync_after", default.resync_after)),
        lock_wait=float(given("lock_wait", default.lock_wait)),
        transfer=transfer)
