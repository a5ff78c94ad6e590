"""Settings precedence, webhook signatures, and JSON log lines of the long-running agent."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import pathlib

import pytest

from agent import cli
from agent.clients import forges
from agent.desired import policy
from agent.errors import ConfigError
from agent.run import agent as run_agent
from agent.run import logs, throttle, webhook
from agent.run import settings as config


def test_flags_beat_environment_beat_file(tmp_path: pathlib.Path) -> None:
    file = tmp_path / "agent.yaml"
    file.write_text("repo: https://git.example/dns.git\ninterval: 30\nbranch: from-file\npush-notes: false\n")
    env = {"BINDY_AGENT_INTERVAL": "45", "BINDY_AGENT_BRANCH": "from-env", "BINDY_AGENT_FORCE": "yes"}
    settings = config.load_settings({"branch": "from-flag", "interval": None}, config_file=file, environ=env)
    assert (settings.repo, settings.interval, settings.branch) == ("https://git.example/dns.git", 45, "from-flag")
    assert (settings.push_notes, settings.force) == (False, True)


def test_bad_settings_name_the_flag_and_the_variable() -> None:
    with pytest.raises(ConfigError, match=r"setting interval: .* \(given by the flag --interval\)"):
        config.load_settings({"repo": "x", "interval": "-1"}, environ={})
    with pytest.raises(ConfigError, match="setting repo: required: give the flag --repo, the environment variable "
                       "BINDY_AGENT_REPO, or `repo:` in the --config file"):
        config.load_settings({}, environ={})
    with pytest.raises(ConfigError, match="BINDY_AGENT_FORCE: expected true or false"):
        config.load_settings({"repo": "x"}, environ={"BINDY_AGENT_FORCE": "maybe"})


@pytest.mark.parametrize("headers, ok", [
    ({"X-Hub-Signature-256": "sha256=" + hmac.new(b"k", b"body", hashlib.sha256).hexdigest()}, True),
    ({"X-Signature-256": "sha256=" + hmac.new(b"k", b"body", hashlib.sha256).hexdigest()}, True),
    ({"X-Gitlab-Token": "k"}, True),
    ({"X-Gitea-Signature": hmac.new(b"k", b"body", hashlib.sha256).hexdigest()}, True),
    ({"X-Gitea-Signature": hmac.new(b"other", b"body", hashlib.sha256).hexdigest()}, False),
    ({"X-Hub-Signature-256": "sha256=" + hmac.new(b"other", b"body", hashlib.sha256).hexdigest()}, False),
    ({"X-Gitlab-Token": "wrong"}, False),
    ({"X-Hub-Signature-256": "sha256=\u00e9"}, False),  # not ASCII: refused, not an error
    ({"X-Gitlab-Token": "k\u00e9"}, False),
    ({}, False),
])
def test_webhook_signatures(headers: dict[str, str], ok: bool) -> None:
    assert webhook.verify_webhook(b"k", b"body", headers) is ok


@pytest.mark.parametrize("branch, pinned, ref, started", [
    ("main", None, "refs/heads/main", True),
    ("main", None, "refs/heads/mainline", False),
    ("main", None, "refs/notes/bindy-agent", False),
    ("main", None, "refs/tags/main", False),
    ("main", "v1.2", "refs/tags/v1.2", True),
    ("main", "v1.2", "refs/heads/main", False),
    ("main", "refs/heads/release", "refs/heads/release", True),
    ("main", "0123abcd" * 5, "refs/heads/main", False),  # a pinned commit: no push moves it
])
def test_the_refs_whose_pushes_start_a_run(branch: str, pinned: str | None, ref: str, started: bool) -> None:
    assert (ref in webhook.followed(branch, pinned)) is started


@pytest.mark.parametrize("body, ref", [
    (b'{"ref": "refs/heads/main"}', "refs/heads/main"),
    (b'{"ref": "main"}', "refs/heads/main"),
    (b'{"ref": ""}', None), (b'{"ref": 3}', None), (b'["refs/heads/main"]', None), (b"not json", None),
    (b"", None), (b"[" * 100000, None),
    (b"payload=%7B%22ref%22%3A+%22refs%2Ftags%2Fv1%22%7D", "refs/tags/v1"),  # GitHub's form content type
])
def test_the_ref_a_delivery_names(body: bytes, ref: str | None) -> None:
    assert forges.ref_of(body) == ref


def test_json_log_lines_carry_run_id_and_revision() -> None:
    record = logging.LogRecord("agent.runner", logging.INFO, __file__, 1, "sync %s", ("applied",), None)
    token_run, token_rev = logs.run_id.set("abc123"), logs.revision.set("f" * 40)
    try:
        line = json.loads(logs.JsonFormatter().format(record))
    finally:
        logs.run_id.reset(token_run)
        logs.revision.reset(token_rev)
    assert (line["msg"], line["runId"], line["revision"], line["level"]) == ("sync applied", "abc123", "f" * 40, "info")


def test_a_burst_of_triggers_during_a_run_collapses_into_one_more_run(tmp_path: pathlib.Path) -> None:
    import threading
    import time

    from tests.support.procs import free_port, wait_for

    settings = config.load_settings({"repo": str(tmp_path / "none"), "cache": str(tmp_path / "cache"),
                                     "listen": f"127.0.0.1:{free_port()}", "interval": 3600}, environ={})
    agent = run_agent.Agent(settings)
    started, release, runs = threading.Event(), threading.Event(), []

    def slow_run(why: str = "schedule") -> None:
        runs.append(time.monotonic())
        started.set()
        release.wait(5)

    agent.run_once = slow_run  # type: ignore[assignment,method-assign]
    agent.start()  # the start trigger begins run 1
    try:
        assert started.wait(5)
        for _ in range(20):  # a burst of webhooks while run 1 is busy
            agent.trigger("webhook")
        release.set()
        wait_for(lambda: len(runs) == 2, 5)
        time.sleep(0.5)
        assert len(runs) == 2
    finally:
        release.set()
        agent.stop()


def test_commit_status_and_alert_settings_from_flags_environment_and_file(tmp_path: pathlib.Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from agent.cli import main
    from agent.outcome import delivery, forge, notify

    token = tmp_path / "forge-token"
    token.write_text("ghp_not_printed\n")
    file = tmp_path / "agent.yaml"
    file.write_text("report-url: https://github.com/acme/dns/commit/{revision}\nalert-webhook-url: https://hooks.example/dns\n")
    settings = config.load_settings({"repo": "git@github.com:acme/dns.git", "commit_status": "github",
                                     "commit_status_token_file": str(token)}, config_file=file,
                                    environ={"BINDY_AGENT_NOTIFY_TIMEOUT": "3", "BINDY_AGENT_NOTIFY_RETRIES": "1",
                                             "BINDY_AGENT_ALERT_SLACK_URL_FILE": "/var/run/secrets/slack"})
    report_url = "https://github.com/acme/dns/commit/{revision}"
    assert settings.forge_settings() == forge.ForgeSettings("github", "https://api.github.com", "acme/dns", token,
                                                            "bindy-agent", report_url, delivery.Budget(3, 1))
    assert settings.notify_settings() == notify.NotifySettings("https://hooks.example/dns", None,
                                                               pathlib.Path("/var/run/secrets/slack"), report_url,
                                                               delivery.Budget(3, 1))
    bare = config.load_settings({"repo": "/srv/git/dns"}, environ={})
    assert (bare.forge_settings(), bare.notify_settings()) == (None, None)

    assert main(["run", "--print-config", "--repo", "https://gitlab.example.com/platform/dns.git",
                 "--commit-status", "gitlab", "--commit-status-token-file", str(token)]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed)["commit_status_token_file"] == str(token) and "ghp_not_printed" not in printed


def test_a_commit_status_target_that_cannot_be_told_is_a_bad_setting(tmp_path: pathlib.Path) -> None:
    token = tmp_path / "token"
    with pytest.raises(ConfigError, match="commit status on gitlab: the repository is not a URL; set "
                       "commit_status_api_url and commit_status_project"):
        config.load_settings({"repo": "/srv/git/dns", "commit_status": "gitlab", "commit_status_token_file": str(token)},
                             environ={})
    with pytest.raises(ConfigError, match="commit status on github: a token file is needed"):
        config.load_settings({"repo": "https://github.com/acme/dns", "commit_status": "github"}, environ={})
    with pytest.raises(ConfigError, match=r"setting commit_status: .* \(given by the flag --commit-status\)"):
        config.load_settings({"repo": "x", "commit_status": "bitbucket"}, environ={})
    with pytest.raises(ConfigError, match="setting alert_webhook_url: String should match pattern"):
        config.load_settings({"repo": "x", "alert_webhook_url": "hooks.example/dns"}, environ={})


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_webhooks_start_one_run_at_once_then_at_most_one_per_min_interval() -> None:
    clock = FakeClock()
    triggers = throttle.Triggers(10, clock=clock)
    triggers.request("webhook")
    assert triggers.take(0) == "webhook"  # the leading edge: at once
    for _ in range(1000):  # a burst during that run
        triggers.request("webhook")
    clock.now += 4
    assert triggers.take(0) is None  # within the minimum interval
    clock.now += 6
    assert triggers.take(0) == "webhook"  # one trailing run for the whole burst
    clock.now += 60
    assert triggers.take(0) is None


def test_scheduled_runs_keep_their_rhythm_and_serve_waiting_deliveries() -> None:
    clock = FakeClock()
    triggers = throttle.Triggers(10, clock=clock)
    triggers.request("webhook")
    assert triggers.take(0) == "webhook"
    triggers.request("webhook")
    triggers.request("schedule")
    assert triggers.take(0) == "schedule"  # not held back by the webhook throttle
    clock.now += 20
    assert triggers.take(0) is None  # the scheduled run synced the head the delivery announced


@pytest.fixture
def no_agent_env(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    for name in config.Settings.model_fields:
        monkeypatch.delenv(f"BINDY_AGENT_{name.upper()}", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)  # and no kubeconfig kubectl would find
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.mark.usefixtures("no_agent_env")
def test_print_config_shows_incomplete_settings_and_why_run_would_refuse_them(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--print-config", "--interval", "30"]) == 0
    out, err = capsys.readouterr()
    shown = json.loads(out)
    assert (shown["repo"], shown["interval"], shown["webhook_max_body"]) == (None, 30, 1048576)
    assert "`run` would refuse these settings: setting repo: required: give the flag --repo" in err
    assert "nothing to sync to" in err


@pytest.mark.parametrize("flags, message", [
    ([], "bindy-agent run: error: nothing to sync to: give a cluster (--kubeconfig or --in-cluster) and/or DNS "
         "servers (--endpoints, or --in-cluster-dns with a cluster); to only check commits, use `bindy-agent "
         "validate` or `bindy-agent plan`"),
    (["--in-cluster-dns"], "--in-cluster-dns finds the DNS servers through the cluster: it needs --kubeconfig or "
                           "--in-cluster"),
])
@pytest.mark.usefixtures("no_agent_env")
def test_run_without_anything_to_sync_to_refuses_to_start(capsys: pytest.CaptureFixture[str],
                                                          tmp_path: pathlib.Path, flags: list[str],
                                                          message: str) -> None:
    assert cli.main(["run", "--repo", str(tmp_path), *flags]) == 2
    assert message in capsys.readouterr().err


def test_every_run_flag_has_help_text(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name, field in config.Settings.model_fields.items():
        flag = "--" + name.replace("_", "-")
        described = " ".join((field.description or "").split())
        assert described and f"{described} (" in text, flag
        assert f"BINDY_AGENT_{name.upper()}" in text


@pytest.mark.parametrize("content, what", [(b"", "is empty"), (b" \n\t\n", "is empty"),
                                           (b"x" * 31 + b"\n", "holds only 31 characters")])
def test_an_empty_or_short_webhook_secret_is_refused(tmp_path: pathlib.Path, content: bytes, what: str) -> None:
    path = tmp_path / "secret"
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=f"webhook secret file {path} {what}: .* at least 32 characters. "
                                          r"Generate one with `openssl rand -hex 32`"):
        webhook.read_secret(path)
    path.write_bytes(b"x" * 32 + b"\n")
    assert webhook.read_secret(path) == b"x" * 32


def test_policy_settings_come_from_flags_environment_or_file_never_the_repository(tmp_path: pathlib.Path) -> None:
    file = tmp_path / "agent.yaml"
    file.write_text("repo: x\nallowed-namespaces: [dns-system, team-a]\nallowed-registries: registry.example.com\n")
    env = {"BINDY_AGENT_ALLOWED_EXTERNAL_IPS": "192.0.2.0/24,198.51.100.7",
           "BINDY_AGENT_ALLOW_CROSS_NAMESPACE_REFS": "true"}
    settings = config.load_settings({"pod_security": "baseline", "allowed_service_types": "ClusterIP,LoadBalancer"},
                                    config_file=file, environ=env)
    assert settings.policy_settings() == policy.PolicySettings(
        pod_security="baseline", allowed_registries=("registry.example.com",),
        allowed_service_types=("ClusterIP", "LoadBalancer"), allowed_external_ips=("192.0.2.0/24", "198.51.100.7"),
        allowed_namespaces=("dns-system", "team-a"), allow_cross_namespace_refs=True)
    defaults = config.load_settings({"repo": "x"}, environ={})
    assert defaults.policy_settings() == policy.PolicySettings()
    assert (defaults.allowed_namespaces, defaults.allowed_registries) == (
        ["dns-system"], ["docker.io/internetsystemsconsortium", "ghcr.io/firestoned"])
    with pytest.raises(ConfigError, match=r"setting allowed_service_types: .*'Ingress' is not a Service type"):
        config.load_settings({"repo": "x", "allowed_service_types": "Ingress"}, environ={})
    with pytest.raises(ConfigError, match="setting pod_security: .* \\(given by the environment variable BINDY_AGENT_POD_SECURITY\\)"):
        config.load_settings({"repo": "x"}, environ={"BINDY_AGENT_POD_SECURITY": "privileged"})
def test_read_limits_are_settings_with_their_defaults_and_reasons() -> None:
    from agent.model.limits import Limits

    settings = config.load_settings({"repo": "x", "max_documents": "1000"},
                                    environ={"BINDY_AGENT_MAX_FILE_BYTES": "4096"})
    assert settings.limits() == Limits(max_file_bytes=4096, max_documents=1000)
    assert config.load_settings({"repo": "x"}, environ={}).limits() == Limits()
    assert "100,000 records" in config.Settings.model_fields["max_revision_bytes"].description  # type: ignore[operator]
    with pytest.raises(ConfigError, match="setting max_alias_nodes: .* .given by the flag --max-alias-nodes."):
        config.load_settings({"repo": "x", "max_alias_nodes": "0"}, environ={})


# a value that cannot work -> what the refusal says about it
_CANNOT_WORK = [
    ("listen", "127.0.0.1:99999", "the port 99999 is not a port number: give one from 1 to 65535"),
    ("listen", "127.0.0.1:0", "the port 0 is not a port number"),
    ("deadline", "1e999", "Input should be a finite number"),
    ("resync_after", "inf", "Input should be a finite number"),
    ("interval", "nan", "Input should be a finite number"),
    ("interval", "86401", "Input should be less than or equal to 86400"),
    ("http_header_timeout", "1e9", "Input should be less than or equal to 3600"),
    ("lease_duration", "99999999", "Input should be less than or equal to 3600"),
    ("http_connection_limit", "1000000000", "Input should be less than or equal to 10000"),
    ("webhook_max_body", str(2**40), "Input should be less than or equal to 268435456"),
    ("max_file_bytes", str(2**63), "Input should be less than or equal to"),
    ("repo", "https://user:s3cret@git.example/a\x00b", "holds a control character (U+0000 at character 34)"),
    ("branch", "main\x1b[31m", "holds a control character"),
    ("cache", "/var/cache/\nbindy", "holds a control character"),
    ("allowed_registries", "quay.io,ghcr.io/\u202eevil", "holds a control character"),
    ("namespace", "Bad_Namespace", "String should match pattern"),
    ("agent_namespace", "x" * 64, "at most 63 characters"),
    ("lease_name", "two words", "String should match pattern"),
    ("allowed_namespaces", "dns-system,Not!", "'Not!' is not a namespace name"),
    ("alert_webhook_url", "https://hooks.example/a b", "String should match pattern"),
    ("commit_status_context", "c" * 300, "at most 255 characters"),
]


@pytest.mark.parametrize("name, value, message", _CANNOT_WORK)
@pytest.mark.parametrize("source", ["flag", "env", "file"])
def test_a_setting_that_cannot_work_is_refused_at_start_naming_it_and_where_it_came_from(
        name: str, value: str, message: str, source: str, tmp_path: pathlib.Path) -> None:
    flags: dict[str, object] = {"repo": "https://git.example/dns.git"} if name != "repo" else {}
    environ: dict[str, str] = {}
    file = None
    if source == "flag":
        flags[name], where = value, f"the flag --{name.replace('_', '-')}"
    elif source == "env":
        environ[f"BINDY_AGENT_{name.upper()}"], where = value, f"the environment variable BINDY_AGENT_{name.upper()}"
    else:
        file = tmp_path / "agent.yaml"
        file.write_text(json.dumps({name.replace("_", "-"): value}))  # JSON is YAML; "\x00" as an escape
        where = f"{file}, key '{name.replace('_', '-')}'"
    with pytest.raises(ConfigError) as caught:
        config.load_settings(flags, config_file=file, environ=environ)
    text = str(caught.value)
    assert text.startswith(f"setting {name}: ") and message in text and f"(given by {where})" in text, text
    assert "\x00" not in text and "\x1b" not in text and "\u202e" not in text and "s3cret" not in text


def test_every_setting_that_cannot_work_is_told_at_once() -> None:
    with pytest.raises(ConfigError) as caught:
        config.load_settings({"repo": "x", "listen": ":70000", "jitter": "-1"}, environ={"BINDY_AGENT_DEADLINE": "inf"})
    assert [line.split(":")[0] for line in str(caught.value).splitlines()] == [
        "setting deadline", "setting jitter", "setting listen"]


def test_print_config_is_json_or_nothing(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`--print-config` prints JSON a strict parser reads (no Infinity, no NaN), or refuses on stderr."""
    def strict(text: str) -> object:
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"not JSON: {c}"))

    monkeypatch.setenv("BINDY_AGENT_RESYNC_AFTER", "inf")
    assert cli.main(["run", "--print-config", "--repo", "x"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "setting resync_after: Input should be a finite number (given by the environment variable " \
                          "BINDY_AGENT_RESYNC_AFTER)" in err
    monkeypatch.setenv("BINDY_AGENT_RESYNC_AFTER", "1e3")
    assert cli.main(["run", "--print-config", "--repo", "x", "--deadline", "0"]) == 0
    shown = strict(capsys.readouterr().out)
    assert isinstance(shown, dict) and shown["resync_after"] == 1000.0 and shown["deadline"] == 0
