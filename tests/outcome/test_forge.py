"""Commit statuses on GitHub, GitLab and Gitea, posted to a real local HTTP server that records them."""

from __future__ import annotations

import logging
import pathlib
import time

import pytest

from agent.clients import commitstatus
from agent.errors import ConfigError
from agent.outcome import delivery, forge
from tests.support.procs import free_port
from tests.support.recorder import Answer, Recorder
from tests.support.reports import SHA, report_doc

TOKEN = "ghp_0123456789abcdefTOKEN"
QUICK = delivery.Budget(timeout=2, retries=0)


@pytest.fixture
def token_file(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    return path


def test_github_gets_pending_then_the_outcome_with_counts_and_a_report_link(token_file: pathlib.Path) -> None:
    with Recorder() as server:
        settings = forge.configure("github", repo="https://github.com/acme/dns.git", token_file=token_file,
                                   api_url=server.url, report_url="https://ci.example/dns/{revision}", budget=QUICK)
        assert commitstatus.post(forge.pending(settings), SHA)
        assert forge.finished(settings, report_doc("applied", created=2, updated=1, rrsets=3))
        assert forge.finished(settings, report_doc("partial", created=1, failures=("dns/a: HTTP 500",)))
        assert forge.finished(settings, report_doc("rejected", errors=3))
        assert forge.finished(settings, report_doc("rejected", refusals=("example.com: deletes 40% of 12 RRsets",)))
        assert not forge.finished(settings, report_doc("superseded"))  # never run, so never pending
    assert {r.path for r in server.received} == {f"/repos/acme/dns/statuses/{SHA}"}
    for r in server.received:
        assert r.headers["authorization"] == f"Bearer {TOKEN}"
        assert r.headers["accept"] == "application/vnd.github+json"
        assert r.headers["content-type"] == "application/json"
    link = f"https://ci.example/dns/{SHA}"
    assert [r.json() for r in server.received] == [
        {"state": "pending", "context": "bindy-agent", "description": "applying this commit", "target_url": link},
        {"state": "success", "context": "bindy-agent", "target_url": link,
         "description": "applied: 2 created, 1 updated, 0 deleted, 3 RRset changes, 0 errors"},
        {"state": "failure", "context": "bindy-agent", "target_url": link,
         "description": "partial: 1 failed; 1 created, 0 updated, 0 deleted, 0 RRset changes"},
        {"state": "error", "context": "bindy-agent", "target_url": link,
         "description": "rejected: 3 errors; nothing applied, the last good revision keeps serving"},
        {"state": "error", "context": "bindy-agent", "target_url": link,
         "description": "refused as unsafe: 1 zone; nothing applied, see the report"},
    ]


def test_gitlab_gets_running_then_success_or_failed_with_private_token(token_file: pathlib.Path) -> None:
    with Recorder() as server:
        settings = forge.configure("gitlab", repo="git@gitlab.example.com:platform/dns/zones.git",
                                   token_file=token_file, api_url=f"{server.url}/api/v4", context="dns-prod",
                                   budget=QUICK)
        assert commitstatus.post(forge.pending(settings), SHA)
        assert forge.finished(settings, report_doc("applied", deleted=1))
        assert forge.finished(settings, report_doc("partial", failures=("x",)))
        assert forge.finished(settings, report_doc("rejected", errors=1))
    assert {r.path for r in server.received} == {f"/api/v4/projects/platform%2Fdns%2Fzones/statuses/{SHA}"}
    assert all(r.headers["private-token"] == TOKEN and "authorization" not in r.headers for r in server.received)
    assert [(b["state"], b["name"], "target_url" in b) for b in (r.json() for r in server.received)] == [
        ("running", "dns-prod", False), ("success", "dns-prod", False), ("failed", "dns-prod", False),
        ("failed", "dns-prod", False)]
    assert server.received[1].json()["description"] == "applied: 0 created, 0 updated, 1 deleted, 0 RRset changes, 0 errors"


def test_gitlab_refusing_the_same_state_twice_is_not_a_failure(token_file: pathlib.Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    again = Answer(400, b'{"message":"Cannot transition status via :run from :running"}')
    with Recorder(again) as server:
        settings = forge.configure("gitlab", repo="https://gitlab.example.com/platform/dns.git",
                                   token_file=token_file, api_url=server.url, budget=QUICK)
        assert commitstatus.post(forge.pending(settings), SHA)
    assert len(server.received) == 1
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_gitea_uses_the_github_path_with_its_token_scheme(token_file: pathlib.Path) -> None:
    with Recorder() as server:
        settings = forge.configure("gitea", repo="http://127.0.0.1:3000/ops/dns.git", token_file=token_file,
                                   api_url=f"{server.url}/api/v1", budget=QUICK)
        assert forge.finished(settings, report_doc("partial", failures=("x",)))
    [request] = server.received
    assert request.path == f"/api/v1/repos/ops/dns/statuses/{SHA}"
    assert request.headers["authorization"] == f"token {TOKEN}"
    assert request.json()["state"] == "failure"


@pytest.mark.parametrize("kind, repo, api_url, project", [
    ("github", "https://github.com/acme/dns.git", "https://api.github.com", "acme/dns"),
    ("github", "git@github.com:acme/dns.git", "https://api.github.com", "acme/dns"),
    ("github", "https://ghe.corp.example/acme/dns", "https://ghe.corp.example/api/v3", "acme/dns"),
    ("gitlab", "https://oauth2:s3cret@gitlab.example.com/platform/dns/zones.git", "https://gitlab.example.com/api/v4",
     "platform/dns/zones"),
    ("gitlab", "ssh://git@gitlab.example.com:2222/platform/dns.git", "https://gitlab.example.com/api/v4", "platform/dns"),
    ("gitea", "http://127.0.0.1:3000/ops/dns.git", "http://127.0.0.1:3000/api/v1", "ops/dns"),
])
def test_api_url_and_project_come_from_the_repository_url(kind: str, repo: str, api_url: str, project: str,
                                                          token_file: pathlib.Path) -> None:
    settings = forge.configure(kind, repo=repo, token_file=token_file)
    assert (settings.api_url, settings.project) == (api_url, project)


def test_explicit_api_url_and_project_win_and_undeterminable_ones_are_bad_settings(token_file: pathlib.Path) -> None:
    settings = forge.configure("gitlab", repo="/srv/git/dns", token_file=token_file,
                               api_url="https://git.corp/api/v4/", project="1234")
    assert (settings.api_url, settings.project) == ("https://git.corp/api/v4", "1234")
    with pytest.raises(ConfigError, match="not a URL; set commit_status_api_url and commit_status_project"):
        forge.configure("github", repo="/srv/git/dns", token_file=token_file)
    with pytest.raises(ConfigError, match="'acme/sub/dns' is not owner/repo; set commit_status_project"):
        forge.configure("github", repo="https://github.com/acme/sub/dns.git", token_file=token_file)
    with pytest.raises(ConfigError, match="a token file is needed"):
        forge.configure("github", repo="https://github.com/acme/dns.git", token_file=None)


def test_a_server_that_fails_is_retried_within_bounds(token_file: pathlib.Path) -> None:
    budget = delivery.Budget(timeout=5, retries=2, backoff=0.05)
    with Recorder(Answer(502), Answer(201)) as flaky:
        settings = forge.configure("github", repo="https://github.com/a/b", token_file=token_file,
                                   api_url=flaky.url, budget=budget)
        assert commitstatus.post(forge.pending(settings), SHA)
    assert len(flaky.received) == 2
    with Recorder(Answer(503)) as broken:
        settings = forge.configure("github", repo="https://github.com/a/b", token_file=token_file,
                                   api_url=broken.url, budget=budget)
        assert not commitstatus.post(forge.pending(settings), SHA)
    assert len(broken.received) == 3  # the first try and two retries, then it gives up
    with Recorder(Answer(401, b'{"message":"Bad credentials"}')) as refused:
        settings = forge.configure("github", repo="https://github.com/a/b", token_file=token_file,
                                   api_url=refused.url, budget=budget)
        assert not commitstatus.post(forge.pending(settings), SHA)
    assert len(refused.received) == 1  # a 4xx is not retried


def test_a_down_or_slow_forge_costs_at_most_the_timeout_and_is_logged(token_file: pathlib.Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    budget = delivery.Budget(timeout=0.6, retries=5, backoff=0.05)
    down = forge.configure("github", repo="https://github.com/a/b", token_file=token_file,
                           api_url=f"http://127.0.0.1:{free_port()}", budget=budget)
    with Recorder(Answer(201, delay=5)) as slow:
        for settings in (down, forge.configure("github", repo="https://github.com/a/b", token_file=token_file,
                                               api_url=slow.url, budget=budget)):
            started = time.monotonic()
            assert not forge.finished(settings, report_doc("applied"))
            assert time.monotonic() - started < 1.2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert all(w.startswith(f"github commit status success on {SHA[:12]}: not delivered") for w in warnings)


def test_a_missing_token_file_sends_nothing_and_says_so(tmp_path: pathlib.Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    with Recorder() as server:
        settings = forge.configure("github", repo="https://github.com/a/b", token_file=tmp_path / "absent",
                                   api_url=server.url, budget=QUICK)
        assert not commitstatus.post(forge.pending(settings), SHA)
    assert server.received == []
    assert f"github commit status file {tmp_path / 'absent'}: no such file" in caplog.text
