"""One comment on a pull request (GitHub) or merge request (GitLab), kept up to date in place.

The comment is found by a hidden marker (an HTML comment at the start of its body, invisible once
rendered) and by its author: the first comment that starts with the marker and was written by the
bot itself is updated; without one, a comment is created. A second run therefore edits the same
comment, and a pull request never collects one per push; a comment someone else wrote starting with
the marker is left alone (the job's token may edit any comment: it must never write its plan into a
comment its author can edit afterwards). The bot is the token's own user: on GitHub `GET /user` when
the token may ask (a personal access token), else `github-actions[bot]`, the user of a workflow's
GITHUB_TOKEN; on GitLab `GET /user` (a project access token's bot user); or the login given
(`Thread.author`).

    GitHub  GET/POST {api}/repos/{owner/repo}/issues/{number}/comments, PATCH
            .../issues/comments/{id} (Authorization: Bearer TOKEN; the workflow's GITHUB_TOKEN with
            pull-requests: write)
    GitLab  GET/POST {api}/projects/{id}/merge_requests/{iid}/notes, PUT .../notes/{id}
            (PRIVATE-TOKEN: a project or personal access token with the api scope)
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from typing import Any

import httpx

from agent.errors import CommentError

MAX_PAGES = 50  # 5,000 comments: a pull request with more is not looked through further
FORGES = ("github", "gitlab")
GITHUB_ACTIONS_BOT = "github-actions[bot]"  # who writes with a workflow's GITHUB_TOKEN


@dataclasses.dataclass(frozen=True)
class Thread:
    """The pull/merge request to comment on, and how to reach its forge's API."""

    forge: str  # github | gitlab
    api_url: str  # https://api.github.com, https://gitlab.example.com/api/v4
    project: str  # owner/repo (GitHub), a project id or path (GitLab)
    number: int  # the pull request's number, the merge request's iid
    token: str = dataclasses.field(repr=False)
    # the login whose comment is kept up to date (None: the token's own user)
    author: str | None = None

    def comments_url(self) -> str:
        if self.forge == "github":
            return f"{self.api_url.rstrip('/')}/repos/{self.project}/issues/{self.number}/comments"
        project = urllib.parse.quote(self.project, safe="")
        return f"{self.api_url.rstrip('/')}/projects/{project}/merge_requests/{self.number}/notes"

    def comment_url(self, comment_id: int) -> str:
        if self.forge == "github":
            return f"{self.api_url.rstrip('/')}/repos/{self.project}/issues/comments/{comment_id}"
        return f"{self.comments_url()}/{comment_id}"

    def headers(self) -> dict[str, str]:
        if self.forge == "github":
            return {"Authorization": f"Bearer {self.token}",
                    "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
                    "User-Agent": "bindy-agent"}
        return {"PRIVATE-TOKEN": self.token, "User-Agent": "bindy-agent"}


@dataclasses.dataclass(frozen=True)
class Posted:
    action: str  # "created" | "updated" | "unchanged"
    comment_id: int
    url: str


def _failed(what: str, thread: Thread, response: httpx.Response) -> CommentError:
    hint = ""
    if response.status_code in (401, 403) and thread.forge == "github":
        hint = ("; the token may not write comments: give the job `permissions: pull-requests: "
                "write` (a pull request from a fork gets a read-only token)")
    elif response.status_code in (401, 403):
        hint = ("; the token may not write notes: use a project or personal access token with the "
                "api scope")
    detail = " ".join(response.text.split())[:200]
    return CommentError(f"{thread.forge}: {what}: HTTP {response.status_code} {detail}{hint}",
                        retryable=response.status_code >= 500)


def _call(client: httpx.Client, method: str, url: str, thread: Thread, what: str,
          **kwargs: Any) -> httpx.Response:
    try:
        response = client.request(method, url, headers=thread.headers(), **kwargs)
    except httpx.HTTPError as exc:
        raise CommentError(f"{thread.forge}: {what}: {exc}", retryable=True) from exc
    if response.status_code >= 300:
        raise _failed(what, thread, response)
    return response


