"""A Git remote as a revision source (GitPython).

Cloned once into a cache directory, then fetched; follows a branch, or pins a tag or commit;
shallow by default; an optional sub-path holds the CRs. Files are read from the fetched commit's
tree (agent/sources/gittree.py), never from a work tree, so a symbolic link in the repository can
only ever resolve to another blob of the same commit. Auth: an SSH deploy key (host keys checked
against a known_hosts file unless explicitly disabled), an HTTPS token sent as HTTP Basic auth with
the user `x-access-token` as GitHub, GitLab and Gitea accept (passed to git through its
environment, never on a command line or in a log), or none. Every git command has a timeout: its
own (`timeout`), cut to what the current run has left (`time_left`, which the run sets from its
deadline), so a stalled remote cannot hold a run past `--deadline`. A force-pushed branch is simply
followed: each fetch names the commit to read.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import logging
import math
import pathlib
import posixpath
import re
import shlex
import shutil
from collections.abc import Callable

import git

from agent.errors import ConfigError, SourceError
from agent.model import calls
from agent.model.limits import Limits
from agent.sources import boundary, gitlocal, gittree, kustomize, operatorfile
from agent.sources.gitnotes import FULL_NOTES_REF as FULL_NOTES_REF
from agent.sources.gitnotes import NOTES_REF as NOTES_REF
from agent.sources.gitnotes import NOTES_REFS as NOTES_REFS
from agent.sources.gitnotes import REMOTE_NOTES as REMOTE_NOTES
from agent.sources.gitnotes import Notes, stderr_of
from agent.sources.gitnotes import StoredNote as StoredNote

log = logging.getLogger(__name__)
_AUTH_FAILURES = ("could not read Username", "Authentication failed",
                  "Permission denied (publickey", "401", "403")
_HOST_KEY_FAILURES = ("REMOTE HOST IDENTIFICATION HAS CHANGED", "Host key verification failed")
TOKEN_USER = "x-access-token"  # GitHub needs exactly this user; GitLab and Gitea accept any
# seconds the current run has left (math.inf: no run, or no deadline)
TimeLeft = Callable[[], float]


def unbounded() -> float:
    """The TimeLeft outside a run: each command has only its own timeout."""
    return math.inf


@dataclasses.dataclass(frozen=True)
class Commit:
    sha: str
    author: str
    subject: str
    date: str


@dataclasses.dataclass(frozen=True)
class FetchedCommit:
    """A fetched commit: its files are listed and read straight from its tree."""

    revision: str
    commit: Commit
    path: str = ""  # the directory of CRs inside the repository ("" for the top)
    limits: Limits = dataclasses.field(default_factory=Limits)  # how much the loader may read of it
    repo: git.Repo | None = dataclasses.field(default=None, repr=False, compare=False)
    listing: gittree.Listing | None = dataclasses.field(default=None, repr=False, compare=False)

    def files(self) -> kustomize.Revision:
        """The commit's YAML files below `path` (path, blob id, size, read()); its kustomizations
        may read all."""
        if (repo := self.repo) is None:
            raise SourceError(f"{self.revision[:12]}: no repository to read the files from")
        found = gittree.files(repo, f"{self.revision}:{self.path}" if self.path else self.revision,
                              self.listing)
        every = boundary.is_repository_file  # a kustomization may name any file of the commit
        return kustomize.within(found, self.path,
                                lambda: gittree.files(repo, self.revision, candidate=every))


def option_like(value: str | None, what: str) -> str | None:
    """Why an operator's value may not be given to git (it would be read as an option of git, e.g.
    `--upload-pack=CMD`), or None. No branch, tag, URL or path of a remote starts with `-`."""
    if value and value.startswith("-"):
        advice = {
            "the branch": "no branch name git accepts does (git check-ref-format --branch): give "
                          "the branch's name, as `git branch -r` lists it without origin/",
            "the ref": f"pin a tag of another name, or the commit by its 40-hex-digit id (git "
                       f"rev-parse 'refs/tags/{value}^{{commit}}')",
        }.get(what, f"give the repository's URL, or its path (./{value} for a directory of that "
                    f"name)")
        return f"{what} {value!r} starts with '-', which git would take for an option; {advice}"
    return None


def _absolute_if_local(url: str) -> str:
    """A relative path of a local repository (`--repo .`) made absolute: git runs in the cache,
    where a relative path would name something else. URLs and scp-like `host:path` are left
    alone."""
    if "://" in url or re.match(r"^[^/]+:", url) or not pathlib.Path(url).exists():
        return url
    return str(pathlib.Path(url).resolve())


@dataclasses.dataclass
class GitSource(Notes):
    url: str
    cache: pathlib.Path
    branch: str = "main"
    ref: str | None = None  # a tag or commit to pin instead of following the branch
    path: str = ""
    depth: int | None = 50  # shallow, but deep enough to name the commits a run skipped
    ssh_key: pathlib.Path | None = None
    known_hosts: pathlib.Path | None = None
    insecure_ignore_host_key: bool = False
    token_file: pathlib.Path | None = None
    timeout: float = 60  # seconds one git command may take, at most
    limits: Limits = dataclasses.field(default_factory=Limits)
    # set by a run
    time_left: TimeLeft = dataclasses.field(default=unbounded, repr=False, compare=False)
    # one repository object for the source's life (its `git cat-file` processes too), and what its
    # last commit listed: a long-running agent's next listing reuses the entries that did not change
    _repo: git.Repo | None = dataclasses.field(default=None, init=False, repr=False, compare=False)
    _listing: gittree.Listing | None = dataclasses.field(default=None, init=False, repr=False,
                                                         compare=False)

    def __post_init__(self) -> None:
        for value, what in ((self.url, "the repository"), (self.branch, "the branch"),
                            (self.ref, "the ref")):
            problem = option_like(value, what)
            if problem is not None:
                raise ConfigError(problem)
        if self.ssh_key and not self.known_hosts and not self.insecure_ignore_host_key:
            raise ConfigError("an SSH deploy key needs --known-hosts (or, knowingly, "
                              "--insecure-ignore-host-key)")
        path = posixpath.normpath(self.path or ".")
        self.path = "" if path == "." else path.strip("/")
        self.url = _absolute_if_local(self.url)
        digest = hashlib.sha256(self.url.encode()).hexdigest()[:12]
        self.workdir = self.cache / f"repo-{digest}"

    # -- git plumbing -------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        env: dict[str, str] = {"GIT_TERMINAL_PROMPT": "0"}
        if self.ssh_key:
            opts = ["ssh", "-i", str(self.ssh_key), "-o", "IdentitiesOnly=yes", "-o",
                    "BatchMode=yes"]
            if self.insecure_ignore_host_key:
                opts += ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"]
            else:
                opts += ["-o", "StrictHostKeyChecking=yes", "-o",
                         f"UserKnownHostsFile={self.known_hosts}"]
            env["GIT_SSH_COMMAND"] = shlex.join(opts)
        if self.token_file:
            env.update({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader",
                        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {self._basic_credentials()}"})
        return env

    def _basic_credentials(self) -> str:
        """base64 of `user:token` from --token-file, which holds the token (user x-access-token)
        or `user:token` for a forge that wants a particular user."""
        assert self.token_file is not None
        text = operatorfile.read_text(self.token_file, setting="--token-file",
                                      limit=operatorfile.KEY_BYTES).strip()
        if not text:
            raise ConfigError(f"the Git token file {self.token_file} is empty")
        user, _, token = text.partition(":") if ":" in text else (TOKEN_USER, "", text)
        return base64.b64encode(f"{user or TOKEN_USER}:{token}".encode()).decode()

    @calls.measured("git", op=lambda self, repo, *args: args[0])
    def _git(self, repo: git.Repo | None, *args: str) -> str:
        """Runs one git command, killed (with the helpers it started) after min(its timeout, the
        run's time left)."""
        runner = repo.git if repo is not None else git.Git()
        left = self.time_left()
        if left <= 0:
            raise SourceError(f"git {args[0]} {self._safe_url()}: not started: the run's deadline "
                              f"passed")
        limit = min(self.timeout, left)
        try:
            with runner.custom_environment(**self.env()):
                return str(runner.execute(["git", *args], kill_after_timeout=limit))
        except git.GitCommandError as exc:
            raw, detail = str(exc.stderr or exc.stdout or exc), stderr_of(exc)
            if "Timeout: the command" in raw:  # GitPython killed it at `limit`
                cut = " (all the run's deadline left)" if limit < self.timeout else ""
                detail = f"no answer within {limit:.0f} s{cut}; the Git remote stalled"
            elif any(m in raw for m in _HOST_KEY_FAILURES):
                detail = ("the server's SSH host key does not match --known-hosts (it changed, or "
                          "someone is in between); nothing was fetched")
            elif any(m in raw for m in _AUTH_FAILURES):
                detail = ("the server refused the credentials (check --token-file, or --ssh-key "
                          f"and --known-hosts): {detail}")
            raise SourceError(f"git {args[0]} {self._safe_url()}: {detail}") from exc

    def _safe_url(self) -> str:
        return self.url.split("@", 1)[-1] if "://" in self.url and "@" in self.url else self.url

    def _target(self) -> str:
        return self.ref or self.branch

    # -- what a run needs ---------------------------------------------------------------------
    def remote_head(self) -> str:
        """The commit the remote points at now, without cloning (`git ls-remote`)."""
        target = self._target()
        if self.ref and len(self.ref) == 40 and all(c in "0123456789abcdef" for c in self.ref):
            return self.ref
        out = self._git(None, "ls-remote", "--", self.url, target, f"refs/tags/{target}^{{}}")
        lines = [line.split("\t") for line in out.splitlines() if line.strip()]
        peeled = [sha for sha, name in lines if name.endswith("^{}")]
        if peeled or lines:
            return (peeled or [lines[0][0]])[0]
        raise SourceError(f"{self._safe_url()} has no branch or tag {target!r}")

    def repo(self) -> git.Repo:
        if (self.workdir / ".git").is_dir():
            if self._repo is None:
                self._repo, self._listing = git.Repo(self.workdir), gittree.Listing()
            return self._repo
        self.close()  # the clone was removed under it: start again
        self.cache.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.workdir, ignore_errors=True)
        repo = git.Repo.init(self.workdir)
        repo.git.remote("add", "--", "origin", self.url)
        self._repo, self._listing = repo, gittree.Listing()
        return repo

    def close(self) -> None:
        """Ends the repository's `git cat-file` processes (the next step opens it again)."""
        if self._repo is not None:
            self._repo.close()
            self._repo = self._listing = None

    def fetch(self) -> FetchedCommit:
        """Fetches the remote's current commit (force-pushes included); nothing is checked out."""
        repo = self.repo()
        depth = ["--depth", str(self.depth)] if self.depth else []
        target = self._target()
        # git's housekeeping: in the notes' fetch, after the writes
        quick = ["--no-tags", "--no-auto-maintenance"]
        if self.ref and len(self.ref) == 40:
            self._git(repo, "fetch", "--quiet", *quick, *depth, "--", "origin", self.ref)
        else:
            tag, tracking = f"refs/tags/{target}", f"refs/remotes/origin/{target}"
            refspec = f"+{tag}:{tag}" if self.ref else f"+{target}:{tracking}"
            self._git(repo, "fetch", "--quiet", "--force", *quick, *depth, "--", "origin", refspec)
        sha = gitlocal.fetched(repo) or self._git(repo, "rev-parse", "--verify", "--end-of-options",
                                                  "FETCH_HEAD^{commit}").strip()  # (a tag, peeled)
        if self.path and self._object_type(repo, f"{sha}:{self.path}") != "tree":
            raise SourceError(f"{self._safe_url()}@{sha[:12]}: no directory {self.path!r} in the "
                              f"repository")
        return FetchedCommit(sha, self.commit(repo, sha), self.path, self.limits, repo,
                             self._listing)

    def earlier(self, sha: str) -> FetchedCommit | None:
        """An earlier commit (the revision applied before a restart): from the local clone, else
        fetched by its id alone (depth 1; a clone made since the restart is shallow); None when the
        remote does not give it."""
        repo = self.repo()
        if len(sha) != 40 or any(c not in "0123456789abcdef" for c in sha):
            return None
        if self._object_type(repo, sha) != "commit":
            try:
                depth = ["--depth", "1"] if self.depth else []  # a full clone stays full
                self._git(repo, "fetch", "--quiet", *depth, "--", "origin", sha)
            except SourceError as exc:
                log.info("the applied commit %s could not be fetched (%s): the push waits for the "
                         "reconcile",
                         sha[:12], exc)
                return None
            if self._object_type(repo, sha) != "commit":
                return None
        if self.path and self._object_type(repo, f"{sha}:{self.path}") != "tree":
            return None
        return FetchedCommit(sha, self.commit(repo, sha), self.path, self.limits, repo,
                             self._listing)

    @staticmethod
    def _object_type(repo: git.Repo, spec: str) -> str | None:
        try:
            return str(repo.git.cat_file("-t", "--", spec)).strip()
        except git.GitCommandError:
            return None

    @staticmethod
    def commit(repo: git.Repo, sha: str) -> Commit:
        c = repo.commit(sha)
        return Commit(sha, f"{c.author.name} <{c.author.email}>",
                      c.summary if isinstance(c.summary, str)
                      else c.summary.decode(), c.committed_datetime.isoformat())

    def commits_between(self, old: str | None, new: str) -> list[str]:
        """Commits after `old` up to but excluding `new`, oldest first ([] if `old` is unknown)."""
        if not old or old == new:
            return []
        repo = self.repo()
        chain = gitlocal.chain(repo, old, new)
        if chain is not None:
            return chain
        try:
            out = self._git(repo, "rev-list", "--reverse", "--end-of-options", f"{old}..{new}")
        except SourceError:
            log.info("commit %s is not in the fetched history; cannot name the commits skipped",
                     old[:12])
            return []
        return [sha for sha in out.split() if sha != new]

    def clear_stale_locks(self) -> None:
        """Removes lock files a killed git left in the clone. Only safe while holding the run lock:
        no other git process of the agent can be using this clone."""
        git_dir = self.workdir / ".git"
        for lock in [*git_dir.glob("*.lock"), *git_dir.glob("refs/**/*.lock"),
                     *git_dir.glob("objects/pack/tmp_*")]:
            log.warning("removing %s left by an interrupted git command",
                        lock.relative_to(self.workdir))
            lock.unlink(missing_ok=True)
