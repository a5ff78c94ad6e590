"""The GitHub Action (action.yml) as a pull_request workflow runs it: a shallow checkout of the pull
request's head (`git clone --depth 1`), the Action's steps run by bash with the runner's variables,
bindy-agent installed from the Action's own checkout, the plan posted as one comment on the pull request
(a local stand-in for GitHub's comments API), updated in place on the next push, with the problems as
annotations and the Markdown in the job summary."""

from __future__ import annotations

import pathlib

import pytest

from tests.support import cijob
from tests.support.forgeapi import ForgeApi

TOKEN = "ghs_test-token-0123456789"
MARKER = "<!-- bindy-agent ci-plan: dns -->"


@pytest.fixture
def github() -> ForgeApi:
    api = ForgeApi("github", TOKEN, "acme/dns", 7).start()
    yield api  # type: ignore[misc]
    api.stop()


def _job(tmp: pathlib.Path, pr: cijob.PullRequest, api: ForgeApi, action: pathlib.Path, run: int,
         **inputs: str) -> tuple[cijob.ActionRun, pathlib.Path]:
    """One run of the workflow's job for the pull request's current head: a new checkout, the Action."""
    workspace = pr.shallow_clone(tmp / f"workspace-{run}")
    runner = tmp / "runner"  # the runner's temporary directory, kept between the two jobs as RUNNER_TEMP is
    runner.mkdir(exist_ok=True)
    env = cijob.job_environment(tmp, GITHUB_ACTIONS="true", GITHUB_REPOSITORY="acme/dns", GITHUB_API_URL=api.url,
                                GITHUB_SERVER_URL="https://github.example",
                                GITHUB_EVENT_NAME="pull_request",
                                GITHUB_EVENT_PATH=str(cijob.github_event(runner, 7, pr.base, pr.head)))
    return cijob.run_action(action, workspace, runner, inputs={"directory": "dns", **inputs}, token=TOKEN,
                            env=env), workspace


def test_the_action_comments_once_and_updates_its_comment_on_the_next_push(tmp_path: pathlib.Path,
                                                                             github: ForgeApi) -> None:
    pr = cijob.PullRequest.make(tmp_path / "git")
    action = cijob.source_copy(tmp_path / "action")

    first, workspace = _job(tmp_path, pr, github, action, 1)
    assert [s.name for s in first.steps] == ["Install bindy-agent", "Plan the pull request"]
    plan = first.last
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert f"fetched the base {pr.base} from origin (the clone did not have it)" in plan.stderr
    assert "::warning file=dns/zones/spare.yaml,line=4,title=bindy-agent%3A DNSZone/dns-system/spare-com::" \
           "DNSZone/dns-system/spare-com: spec: selects no Bind9Instance" in plan.stderr
    [comment] = github.comments
    created = comment.body
    assert comment.body.startswith(MARKER + "\n## bindy-agent plan\n")
    assert f"Changes from base `{pr.base[:12]}` to head `HEAD ({pr.head[:12]})`" in comment.body
    assert "| `~` | `ARecord dns-system/www` |" in comment.body and "**2 edits to the repository's CRs**" in comment.body
    # each change links to its file and line at the pull request's head, on the repository's forge
    assert f"(https://github.example/acme/dns/blob/{pr.head}/dns/records/example-com/web.yaml#L2) |" in comment.body
    assert plan.stdout == comment.body and first.summary == comment.body + "\n"
    assert first.outputs == {"changes": "true"}
    assert f"comment created: https://github.example/acme/dns/pull/7#issuecomment-{comment.id}" in plan.stderr
    assert (workspace / ".git" / "shallow").is_file()

    pr.push("a record without a name", {"dns/records/bad.yaml": cijob.BAD})
    second, _ = _job(tmp_path, pr, github, action, 2)
    assert second.last.returncode == 1, second.last.stderr[-3000:]  # the check fails: the head is invalid
    assert "::error file=dns/records/bad.yaml,line=4,title=bindy-agent%3A ARecord/dns-system/a::" \
           "ARecord/dns-system/a: spec.name: required field is missing" in second.last.stderr
    [updated] = github.comments  # the same comment, edited: never a second one
    assert updated.id == comment.id and updated.body != created
    assert updated.body.startswith(MARKER + "\n") and "**Not planned: the head has 2 errors.**" in updated.body
    assert ("PATCH", f"/repos/acme/dns/issues/comments/{comment.id}") in github.requests
    assert f"comment updated: https://github.example/acme/dns/pull/7#issuecomment-{comment.id}" in second.last.stderr


    third, _ = _job(tmp_path, pr, github, action, 3, comment="false",
                    args="--allowed-namespaces dns-system --detailed-exitcode")
    assert third.last.returncode == 1 and third.last.stdout.startswith(MARKER)  # --no-comment: printed only
    assert [c.body for c in github.comments] == [updated.body]
    pr.push("fixed", {"dns/records/bad.yaml": None})
    fourth, _ = _job(tmp_path, pr, github, action, 4, comment="false", args="--detailed-exitcode")
    assert fourth.last.returncode == 2, fourth.last.stderr[-3000:]  # `args` reach ci-plan: 2, changes
    assert fourth.outputs == {"changes": "true"} and len(github.comments) == 1
