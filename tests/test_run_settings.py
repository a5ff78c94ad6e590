"""Settings precedence, webhook signatures, and JSON log lines of the long-running agent."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import pathlib

import pytest

from agent.errors import ConfigError
from agent.gate import policy
from agent.run import logs, scheduler, webhook
from agent.run import settings as config


def test_flags_beat_environment_beat_file(tmp_path: pathlib.Path) -> None:
    file = tmp_path / "agent.yaml"
    file.write_text("repo: https://git.example/dns.git\ninterval: 30\nbranch: from-file\npush-notes: false\n")
    env = {"BINDY_AGENT_INTERVAL": "45", "BINDY_AGENT_BRANCH": "from-env", "BINDY_AGENT_FORCE": "yes"}
    settings = config.load_settings({"branch": "from-flag", "interval": None}, config_file=file, environ=env)
    assert (settings.repo, settings.interval, settings.branch) == ("https://git.example/dns.git", 45, "from-flag")
    assert (settings.push_notes, settings.force) == (False, True)


def test_bad_settings_name_the_flag_and_the_variable() -> None:
    with pytest.raises(ConfigError, match=r"setting interval: .* \(flag --interval, environment BINDY_AGENT_INTERVAL\)"):
        config.load_settings({"repo": "x", "interval": "-1"}, environ={})
    with pytest.raises(ConfigError, match="setting repo: Field required"):
        config.load_settings({}, environ={})
    with pytest.raises(ConfigError, match="BINDY_AGENT_FORCE: expected true or false"):
        config.load_settings({"repo": "x"}, environ={"BINDY_AGENT_FORCE": "maybe"})


@pytest.mark.parametrize("headers, ok", [
    ({"X-Hub-Signature-256": "sha256=" + hmac.new(b"k", b"body", hashlib.sha256).hexdigest()}, True),
    ({"X-Signature-256": "sha256=" + hmac.new(b"k", b"body", hashlib.sha256).hexdigest()}, True),
    ({"X-Gitlab-Token": "k"}, True),
    ({"X-Hub-Signature-256": "sha256=" + hmac.new(b"other", b"body", hashlib.sha256).hexdigest()}, False),
    ({"X-Gitlab-Token": "wrong"}, False),
    ({}, False),
])
def test_webhook_signatures(headers: dict[str, str], ok: bool) -> None:
    assert webhook.verify_webhook(b"k", b"body", headers) is ok


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
    agent = scheduler.Agent(settings)
    started, release, runs = threading.Event(), threading.Event(), []

    def slow_run() -> None:
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
    with pytest.raises(ConfigError, match="setting pod_security: .* \\(flag --pod-security"):
        config.load_settings({"repo": "x"}, environ={"BINDY_AGENT_POD_SECURITY": "privileged"})
