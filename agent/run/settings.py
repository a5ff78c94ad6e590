"""Settings of the long-running agent (`bindy-agent run`): flags > BINDY_AGENT_* > --config file."""

from __future__ import annotations

import os
import pathlib

import pydantic
import yaml

from agent.errors import ConfigError
from agent.model import names
from agent.outcome import delivery, forge, notify
from agent.reconcile import endpoints as zone_endpoints

ENV_PREFIX = "BINDY_AGENT_"


class Settings(pydantic.BaseModel):
    """Every setting of `bindy-agent run`. Precedence: flags, then BINDY_AGENT_* environment
    variables, then the YAML file given by --config, then these defaults. Secrets are never
    values here: only paths of files that hold them (mounted Secrets)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    repo: str = pydantic.Field(description="Git repository URL (or local path)")
    branch: str = "main"
    ref: str | None = None
    path: str = ""
    cache: pathlib.Path = names.CACHE_DIR / "git"
    ssh_key: pathlib.Path | None = None
    known_hosts: pathlib.Path | None = None
    insecure_ignore_host_key: bool = False
    token_file: pathlib.Path | None = None
    push_notes: bool = True
    kubeconfig: pathlib.Path | None = None
    in_cluster: bool = False
    agent_namespace: str = names.DEFAULT_AGENT_NAMESPACE
    kube_namespaces: list[str] = pydantic.Field(
        default_factory=list, description="comma-separated namespaces the agent's Roles cover: namespaced kinds "
        "are listed there instead of cluster-wide (empty: cluster-wide, needs a ClusterRole)")
    install_crds: bool = pydantic.Field(True, description="apply the 12 CRDs before each sync (off when an admin "
                                        "installs them and the agent may only read them)")
    endpoints: pathlib.Path | None = None
    in_cluster_dns: bool = False
    zone_api_token_file: pathlib.Path = pydantic.Field(
        zone_endpoints.ZONE_API_TOKEN, description="projected ServiceAccount token for the zone HTTP APIs "
        "(never the Kubernetes API token)")
    zone_api_audience: str = pydantic.Field(zone_endpoints.ZONE_API_AUDIENCE,
                                            description="the audience the zone API token must be bound to")
    state: pathlib.Path | None = None
    namespace: str = names.DEFAULT_NAMESPACE
    interval: float = pydantic.Field(60, gt=0, description="seconds between scheduled syncs")
    jitter: float = pydantic.Field(5, ge=0)
    resync_after: float = 600
    listen: str = "0.0.0.0:8080"
    webhook_secret_file: pathlib.Path | None = None
    force: bool = False
    allow_prune: bool = pydantic.Field(False, description="allow deleting more than 30% of the Kubernetes objects "
                                       "the agent manages")
    create_namespaces: bool = pydantic.Field(False, description="create missing namespaces (the agent's account "
                                             "then needs to write namespaces)")
    deadline: float = pydantic.Field(300, ge=0, description="the most one run may take in seconds; a stalled "
                                     "server ends it as partial (0: no limit)")
    log_format: str = pydantic.Field("json", pattern="^(json|text)$")
    leader_election: bool = pydantic.Field(True, description="with a cluster: only the Lease holder syncs")
    lease_name: str = "bindy-agent"
    lease_duration: int = pydantic.Field(15, ge=2, description="seconds before a silent leader is replaced")
    commit_status: str = pydantic.Field(
        "off", pattern="^(off|github|gitlab|gitea)$",
        description="post a commit status on each commit a run handles: off, github, gitlab or gitea")
    commit_status_token_file: pathlib.Path | None = pydantic.Field(
        None, description="file holding the forge API token (GitHub/Gitea: statuses write; GitLab: api scope)")
    commit_status_api_url: str | None = pydantic.Field(
        None, description="forge API base URL (default: derived from --repo, e.g. https://api.github.com, "
        "https://HOST/api/v3 for GitHub Enterprise, https://HOST/api/v4 for GitLab, https://HOST/api/v1 for Gitea)")
    commit_status_project: str | None = pydantic.Field(
        None, description="owner/repo (GitHub, Gitea) or GitLab project path or id (default: derived from --repo)")
    commit_status_context: str = pydantic.Field(
        forge.DEFAULT_CONTEXT, min_length=1, description="name of the status on the commit (context on "
        "GitHub and Gitea, name on GitLab)")
    report_url: str | None = pydantic.Field(
        None, pattern="^https?://", description="link to a commit's report in statuses and alerts; {revision} "
        "becomes the commit SHA (e.g. https://ops.example.com/dns/reports/{revision})")
    alert_webhook_url: str | None = pydantic.Field(
        None, pattern="^https?://", description="generic webhook that gets a JSON alert on failure, refusal "
        "and recovery")
    alert_webhook_secret_file: pathlib.Path | None = pydantic.Field(
        None, description="file holding the key that signs alert webhooks (X-Signature-256: sha256=<HMAC>)")
    alert_slack_url_file: pathlib.Path | None = pydantic.Field(
        None, description="file holding the Slack incoming-webhook URL (a secret) for alerts")
    notify_timeout: float = pydantic.Field(
        10, gt=0, le=120, description="seconds one commit status or alert may take in all, retries included")
    notify_retries: int = pydantic.Field(
        3, ge=0, le=10, description="retries of a commit status or alert after a connection error, 429 or 5xx")

    @pydantic.field_validator("kube_namespaces", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        return [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value

    def masked(self) -> dict[str, object]:
        """The effective settings for --print-config (file paths only; no secret values exist here)."""
        return {k: (str(v) if isinstance(v, pathlib.Path) else v) for k, v in self.model_dump().items()}

    def _budget(self) -> delivery.Budget:
        return delivery.Budget(timeout=self.notify_timeout, retries=self.notify_retries)

    def forge_settings(self) -> forge.ForgeSettings | None:
        """Where commit statuses go (None: off); ConfigError if the forge project cannot be told."""
        if self.commit_status == "off":
            return None
        return forge.configure(self.commit_status, repo=self.repo, token_file=self.commit_status_token_file,
                               api_url=self.commit_status_api_url, project=self.commit_status_project,
                               context=self.commit_status_context, report_url=self.report_url,
                               budget=self._budget())

    def notify_settings(self) -> notify.NotifySettings | None:
        """Where alerts go (None: nowhere)."""
        if not self.alert_webhook_url and self.alert_slack_url_file is None:
            return None
        return notify.NotifySettings(self.alert_webhook_url, self.alert_webhook_secret_file,
                                     self.alert_slack_url_file, self.report_url, self._budget())


def _coerce(name: str, value: str) -> object:
    field = Settings.model_fields[name]
    if field.annotation is bool:
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{ENV_PREFIX}{name.upper()}: expected true or false, got {value!r}")
    return value


def load_settings(flags: dict[str, object], *, config_file: pathlib.Path | None = None,
                  environ: dict[str, str] | None = None) -> Settings:
    environ = dict(os.environ) if environ is None else environ
    merged: dict[str, object] = {}
    if config_file is not None:
        try:
            doc = yaml.safe_load(config_file.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"{config_file}: cannot read the settings file: {exc}") from exc
        if not isinstance(doc, dict):
            raise ConfigError(f"{config_file}: expected a mapping of settings")
        merged.update({str(k).replace("-", "_"): v for k, v in doc.items()})
    for name in Settings.model_fields:
        if f"{ENV_PREFIX}{name.upper()}" in environ:
            merged[name] = _coerce(name, environ[f"{ENV_PREFIX}{name.upper()}"])
    merged.update({k: v for k, v in flags.items() if v is not None})
    try:
        settings = Settings.model_validate(merged)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ConfigError(f"setting {where}: {first['msg']} (flag --{where.replace('_', '-')}, "
                          f"environment {ENV_PREFIX}{where.upper()})") from exc
    settings.forge_settings()  # a forge project that cannot be told is a bad setting, not a failed run
    return settings
