"""--link-base: the pull-request comment (`plan -o markdown`) links each change to its file:line.

    --link-base https://github.com/OWNER/REPO/blob   ->   .../blob/<commit>/<path in the
                                                     repository>#L<line>

GitHub's, Gitea's and GitLab's (`.../-/blob`) file URLs all take that shape. What a change adds or
edits links to the head's commit, what it removes to the base's. A side that is no commit (a
directory outside Git, or `--base-dir`) links to URL/<path>#L<line>. What a kustomize overlay built
links to the overlay's kustomization.yaml (its output is no file of the repository).
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import posixpath
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    from agent.desired.hierarchy import Desired
    from agent.plan.locate import Located, Sources

_SHA = re.compile(r"[0-9a-f]{40}")
HEAD, BASE = "head", "base"  # the sides of a plan (plan/locate.py)


def add_flag(parser: argparse.ArgumentParser, default: str = "") -> None:
    parser.add_argument("--link-base", metavar="URL", type=_base,
                        help="with -o markdown, link each change to its file:line: "
                        "URL/<commit>/<path>#L<line> (e.g. https://github.com/OWNER/REPO/blob)"
                        + (f" {default}" if default else ""))


def from_ci(forge: str | None, env: Mapping[str, str]) -> str | None:
    """The link base of the repository a CI job runs for: GitHub Actions' GITHUB_SERVER_URL and
    GITHUB_REPOSITORY, GitLab CI's CI_PROJECT_URL; None elsewhere."""
    if forge == "github" and env.get("GITHUB_REPOSITORY"):
        return f"{env.get('GITHUB_SERVER_URL') or 'https://github.com'}/{env['GITHUB_REPOSITORY']}/blob"
    if forge == "gitlab" and env.get("CI_PROJECT_URL"):
        return f"{env['CI_PROJECT_URL'].rstrip('/')}/-/blob"
    return None


def _base(value: str) -> str:
    if not re.fullmatch(r"https?://[^\s]+", value):
        raise argparse.ArgumentTypeError(f"{value!r} is not an http(s) URL")
    return value.rstrip("/")


@dataclasses.dataclass(frozen=True)
class Where:
    """A side of the plan in its repository: the commit (None: not one), and the path of its root
    there."""

    commit: str | None
    prefix: str = ""


def commit_of(revision: str) -> str | None:
    """The commit a revision names (a directory in a work tree: its HEAD, "-dirty" or not), or
    None."""
    return revision[:40] if _SHA.fullmatch(revision[:40]) else None


def directory(path: pathlib.Path, revision: str) -> Where:
    """A directory's place in its Git work tree (none: outside one)."""
    commit = commit_of(revision)
    if commit is None:
        return Where(None)
    import git

    try:
        repo = git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return Where(None)
    rel = path.resolve().relative_to(pathlib.Path(repo.working_dir).resolve()).as_posix()
    return Where(commit, "" if rel == "." else rel)


def sources(args: argparse.Namespace, head: Desired, base: Desired | None,
            where: dict[str, Where]) -> Sources:
    """What the Markdown plan needs to say where each change comes from (and, with --link-base, to
    link it); `where`: each side ("head", "base") in its repository. Nothing for the other
    formats."""
    from agent.plan import locate
    from agent.sources import kustomize

    if getattr(args, "output", None) != "markdown":
        return locate.NOWHERE
    url = getattr(args, "link_base", None)

    def link(located: Located) -> str | None:
        side = where.get(located.side, Where(None))
        file, line = located.file, located.line
        # a kustomize build's output is no file: its kustomization
        if posixpath.basename(file) == kustomize.BUILT:
            file, line = posixpath.join(posixpath.dirname(file), kustomize.NAMES[0]), 1
        path = "/".join(p for p in (side.prefix, file) if p)
        commit = f"{side.commit}/" if side.commit else ""
        return f"{url}/{commit}{quote(path)}#L{line}"

    return locate.Sources(locate.Locator(head, base), link if url else None)
