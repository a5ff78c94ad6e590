"""Each forge is one class (agent/clients/forges/): how its deliveries are signed and say what they are,
and how its commit statuses are posted. The webhook and the commit statuses read them from the forge
table, and the `commit_status` setting accepts exactly the forges that take statuses."""

from __future__ import annotations

import hashlib
import hmac

import pydantic
import pytest

from agent.clients import forges
from agent.clients.forges import ForgeName
from agent.run import settings as config

SECRET = b"s" * 32
BODY = b'{"ref": "refs/heads/main"}'
HEX = hmac.new(SECRET, BODY, hashlib.sha256).hexdigest()


@pytest.mark.parametrize(("forge", "header", "value"), [
    (forges.GITHUB, "X-Hub-Signature-256", f"sha256={HEX}"),
    (forges.GENERIC, "X-Signature-256", f"sha256={HEX}"),
    (forges.GITEA, "X-Gitea-Signature", HEX),
    (forges.GITLAB, "X-Gitlab-Token", SECRET.decode()),
], ids=lambda v: v.name if isinstance(v, forges.Forge) else None)
def test_each_forge_checks_its_own_signature_header(forge: forges.Forge, header: str, value: str) -> None:
    assert forge.signature_header == header
    assert forge.signed(SECRET, BODY, value) and forges.verify(SECRET, BODY, {header: value})
    assert not forges.verify(SECRET, BODY + b" ", {header: value}) or forge is forges.GITLAB  # a token signs no body
    assert not forges.verify(b"t" * 32, BODY, {header: value})
    assert forges.signed({header: value}) and not forges.signed({"X-Other": value})


def test_the_first_signature_header_sent_decides() -> None:
    """GitHub's header before the generic one, Gitea's and GitLab's token: as the deliveries carry them."""
    good, bad = f"sha256={HEX}", "sha256=" + "0" * 64
    assert not forges.verify(SECRET, BODY, {"X-Hub-Signature-256": bad, "X-Gitea-Signature": HEX})
    assert forges.verify(SECRET, BODY, {"X-Hub-Signature-256": good, "X-Gitlab-Token": "wrong"})
    assert not forges.verify(SECRET, BODY, {})


@pytest.mark.parametrize(("headers", "forge", "push", "ping"), [
    ({"X-GitHub-Event": "push"}, "github", True, False),
    ({"X-GitHub-Event": "ping"}, "github", False, True),
    ({"X-GitHub-Event": "push", "X-Gitea-Event": "push"}, "gitea", True, False),  # Gitea sends both
    ({"X-Gitlab-Event": "Tag Push Hook"}, "gitlab", True, False),
    ({"X-Gitlab-Event": "Merge Request Hook"}, "gitlab", False, False),
    ({}, "generic", True, False),
])
def test_a_delivery_is_read_as_its_forge_sends_it(headers: dict[str, str], forge: str, push: bool, ping: bool) -> None:
    delivery = forges.read(headers, b'{"ref": "main"}')
    assert (delivery.forge, delivery.push, delivery.ping, delivery.ref) == (forge, push, ping, "refs/heads/main")


def test_the_status_requests_of_each_forge() -> None:
    url, headers = forges.GITHUB.status_request("https://api.github.com", "acme/dns", "abc", "T")
    assert url == "https://api.github.com/repos/acme/dns/statuses/abc"
    assert headers == {"Authorization": "Bearer T", "Accept": "application/vnd.github+json",
                       "Content-Type": "application/json", "X-GitHub-Api-Version": "2022-11-28"}
    url, headers = forges.GITEA.status_request("https://git.example/api/v1", "acme/dns", "abc", "T")
    assert (url, headers["Authorization"], "X-GitHub-Api-Version" in headers) == (
        "https://git.example/api/v1/repos/acme/dns/statuses/abc", "token T", False)
    url, headers = forges.GITLAB.status_request("https://gitlab.example/api/v4", "platform/dns/zones", "abc", "T")
    assert (url, headers) == ("https://gitlab.example/api/v4/projects/platform%2Fdns%2Fzones/statuses/abc",
                              {"PRIVATE-TOKEN": "T", "Content-Type": "application/json"})
    assert [forges.FORGES[n].api_url("https://h", "h") for n in forges.STATUSES] == [
        "https://h/api/v3", "https://h/api/v4", "https://h/api/v1"]
    assert forges.GITHUB.api_url("https://github.com", "github.com") == "https://api.github.com"
    assert forges.GITHUB.project_problem("a/b/c") == "'a/b/c' is not owner/repo"
    assert forges.GITLAB.project_problem("a/b/c") is None and forges.GITLAB.project_problem("")


def test_the_commit_status_setting_takes_the_forges_that_have_statuses() -> None:
    assert forges.STATUSES == (ForgeName.GITHUB, ForgeName.GITLAB, ForgeName.GITEA)
    assert not forges.GENERIC.states
    for name in ("off", *forges.STATUSES):
        assert config.Settings(repo="/srv/dns", commit_status=name).commit_status == name
    for name in ("generic", "bitbucket", "GitHub"):
        with pytest.raises(pydantic.ValidationError, match="commit_status"):
            config.Settings(repo="/srv/dns", commit_status=name)
    description = config.Settings.model_fields["commit_status"].description
    assert description == "post a commit status on each commit a run handles: off, github, gitlab or gitea"
