"""The one place a run is put together: its revisions, its targets and its options, for
`bindy-agent sync`, `plan DIR --kubeconfig` and `run` alike.

Each entry point only says what it was given, as a `Request` (sync's and plan's flags, run's
settings: `from_settings`); what follows from it is decided here, once:

    the cluster     asked for (a kubeconfig, a context, or the pod's ServiceAccount); its client
                    lists and writes only in the allowed namespaces
    the state       a directory the user names (--state, the setting `state`) wins; else, with a
                    cluster, the ConfigMaps in the agent's namespace (what every replica, `suspend`
                    and `sync --kubeconfig` share); else a local directory (`Request.local_state`)
    DNS             an endpoint map (--endpoints), or the instances' Services (--in-cluster-dns):
                    the zone-API token then goes only to instances in the allowed namespaces, the
                    others are reached without one
    announcements   commit statuses (a Git source only) and alerts
    options         from values named as run's settings are (agent/run/options.py `of`), so a flag
                    and a setting of the same name mean the same thing
"""

from __future__ import annotations

import dataclasses
import os
import pathlib

from agent.clients import endpoints as endpoint_map
from agent.clients import kubeapi, statestore
from agent.errors import ConfigError, KubeError
from agent.model import names
from agent.model.limits import Limits
from agent.outcome import forge, notesignature, notify
from agent.run import gitsource, revisions
from agent.run import options as run_options
from agent.run import settings as config
from agent.run.gitsource import Git as Git  # a Git source as every verb names it


@dataclasses.dataclass(frozen=True)
class Request:
    """What a run is built from, whichever verb asks. Exactly one of `git` and `directory`."""

    # its repo_policy also scopes the cluster client and the zone-API token
    options: run_options.Options
    git: Git | None = None
    directory: pathlib.Path | None = None
    limits: Limits = Limits()
    cluster: bool = False  # whether a cluster is a target
    kubeconfig: str | None = None  # None with a cluster: the pod's ServiceAccount
    context: str | None = None
    endpoints: pathlib.Path | None = None  # an endpoint map
    in_cluster_dns: bool = False  # the instances' Services and RNDC Secrets (needs the cluster)
    zone_api_token_file: pathlib.Path = endpoint_map.ZONE_API_TOKEN
    zone_api_audience: str = endpoint_map.ZONE_API_AUDIENCE
    state: pathlib.Path | None = None  # a state directory the user named: it wins over the cluster
    # the state without a cluster or a named directory
    local_state: pathlib.Path = names.CACHE_DIR / "state"
    forge: forge.ForgeSettings | None = None  # commit statuses
    alerts: notify.NotifySettings | None = None


@dataclasses.dataclass
class Built:
    """A run ready to go: `orchestrator.run(built.source, built.targets, built.options)`."""

    source: revisions.RevisionSource
    targets: run_options.Targets
    options: run_options.Options


def build(request: Request) -> Built:
    """Source, cluster client, state store, DNS endpoints and announcements; raises ConfigError or
    KubeError (nothing is contacted yet but the kubeconfig and key files read)."""
    if (request.git is None) == (request.directory is None):
        raise ConfigError("a run needs either a Git repository or a directory")
    if request.forge is not None and request.git is None:
        raise ConfigError("commit statuses go on commits: they need a Git repository (--repo), not "
                          "a directory")
    api = kube_api(request) if request.cluster else None
    try:
        targets = run_options.Targets(store(request, api), api, zone_endpoints(request, api),
                                      request.forge, request.alerts)
        return Built(source(request), targets, request.options)
    except BaseException:
        if api is not None:
            api.close()
        raise


def kube_api(request: Request) -> kubeapi.KubeApi:
    if request.kubeconfig is None and "KUBERNETES_SERVICE_HOST" not in os.environ:
        raise KubeError("no kubeconfig: give --kubeconfig FILE, set $KUBECONFIG, or create "
                        "~/.kube/config (inside a pod, its ServiceAccount is used)",
                        reason="config")
    return kubeapi.KubeApi.from_kubeconfig(request.kubeconfig, context=request.context,
                                           namespaces=request.options.repo_policy.kube_scope())


def store(request: Request, api: kubeapi.KubeApi | None) -> statestore.Store:
    """A named directory, else the cluster's ConfigMaps, else the local directory."""
    # a dry run (and a plan) leaves an unreadable record where it is
    moves = not request.options.dry_run
    if request.state is not None:
        return statestore.FileStore(request.state, moves=moves)
    if api is not None:
        return statestore.ConfigMapStore(api, request.options.agent_namespace, moves=moves)
    return statestore.FileStore(request.local_state, moves=moves)


def zone_endpoints(request: Request, api: kubeapi.KubeApi | None) -> run_options.Endpoints | None:
    """How a run reaches each instance: a map file, in-cluster Services, or None (no DNS step); each
    run's observe step reads it (agent/run/options.py)."""
    if request.endpoints is not None:
        if request.in_cluster_dns:
            raise ConfigError("--endpoints and --in-cluster-dns exclude each other")
        # a map that cannot be read stops the start, not every run
        endpoint_map.load_endpoints(request.endpoints)
        return run_options.EndpointMap(request.endpoints)
    if not request.in_cluster_dns:
        return None
    if api is None:
        raise ConfigError("--in-cluster-dns finds the DNS servers through the cluster: it needs "
                          "one (--kubeconfig, --context or --in-cluster)")
    return run_options.InCluster(request.zone_api_token_file, request.zone_api_audience)


def source(request: Request) -> revisions.RevisionSource:
    if request.git is None:
        assert request.directory is not None
        return revisions.DirectoryRevisions(request.directory, limits=request.limits)
    g = request.git
    key = notesignature.read_key(g.report_key_file) if g.report_key_file else None
    return revisions.GitRevisions(gitsource.source(g, request.limits), report_key=key)


def from_settings(settings: config.Settings) -> Request:
    """What `bindy-agent run` was given. Its cluster is --kubeconfig or --in-cluster (the pod's
    account)."""
    values = dict(settings)
    git = Git.of(values)
    return Request(run_options.of(values, settings.policy_settings()), git,
                   limits=settings.limits(),
                   cluster=settings.kubeconfig is not None or settings.in_cluster,
                   kubeconfig=str(settings.kubeconfig) if settings.kubeconfig else None,
                   endpoints=settings.endpoints, in_cluster_dns=settings.in_cluster_dns,
                   zone_api_token_file=settings.zone_api_token_file,
                   zone_api_audience=settings.zone_api_audience, state=settings.state,
                   local_state=settings.cache / "state", forge=settings.forge_settings(),
                   alerts=settings.notify_settings())
