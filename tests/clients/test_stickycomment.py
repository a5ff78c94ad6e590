"""One comment per pull request, found by its marker and edited in place (agent/clients/stickycomment.py),
against a local stand-in for GitHub's and GitLab's comments APIs: pages are followed, an identical body is
not written again, other comments are never touched - not even one someone else wrote starting with the
marker - and a refused token says what the job needs."""

from __future__ import annotations

import pytest

from agent.clients import stickycomment
from agent.errors import CommentError
from tests.support.forgeapi import Comment, ForgeApi

MARKER = "<!-- bindy-agent ci-plan: dns -->"


@pytest.fixture(params=["github", "gitlab"])
def forge(request: pytest.FixtureRequest) -> ForgeApi:
    api = ForgeApi(request.param, "secret-token", "acme/dns", 3,
                   per_page_max=20).start()
    yield api  # type: ignore[misc]
    api.stop()


def _thread(api: ForgeApi, token: str = "secret-token") -> stickycomment.Thread:
    return stickycomment.Thread(api.forge, api.url, api.project, api.number, token)


def test_the_comment_is_created_once_then_updated_in_place_past_the_first_page(forge: ForgeApi) -> None:
    forge.comments = [Comment(i, f"a review comment {i}", "someone") for i in range(1, 46)]  # three pages of 20
    forge.comments.insert(3, Comment(500, f"quoting it: {MARKER}", "someone"))  # holds the marker, not at its start
    first = stickycomment.upsert(_thread(forge), MARKER, MARKER + "\nplan 1")
    assert first.action == "created" and forge.comments[-1].body == MARKER + "\nplan 1"
    second = stickycomment.upsert(_thread(forge), MARKER, MARKER + "\nplan 2")
    assert (second.action, second.comment_id) == ("updated", first.comment_id)
    assert [c.body for c in forge.comments if MARKER in c.body] == [f"quoting it: {MARKER}", MARKER + "\nplan 2"]
    assert len(forge.comments) == 47
    pages = [r for r in forge.requests if r[0] == "GET" and not r[1].endswith("/user")]
    assert len(pages) == 6  # every page read twice: the comment is on the last one


def test_an_identical_body_is_not_written_again(forge: ForgeApi) -> None:
    stickycomment.upsert(_thread(forge), MARKER, MARKER + "\nplan")
    writes = len([r for r in forge.requests if r[0] != "GET"])
    again = stickycomment.upsert(_thread(forge), MARKER, MARKER + "\nplan")
    assert again.action == "unchanged" and len([r for r in forge.requests if r[0] != "GET"]) == writes


def test_a_refused_token_says_what_the_job_needs(forge: ForgeApi) -> None:
    with pytest.raises(CommentError) as refused:
        stickycomment.upsert(_thread(forge, "wrong"), MARKER, MARKER + "\nplan")
    text = str(refused.value)
    assert text.startswith(f"{forge.forge}: listing the comments: HTTP 401")
    assert ("pull-requests: write" if forge.forge == "github" else "access token with the api scope") in text
    assert "wrong" not in text and forge.comments == []


@pytest.mark.parametrize("user", [None, "dns-bot"])
def test_a_comment_someone_else_wrote_with_the_marker_is_left_alone(forge: ForgeApi, user: str | None) -> None:
    """A pull request's author posts "the plan" first: the bot writes its own comment, and keeps to it."""
    forge.user = user
    forge.comments = [Comment(7, MARKER + "\nlooks fine, nothing to see", "mallory")]
    first = stickycomment.upsert(_thread(forge), MARKER, MARKER + "\nplan 1")
    second = stickycomment.upsert(_thread(forge), MARKER, MARKER + "\nplan 2")
    assert first.action == "created" and (second.action, second.comment_id) == ("updated", first.comment_id)
    assert [(c.author, c.body) for c in forge.comments] == [
        ("mallory", MARKER + "\nlooks fine, nothing to see"), (forge.login, MARKER + "\nplan 2")]
    assert not [r for r in forge.requests if r[0] in ("PATCH", "PUT") and r[1].endswith("/7")]


def test_the_bot_whose_comment_is_kept_can_be_named(forge: ForgeApi) -> None:
    """A GitHub App's token writes as `app[bot]`, which GET /user does not tell: --comment-author names it."""
    forge.comments = [Comment(9, MARKER + "\nplan 0", "dns-app[bot]"), Comment(10, MARKER + "\nmine", forge.login)]
    thread = stickycomment.Thread(forge.forge, forge.url, forge.project, forge.number, "secret-token", "dns-app[bot]")
    posted = stickycomment.upsert(thread, MARKER, MARKER + "\nplan 1")
    assert (posted.action, posted.comment_id) == ("updated", 9)
    assert [c.body for c in forge.comments] == [MARKER + "\nplan 1", MARKER + "\nmine"]
