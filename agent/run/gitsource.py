"""A Git source as every verb names it (`sync --repo`, `run`'s settings, `report`, `plan --repo`),
and the one place it becomes a `GitSource` (agent/sources/git.py). Light to import: `report` and
`plan --base` use it without a run's clients."""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Mapping
from typing import Any

from agent.model import names
from agent.model.limits import Limits
from agent.sources.git import GitSource


@dataclasses.dataclass(frozen=True)
class Git:
    """A Git source: the repository and how to reach it."""

    repo: str
    cache: pathlib.Path = names.GIT_CACHE
    branch: str = "main"
    ref: str | None = None
    path: str = ""
    ssh_key: pathlib.Path | None = None
    known_hosts: pathlib.Path | None = None
    insecure_ignore_host_key: bool = False
    token_file: pathlib.Path | None = None
    # signs (sync, run) or checks (report) the commit reports
    report_key_file: pathlib.Path | None = None

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Git:
        """From values named as `run`'s settings and `sync`'s flags are; a name not given keeps the
        default."""
        return cls(**{f.name: values[f.name] for f in dataclasses.fields(cls) if f.name in values})


def source(git: Git, limits: Limits) -> GitSource:
    """The repository of `git`, read within `limits`."""
    return GitSource(git.repo, git.cache, branch=git.branch, ref=git.ref, path=git.path,
                     ssh_key=git.ssh_key, known_hosts=git.known_hosts,
                     insecure_ignore_host_key=git.insecure_ignore_host_key,
                     token_file=git.token_file, limits=limits)
