"""The door every file the operator names is read through, as the repository's files are
(agent/sources/localdir.py): the settings file (`run --config`), endpoint maps and the TSIG keys
and tokens they name, the Git token, the webhook secret, the report key, the alert and commit-status
secrets, the zone API token, the kubeconfig, the agent's own state records, and the CI event file
`ci-plan` reads (GITHUB_EVENT_PATH).

    regular files only   a symbolic link is followed (mounted Secrets are links), but a FIFO, a
                         device, a directory or a socket is a one-line error naming the setting; the
                         file is looked at before it is opened, opened without blocking (a FIFO
                         cannot hang the open) and checked again once open
    bounded              a file over its limit is refused from its size, before a byte is read, and
                         no more than the limit and one byte is ever read (a file that grows, a
                         /proc file): KEY_BYTES for keys, tokens and secrets, SETTINGS_BYTES for
                         settings files, endpoint maps and kubeconfigs, STATE_BYTES for a state
                         record
    never echoed         an error names the setting, the path and what is wrong with the file (its
                         kind, its size, not UTF-8, the line of a YAML error), never its content

Every refusal is an `Unreadable` (a ConfigError): a file the operator named that cannot work.
"""

from __future__ import annotations

import os
import pathlib
import stat

import yaml

from agent.errors import ConfigError
from agent.sources import boundary

KiB, MiB = 1024, 1024 * 1024
KEY_BYTES = 64 * KiB  # a TSIG key file, a token, a shared secret, a URL
SETTINGS_BYTES = 1 * MiB  # a settings file, an endpoint map, a kubeconfig
# one state record: a zone's owned RRsets (500,000 of them weigh about 60 MB)
STATE_BYTES = 256 * MiB
EVENT_BYTES = 32 * MiB  # a CI system's event file (GitHub caps a webhook payload at 25 MB)
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class Unreadable(ConfigError):
    """A file the operator named that the agent will not read, or cannot make sense of."""

    def __init__(self, setting: str, path: os.PathLike[str] | str, why: str) -> None:
        super().__init__(f"{setting} {boundary.shown(os.fspath(path))}: {why}")
        self.setting, self.path, self.why = setting, pathlib.Path(path), why


class Missing(Unreadable):
    """The file does not exist."""


def size_text(size: int) -> str:
    """A size in words: 512 bytes, 64 KiB, 3.7 GiB."""
    if size < KiB:
        return f"{size} bytes"
    for unit, scale in (("GiB", 1024 * MiB), ("MiB", MiB), ("KiB", KiB)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} bytes"  # pragma: no cover - KiB catches the rest


def _not_regular(mode: int) -> str:
    return (f"not read: {boundary.kind_of(mode)}, not a regular file; give the path of a regular "
            f"file")


def _too_large(size: str, limit: int) -> str:
    return f"not read: {size}, over the limit of {size_text(limit)} for this file"


def check(path: os.PathLike[str] | str, *, setting: str) -> None:
    """Refuses (Unreadable, Missing) a path that is not an existing regular file, without opening
    it: for files the agent hands to another program (an SSH key, known_hosts)."""
    try:
        st = os.stat(path)
    except FileNotFoundError as exc:
        raise Missing(setting, path, "no such file") from exc
    except OSError as exc:
        raise Unreadable(setting, path, f"cannot read it: {exc.strerror}") from exc
    if not stat.S_ISREG(st.st_mode):
        raise Unreadable(setting, path, _not_regular(st.st_mode))


def read_bytes(path: os.PathLike[str] | str, *, setting: str, limit: int) -> bytes:
    """The whole file, if it is a regular file of at most `limit` bytes; else Unreadable (Missing
    when it does not exist)."""
    check(path, setting=setting)
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError as exc:
        raise Missing(setting, path, "no such file") from exc
    except OSError as exc:
        raise Unreadable(setting, path, f"cannot open it: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # replaced between the look and the open
            raise Unreadable(setting, path, _not_regular(st.st_mode))
        if st.st_size > limit:
            raise Unreadable(setting, path, _too_large(size_text(st.st_size), limit))
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise Unreadable(setting, path, f"cannot read it: {exc.strerror}") from exc
    if len(data) > limit:
        raise Unreadable(setting, path, _too_large("more than that", limit))
    return data


def read_text(path: os.PathLike[str] | str, *, setting: str, limit: int) -> str:
    """The file as UTF-8 text (see read_bytes)."""
    data = read_bytes(path, setting=setting, limit=limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(setting, path, f"not UTF-8 text (byte {exc.start + 1} is not)") from exc


def yaml_problem(exc: yaml.YAMLError) -> str:
    """Where a YAML document went wrong, without quoting it (the file may be a secret given by
    mistake)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    what = ("a value that is not plain data (a tag, a timestamp, a base-60 or over-64-bit "
            "number)") if isinstance(
        exc, yaml.constructor.ConstructorError) else "not valid YAML"
    return f"{what}{where}"
