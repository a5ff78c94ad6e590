"""Settings precedence, webhook signatures, and JSON log lines of the long-running agent."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import pathlib

import pytest

from agent.errors import ConfigError
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


def test_read_limits_are_settings_with_their_defaults_and_reasons() -> None:
    from agent.model.limits import Limits

    settings = config.load_settings({"repo": "x", "max_documents": "1000"},
                                    environ={"BINDY_AGENT_MAX_FILE_BYTES": "4096"})
    assert settings.limits() == Limits(max_file_bytes=4096, max_documents=1000)
    assert config.load_settings({"repo": "x"}, environ={}).limits() == Limits()
    assert "100,000 records" in config.Settings.model_fields["max_revision_bytes"].description  # type: ignore[operator]
    with pytest.raises(ConfigError, match="setting max_alias_nodes: .* environment BINDY_AGENT_MAX_ALIAS_NODES"):
        config.load_settings({"repo": "x", "max_alias_nodes": "0"}, environ={})
