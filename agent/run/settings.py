"""Settings of the long-running agent (`bindy-agent run`): flags > BINDY_AGENT_* > --config file."""

from __future__ import annotations

import dataclasses
import os
import pathlib
from typing import Annotated

import pydantic

from agent.clients import axfr
from agent.clients import endpoints as zone_endpoints
from agent.desired import policy
from agent.errors import ConfigError
from agent.gate import safety
from agent.model import limits as read_limits
from agent.model import names
from agent.outcome import delivery, forge, notify
from agent.run import settingchecks as checks
from agent.run import settingsources
from agent.sources import git as git_source
from agent.sources import operatorfile

ENV_PREFIX = "BINDY_AGENT_"
MIB = 1024 * 1024
OFF = "off"  # commit_status: no commit statuses
DAY, HOUR = 86400, 3600  # the longest a duration setting may be
_POLICY = policy.PolicySettings()  # the policy's defaults are the settings' defaults


class Settings(pydantic.BaseModel):
    """Every setting of `bindy-agent run`. Precedence: flags, then BINDY_AGENT_* environment
    variables, then the YAML file given by --config, then these defaults. Secrets are never
    values here: only paths of files that hold them (mounted Secrets). The docstring under each
    field is the help text of its flag."""

    model_config = pydantic.ConfigDict(extra="forbid", use_attribute_docstrings=True,
                                       allow_inf_nan=False)

    # The Git source.
    repo: str
    """Git repository URL (or local path) to follow"""
    branch: str = "main"
    """branch to follow"""
    ref: str | None = None
    """pin a tag or commit instead of following the branch"""
    path: str = ""
    """sub-directory of the repository holding the CRs"""
    cache: pathlib.Path = names.GIT_CACHE
    """directory where the clone is kept"""
    ssh_key: pathlib.Path | None = None
    """SSH deploy key file (needs --known-hosts)"""
    known_hosts: pathlib.Path | None = None
    """known_hosts file holding the Git server's SSH host key"""
    insecure_ignore_host_key: bool = False
    """do not check the Git server's SSH host key (not recommended)"""
    token_file: pathlib.Path | None = None
    """file holding an HTTPS token for the Git server"""
    push_notes: bool = True
    """push the commit reports (refs/notes/bindy-agent) to the remote"""
    report_key_file: pathlib.Path | None = None
    """file holding the key that signs each commit report (HMAC-SHA256), at least 32 characters;
    give the same file to `bindy-agent report --report-key-file` (without it reports are unsigned:
    unverified)"""
    resync_after: float = pydantic.Field(names.DEFAULT_RESYNC_AFTER, ge=0, le=30 * DAY)
    """seconds after which an unchanged revision is reconciled again (repairs drift)"""

    # Where it syncs to.
    kubeconfig: pathlib.Path | None = None
    """kubeconfig of the cluster that gets the CRs and the BIND9 workloads"""
    in_cluster: bool = False
    """reach the cluster with the pod's ServiceAccount (instead of --kubeconfig)"""
    agent_namespace: str = pydantic.Field(names.DEFAULT_AGENT_NAMESPACE, pattern=checks.LABEL,
                                          max_length=63)
    """namespace of the agent's state, inventory and Lease"""
    install_crds: bool = pydantic.Field(True, description="apply the 12 CRDs before each sync (off "
                                        "when an admin installs them and the agent may only read "
                                        "them)")
    endpoints: pathlib.Path | None = None
    """instance -> DNS/zone API/key map (see README); enables the DNS steps"""
    in_cluster_dns: bool = False
    """reach the instances through their Services and RNDC Secrets (needs a cluster); instead of
    --endpoints"""
    zone_api_token_file: pathlib.Path = pydantic.Field(
        zone_endpoints.ZONE_API_TOKEN,
        description="projected ServiceAccount token for the zone HTTP APIs "
        "(never the Kubernetes API token)")
    zone_api_audience: str = pydantic.Field(
        zone_endpoints.ZONE_API_AUDIENCE, min_length=1, max_length=253,
        description="the audience the zone API token must be bound to")
    state: pathlib.Path | None = None
    """directory of the agent's state; given, it is used even with a cluster (default: with a
    cluster, the ConfigMap bindy-agent-state in --agent-namespace, which replicas share; without
    one, state in --cache)"""
    namespace: Annotated[str, pydantic.Field(pattern=checks.LABEL, max_length=63)] | None = None
    """namespace for namespaced objects that name none (default: the first of allowed_namespaces)"""
    force: bool = False
    """apply plans the safety gate refuses (mass deletes, whole-zone deletes, apex NS changes, large
    prunes)"""
    allow_prune: bool = False
    """allow deleting more than 30% of the Kubernetes objects the agent manages"""
    delete_threshold_percent: int = pydantic.Field(round(safety.DELETE_THRESHOLD * 100), ge=0,
                                                   le=100)
    """the largest share (percent) of a zone's managed RRsets a plan may delete; 100 also allows
    deleting whole zones. The repository's DNSZone annotation may only lower it"""
    create_namespaces: bool = False
    """create missing namespaces (the agent's account then needs to write namespaces)"""
    mode: str = pydantic.Field("apply", pattern="^(apply|detect)$")
    """apply: make the world match Git; detect: plan every run and report drift (metric, status),
    write nothing"""
    suspend: bool = False
    """run nothing (as does the annotation bindy.firestoned.io/suspend: "true" on the state
    ConfigMap)"""
    deadline: float = pydantic.Field(names.DEFAULT_DEADLINE, ge=0, le=DAY)
    """the most one run may take in seconds; a stalled server ends it as partial (0: no limit)"""
    batch: int = pydantic.Field(1000, ge=1, le=100_000)
    """changes per DNS UPDATE message"""

    # When it syncs.
    interval: float = pydantic.Field(60, gt=0, le=DAY)
    """seconds between scheduled syncs"""
    jitter: float = pydantic.Field(5, ge=0, le=HOUR)
    """up to this many seconds added at random to each scheduled sync"""
    webhook_min_interval: float = pydantic.Field(10, ge=0, le=HOUR)
    """seconds between two runs started by webhooks: the first delivery starts a run at once, later
    ones collapse into one more run when this interval ends"""

    # HTTP: health, readiness, metrics and the webhook.
    listen: str = pydantic.Field("0.0.0.0:8080", pattern=r"^\S*:[0-9]{1,5}$", max_length=300)
    """HOST:PORT of /healthz, /readyz, /metrics and POST /hooks/git"""
    webhook_secret_file: pathlib.Path | None = None
    """file holding the webhook's shared secret, at least 32 characters (without it the webhook is
    off)"""
    webhook_max_body: int = pydantic.Field(MIB, ge=1024, le=256 * MIB)
    """largest request body in bytes; a larger one gets 413 before it is read"""
    http_header_timeout: float = pydantic.Field(10, gt=0, le=HOUR)
    """seconds a client has to send a request's headers; idle connections are closed after as
    long"""
    http_body_timeout: float = pydantic.Field(30, gt=0, le=HOUR)
    """seconds a client has to send a request's body once its headers are in"""
    http_connection_limit: int = pydantic.Field(500, ge=16, le=10_000)
    """open HTTP connections at most; further ones wait until one closes"""

    # The process.
    log_format: str = pydantic.Field("json", pattern="^(json|text)$")
    """log lines as json or text"""
    log_level: str = pydantic.Field("info", pattern="^(debug|info|warning|error)$")
    """the least important log lines written: debug, info, warning or error"""
    leader_election: bool = True
    """with a cluster: only the holder of the Lease syncs"""
    lease_name: str = pydantic.Field(names.LEASE_NAME, pattern=checks.SUBDOMAIN, max_length=253)
    """name of the Lease used for leader election"""
    lease_duration: int = pydantic.Field(names.DEFAULT_LEASE_DURATION, ge=2, le=HOUR)
    """seconds before a silent leader is replaced"""

    # Where results are announced: commit statuses and alerts.
    commit_status: str = pydantic.Field(
        OFF, pattern=f"^({'|'.join((OFF, *forge.FORGES))})$",
        description=f"post a commit status on each commit a run handles: {OFF}, "
                    f"{', '.join(forge.FORGES[:-1])} or {forge.FORGES[-1]}")
    commit_status_token_file: pathlib.Path | None = None
    """file holding the forge API token (GitHub/Gitea: statuses write; GitLab: api scope)"""
    commit_status_api_url: str | None = pydantic.Field(None, pattern=checks.URL)
    """forge API base URL (default: derived from --repo, e.g. https://api.github.com,
    https://HOST/api/v3 for GitHub Enterprise, https://HOST/api/v4 for GitLab, https://HOST/api/v1
    for Gitea)"""
    commit_status_project: str | None = None
    """owner/repo (GitHub, Gitea) or GitLab project path or id (default: derived from --repo)"""
    commit_status_context: str = pydantic.Field(forge.DEFAULT_CONTEXT, min_length=1, max_length=255)
    """name of the status on the commit (context on GitHub and Gitea, name on GitLab)"""
    report_url: str | None = pydantic.Field(None, pattern=checks.URL)
    """link to a commit's report in statuses and alerts; {revision} becomes the commit SHA"""
    alert_webhook_url: str | None = pydantic.Field(None, pattern=checks.URL)
    """generic webhook that gets a JSON alert on failure, refusal and recovery"""
    alert_webhook_secret_file: pathlib.Path | None = None
    """file holding the key that signs alert webhooks (X-Signature-256: sha256=<HMAC>)"""
    alert_slack_url_file: pathlib.Path | None = None
    """file holding the Slack incoming-webhook URL (a secret) for alerts"""
    notify_timeout: float = pydantic.Field(10, gt=0, le=120)
    """seconds one commit status or alert may take in all, retries included"""
    notify_retries: int = pydantic.Field(3, ge=0, le=10)
    """retries of a commit status or alert after a connection error, 429 or 5xx"""

    # The policy a repository is held to (agent/desired/policy.py); lists also take "a,b" in flags
    # and env.
    pod_security: str = pydantic.Field(
        _POLICY.pod_security, pattern="^(restricted|baseline)$",
        description="Pod Security level the generated pods must meet with what the repository "
        "adds: restricted or baseline")
    allowed_registries: list[str] = pydantic.Field(
        list(_POLICY.allowed_registries),
        description="image prefixes the repository may use for bind9 and bindcar: a registry "
        "(quay.io) or a registry and path (ghcr.io/org); * for any")
    allowed_service_types: list[str] = pydantic.Field(
        list(_POLICY.allowed_service_types),
        description="Service types the repository may ask for (ClusterIP, "
        "NodePort, LoadBalancer)")
    allowed_external_ips: list[str] = pydantic.Field(
        list(_POLICY.allowed_external_ips),
        description="CIDRs a Service's externalIPs may come from")
    allowed_namespaces: list[str] = pydantic.Field(
        list(_POLICY.allowed_namespaces),
        description="namespaces the repository's CRs and generated objects may "
        "be in; * for any")
    allow_cross_namespace_refs: bool = pydantic.Field(
        _POLICY.allow_cross_namespace_refs,
        description="let records join a DNSZone of another namespace and "
        "references name a Secret of another namespace")

    @pydantic.field_validator("repo", "branch", "ref")
    @classmethod
    def _not_an_option(cls, value: str | None, info: pydantic.ValidationInfo) -> str | None:
        """A value git would read as one of its options (`--upload-pack=CMD`) is refused."""
        field = str(info.field_name)
        what = "the repository" if field == "repo" else f"the {info.field_name}"
        problem = git_source.option_like(value, what)
        if problem is not None:
            raise ValueError(problem)
        return value

    @pydantic.field_validator("*")
    @classmethod
    def _printable(cls, value: object) -> object:
        """No control character (NUL, ESC, CR, newline, C1, bidi overrides) in any text, path or
        list item."""
        checks.printable(value)
        return value

    @pydantic.field_validator("path")
    @classmethod
    def _inside(cls, value: str) -> str:
        return checks.repository_path(value)

    @pydantic.field_validator("listen")
    @classmethod
    def _port(cls, value: str) -> str:
        checks.port(value.rpartition(":")[2])
        return value

    @pydantic.field_validator("allowed_namespaces")
    @classmethod
    def _namespaces(cls, value: list[str]) -> list[str]:
        checks.namespaces(value)
        return value

    @pydantic.field_validator("allowed_registries", "allowed_service_types", "allowed_external_ips",
                              "allowed_namespaces", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        return [v.strip() for v in value.split(",")
                if v.strip()] if isinstance(value, str) else value

    @pydantic.field_validator("allowed_service_types", "allowed_external_ips")
    @classmethod
    def _valid_for_the_policy(cls, value: list[str], info: pydantic.ValidationInfo) -> list[str]:
        try:
            policy.PolicySettings.of(**{str(info.field_name): value})
        except ValueError as exc:
            raise ValueError(str(exc).split(": ", 1)[-1]) from exc
        return value

    def policy_settings(self) -> policy.PolicySettings:
        """The policy settings the gate checks every revision with."""
        fields = dataclasses.fields(policy.PolicySettings)
        return policy.PolicySettings.of(**{f.name: getattr(self, f.name) for f in fields})

    # What a revision may make the agent read (agent/model/limits.py).
    max_file_bytes: int = pydantic.Field(read_limits.Limits.max_file_bytes, ge=1,
                                         le=checks.MAX_BYTES,
                                         description=read_limits.help_of("max_file_bytes"))
    max_revision_bytes: int = pydantic.Field(read_limits.Limits.max_revision_bytes, ge=1,
                                             le=checks.MAX_BYTES,
                                             description=read_limits.help_of("max_revision_bytes"))
    max_documents: int = pydantic.Field(read_limits.Limits.max_documents, ge=1, le=checks.MAX_COUNT,
                                        description=read_limits.help_of("max_documents"))
    max_nodes: int = pydantic.Field(read_limits.Limits.max_nodes, ge=1, le=checks.MAX_COUNT,
                                    description=read_limits.help_of("max_nodes"))
    max_alias_nodes: int = pydantic.Field(read_limits.Limits.max_alias_nodes, ge=1,
                                          le=checks.MAX_COUNT,
                                          description=read_limits.help_of("max_alias_nodes"))

    # What a DNS server's zone transfer may bring in (agent/clients/axfr.py).
    max_transfer_bytes: int = pydantic.Field(axfr.TransferLimits.max_bytes, ge=1,
                                             le=checks.MAX_BYTES, description=axfr.BYTES_HELP)
    max_transfer_records: int = pydantic.Field(axfr.TransferLimits.max_records, ge=1,
                                               le=checks.MAX_COUNT, description=axfr.RECORDS_HELP)

    def transfer_limits(self) -> axfr.TransferLimits:
        return axfr.TransferLimits(self.max_transfer_bytes, self.max_transfer_records)

    def limits(self) -> read_limits.Limits:
        """What a revision may make the agent read (agent/model/limits.py)."""
        fields = dataclasses.fields(read_limits.Limits)
        return read_limits.Limits(**{f.name: getattr(self, f.name) for f in fields})

    def masked(self) -> dict[str, object]:
        """The effective settings for --print-config (file paths only; no secret values exist
        here)."""
        return {k: (str(v) if isinstance(v, pathlib.Path) else v)
                for k, v in self.model_dump().items()}

    def _budget(self) -> delivery.Budget:
        return delivery.Budget(timeout=self.notify_timeout, retries=self.notify_retries)

    def forge_settings(self) -> forge.ForgeSettings | None:
        """Where commit statuses go (None: off); ConfigError if the forge project cannot be told."""
        if self.commit_status == OFF:
            return None
        return forge.configure(self.commit_status, repo=self.repo,
                               token_file=self.commit_status_token_file,
                               api_url=self.commit_status_api_url,
                               project=self.commit_status_project,
                               context=self.commit_status_context, report_url=self.report_url,
                               budget=self._budget())

    def notify_settings(self) -> notify.NotifySettings | None:
        """Where alerts go (None: nowhere)."""
        if not self.alert_webhook_url and self.alert_slack_url_file is None:
            return None
        return notify.NotifySettings(self.alert_webhook_url, self.alert_webhook_secret_file,
                                     self.alert_slack_url_file, self.report_url, self._budget())


# the files a run reads (or hands to ssh): each must be a regular file when it starts
FILES = ("endpoints", "ssh_key", "known_hosts", "token_file", "webhook_secret_file",
         "report_key_file", "commit_status_token_file", "alert_webhook_secret_file",
         "alert_slack_url_file")


def check_runnable(settings: Settings) -> None:
    """Refuses settings under which `run` would sync nothing while looking healthy, or a file
    setting that is not a regular file (a FIFO would hang the first read, a directory fail every
    run)."""
    for name in FILES:
        path = getattr(settings, name)
        if path is not None:
            operatorfile.check(path, setting="--" + name.replace("_", "-"))
    for problem in (checks.directory(settings.cache, "--cache"),
                    checks.directory(settings.state, "--state")):
        if problem is not None:
            raise ConfigError(problem)
    cluster = settings.kubeconfig is not None or settings.in_cluster
    if settings.in_cluster_dns and not cluster:
        raise ConfigError("--in-cluster-dns finds the DNS servers through the cluster: it needs "
                          "--kubeconfig or --in-cluster")
    if not (cluster or settings.endpoints):
        raise ConfigError("nothing to sync to: give a cluster (--kubeconfig or --in-cluster) "
                          "and/or DNS servers (--endpoints, or --in-cluster-dns with a cluster); "
                          "to only check commits, use `bindy-agent validate` or `bindy-agent plan`")


def _merged(flags: dict[str, object], config_file: pathlib.Path | None,
            environ: dict[str, str] | None) -> tuple[dict[str, object], dict[str, str]]:
    """The settings given, by precedence, and where each came from (agent/run/settingsources.py)."""
    return settingsources.merged(Settings.model_fields, ENV_PREFIX, flags, config_file,
                                 dict(os.environ) if environ is None else environ)


def _validate(merged: dict[str, object], sources: dict[str, str]) -> Settings:
    try:
        return Settings.model_validate(merged)
    except pydantic.ValidationError as exc:
        raise ConfigError(checks.described(exc, sources, ENV_PREFIX)) from exc


def load_settings(flags: dict[str, object], *, config_file: pathlib.Path | None = None,
                  environ: dict[str, str] | None = None) -> Settings:
    settings = _validate(*_merged(flags, config_file, environ))
    # a forge project that cannot be told is a bad setting, not a failed run
    settings.forge_settings()
    return settings


def effective(flags: dict[str, object], *, config_file: pathlib.Path | None = None,
              environ: dict[str, str] | None = None) -> tuple[dict[str, object], list[str]]:
    """What --print-config shows: the merged, validated settings (a missing repo shows as null), and
    why `run` would refuse them."""
    merged, sources = _merged(flags, config_file, environ)
    has_repo = "repo" in merged
    settings = _validate(merged if has_repo else {**merged, "repo": ""}, sources)
    shown = settings.masked()
    refusals = [] if has_repo else [checks.required(ENV_PREFIX, "repo")]
    if not has_repo:
        shown["repo"] = None
    try:
        check_runnable(settings)
    except ConfigError as exc:
        refusals.append(str(exc))
    return shown, refusals