def author_of(comment: dict[str, Any], forge: str) -> str:
    """Who wrote a comment: GitHub's user.login, GitLab's author.username."""
    who = comment.get("user" if forge == "github" else "author")
    return str(who.get("login" if forge == "github" else "username")
               or "") if isinstance(who, dict) else ""


def bot(client: httpx.Client, thread: Thread) -> str:
    """The login of the user the token writes as (see the module)."""
    if thread.author:
        return thread.author
    url = f"{thread.api_url.rstrip('/')}/user"
    if thread.forge == "github":
        try:
            response = client.request("GET", url, headers=thread.headers())
        except httpx.HTTPError as exc:
            raise CommentError(f"github: finding the token's user: {exc}", retryable=True) from exc
        login = response.json().get("login") if response.status_code == 200 else None
        return str(login) if isinstance(login, str) and login else GITHUB_ACTIONS_BOT
    me = _call(client, "GET", url, thread, "finding the token's user").json()
    if not isinstance(me, dict) or not isinstance(me.get("username"), str):
        raise CommentError("gitlab: finding the token's user: no username in GET /user")
    return str(me["username"])


def find(client: httpx.Client, thread: Thread, marker: str) -> dict[str, Any] | None:
    """The first comment whose body starts with `marker` and whose author is the bot, looked through
    page by page (the bot is asked for only when a comment starts with the marker)."""
    known: list[str] = []

    def mine(comment: dict[str, Any]) -> bool:
        if not str(comment.get("body") or "").startswith(marker):
            return False
        known[:] = known or [bot(client, thread)]
        return author_of(comment, thread.forge) == known[0]

    url: str | None = thread.comments_url()
    params: dict[str, str] | None = {"per_page": "100", **({"sort": "asc", "order_by": "created_at"}
                                                           if thread.forge == "gitlab" else {})}
    for _ in range(MAX_PAGES):
        if url is None:
            return None
        response = _call(client, "GET", url, thread, "listing the comments", params=params)
        page = response.json()
        if not isinstance(page, list):
            raise CommentError(f"{thread.forge}: listing the comments: not a list of comments")
        found = next((c for c in page if isinstance(c, dict) and mine(c)), None)
        if found is not None:
            return found
        url, params = _next_page(response, thread, params), None
    return None


def _next_page(response: httpx.Response, thread: Thread,
               params: dict[str, str] | None) -> str | None:
    if thread.forge == "github":
        link = response.links.get("next", {}).get("url")
        return str(link) if link else None
    following = response.headers.get("X-Next-Page", "").strip()
    if not following:
        return None
    return str(response.request.url.copy_merge_params({"page": following}))


def _link(comment: dict[str, Any]) -> str:
    return str(comment.get("html_url") or comment.get("web_url") or "")


def upsert(thread: Thread, marker: str, body: str, *, client: httpx.Client | None = None,
           timeout: float = 30) -> Posted:
    """Updates the bot's comment that starts with `marker` to `body` (which starts with it; a
    comment that says it already is left alone), or creates it."""
    if not body.startswith(marker):
        body = marker + "\n" + body
    own = client or httpx.Client(timeout=timeout, follow_redirects=False)
    try:
        existing = find(own, thread, marker)
        if existing is not None and existing.get("body") == body:  # no edit, no notification
            return Posted("unchanged", int(existing["id"]), _link(existing))
        if existing is not None:
            comment_id = int(existing["id"])
            method = "PATCH" if thread.forge == "github" else "PUT"
            response = _call(own, method, thread.comment_url(comment_id), thread,
                             "updating the comment", json={"body": body})
            action = "updated"
        else:
            response = _call(own, "POST", thread.comments_url(), thread, "creating the comment",
                             json={"body": body})
            action = "created"
        made = response.json()
        return Posted(action, int(made.get("id", 0)), _link(made))
    finally:
        if client is None:
            own.close()
