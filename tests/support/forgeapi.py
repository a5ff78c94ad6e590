"""A small stand-in for the comments API of GitHub (issue comments of a pull request) and GitLab (notes
of a merge request), on loopback: the forge itself cannot run here. It keeps the comments in memory,
pages its lists as the forge does (GitHub: a Link header; GitLab: X-Next-Page), checks the token, answers
`GET /user` as the forge does for the token (GitHub: 403 for a workflow's GITHUB_TOKEN, whose comments are
github-actions[bot]'s; GitLab: the project access token's bot user), writes comments as that user, and
records every request, so a test sees what a CI job would have done to the pull request."""

from __future__ import annotations

import dataclasses
import http.server
import json
import re
import threading
import urllib.parse
from typing import Any


@dataclasses.dataclass
class Comment:
    id: int
    body: str
    author: str = "bot"


@dataclasses.dataclass
class ForgeApi:
    forge: str  # github | gitlab
    token: str
    project: str  # owner/repo (GitHub) or a numeric project id (GitLab)
    number: int
    per_page_max: int = 100
    user: str | None = None  # the token's user as GET /user tells it (GitHub, None: a GITHUB_TOKEN, which may not ask)
    comments: list[Comment] = dataclasses.field(default_factory=list)
    requests: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    _server: http.server.ThreadingHTTPServer | None = None

    @property
    def login(self) -> str:
        """Whom the comments the token writes are by."""
        return self.user or ("github-actions[bot]" if self.forge == "github" else "project_42_bot_0123abcd")

    @property
    def url(self) -> str:
        assert self._server is not None
        base = f"http://127.0.0.1:{self._server.server_address[1]}"
        return base if self.forge == "github" else base + "/api/v4"

    def start(self) -> ForgeApi:
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                api._handle(self, "GET")

            def do_POST(self) -> None:
                api._handle(self, "POST")

            def do_PATCH(self) -> None:
                api._handle(self, "PATCH")

            def do_PUT(self) -> None:
                api._handle(self, "PUT")

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # -- the API ---------------------------------------------------------------------------------
    def _paths(self) -> tuple[str, re.Pattern[str]]:
        if self.forge == "github":
            return (f"/repos/{self.project}/issues/{self.number}/comments",
                    re.compile(rf"^/repos/{re.escape(self.project)}/issues/comments/(\d+)$"))
        base = f"/api/v4/projects/{urllib.parse.quote(self.project, safe='')}/merge_requests/{self.number}/notes"
        return base, re.compile(rf"^{re.escape(base)}/(\d+)$")

    def _authorized(self, handler: http.server.BaseHTTPRequestHandler) -> bool:
        if self.forge == "github":
            return handler.headers.get("Authorization") == f"Bearer {self.token}"
        return handler.headers.get("PRIVATE-TOKEN") == self.token

    def _handle(self, handler: http.server.BaseHTTPRequestHandler, method: str) -> None:
        url = urllib.parse.urlsplit(handler.path)
        self.requests.append((method, url.path))
        if not self._authorized(handler):
            return self._reply(handler, 401, {"message": "Bad credentials"})
        listing, one = self._paths()
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length)) if length else {}
        if url.path in ("/user", "/api/v4/user") and method == "GET":
            if self.forge == "github" and self.user is None:
                return self._reply(handler, 403, {"message": "Resource not accessible by integration"})
            return self._reply(handler, 200, {"login" if self.forge == "github" else "username": self.login})
        if url.path == listing and method == "GET":
            return self._list(handler, urllib.parse.parse_qs(url.query))
        if url.path == listing and method == "POST":
            comment = Comment(1000 + len(self.comments), str(body["body"]), self.login)
            self.comments.append(comment)
            return self._reply(handler, 201, self._json(comment))
        found = one.match(url.path)
        if found and method == ("PATCH" if self.forge == "github" else "PUT"):
            comment = next((c for c in self.comments if c.id == int(found.group(1))), None)
            if comment is None:
                return self._reply(handler, 404, {"message": "Not Found"})
            comment.body = str(body["body"])
            return self._reply(handler, 200, self._json(comment))
        return self._reply(handler, 404, {"message": "Not Found"})

    def _json(self, comment: Comment) -> dict[str, Any]:
        if self.forge == "github":
            return {"id": comment.id, "body": comment.body, "user": {"login": comment.author},
                    "html_url": f"https://github.example/{self.project}/pull/{self.number}#issuecomment-{comment.id}"}
        return {"id": comment.id, "body": comment.body, "author": {"username": comment.author}}

    def _list(self, handler: http.server.BaseHTTPRequestHandler, query: dict[str, list[str]]) -> None:
        per_page = min(int(query.get("per_page", ["30"])[0]), self.per_page_max)
        page = int(query.get("page", ["1"])[0])
        shown = self.comments[(page - 1) * per_page:page * per_page]
        headers = {}
        if page * per_page < len(self.comments):
            if self.forge == "github":
                listing, _ = self._paths()
                next_url = f"http://127.0.0.1:{handler.server.server_address[1]}{listing}?per_page={per_page}&page={page + 1}"
                headers["Link"] = f'<{next_url}>; rel="next"'
            else:
                headers["X-Next-Page"] = str(page + 1)
        self._reply(handler, 200, [self._json(c) for c in shown], headers)

    @staticmethod
    def _reply(handler: http.server.BaseHTTPRequestHandler, status: int, doc: Any,
               headers: dict[str, str] | None = None) -> None:
        data = json.dumps(doc).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
