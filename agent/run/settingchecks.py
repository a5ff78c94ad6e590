"""What every setting of `bindy-agent run` is checked for at start (agent/run/settings.py), and how
a refusal is told: which setting, what is wrong, and where the value came from (the flag, the
environment variable, or the settings file and its key).

    text, paths, lists  no control character (NUL, newline, CR, ESC, C1, bidi overrides): a value
                        that holds one would reach git, a log line or a file name as something else
    ports               1-65535 (`listen`: never taken modulo 65536)
    durations           finite (no inf, no nan) and within a sane maximum (a day for a run's
                        deadline or the interval, an hour for HTTP timeouts and the lease, 30 days
                        for resync)
    limits              within a range that can work (connections, body sizes, read limits)
    names               Kubernetes names where they name Kubernetes objects (namespaces, the Lease)
    path                a directory inside the repository: no absolute path, no `..` (written `a/b`;
                        `./a/` is read as `a`)
    cache, state        directories: one that exists but is not a directory (a file, a FIFO) is
                        refused at start, not at the first run
"""

from __future__ import annotations

import os
import pathlib
import posixpath
import stat
from collections.abc import Mapping

import pydantic

from agent.model import syntax

LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"  # a Kubernetes namespace (DNS-1123 label)
SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"  # a Lease's name
URL = r"^https?://[^\s]+$"
MAX_BYTES = 64 * 1024**3  # a read limit in bytes: 64 GiB
MAX_COUNT = 1_000_000_000  # a read limit in documents, nodes or records
_NAMESPACE = pydantic.TypeAdapter(pydantic.constr(pattern=LABEL, max_length=63))


def printable(value: object) -> None:
    """ValueError when a text, a path or a list item holds a control character."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        text = str(item) if isinstance(item, str | pathlib.PurePath) else None
        if text is not None and syntax.printable(text) != text:
            at = next(i for i, c in enumerate(text) if syntax.printable(c) != c)
            # the value itself is not shown: it may hold a credential
            raise ValueError(f"holds a control character (U+{ord(text[at]):04X} at character "
                             f"{at + 1}); give printable text")


def port(text: str) -> None:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ValueError(f"the port {text} is not a port number: give one from 1 to 65535")


def repository_path(text: str) -> str:
    """The `path` setting, normalized (`./a/` -> `a`, `.` -> ``); ValueError when it leaves the
    repository."""
    if text.startswith("/"):
        raise ValueError(f"{syntax.brief(text)} is an absolute path: give the directory's path "
                         "inside the repository (e.g. clusters/prod)")
    if ".." in text.split("/"):
        raise ValueError(f"{syntax.brief(text)} climbs out with '..': give the directory's path "
                         "inside the repository, from its top (e.g. clusters/prod)")
    normal = posixpath.normpath(text) if text else ""
    return "" if normal == "." else normal


def directory(path: pathlib.Path | None, setting: str) -> str | None:
    """Why `path` cannot be the directory a setting names (it exists and is not one), or None."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None  # made when first needed
    except OSError as exc:
        return f"{setting} {path}: cannot be looked at: {exc.strerror}"
    if not stat.S_ISDIR(st.st_mode):
        return (f"{setting} {path}: exists and is not a directory; give a directory (it is made "
                "when missing)")
    return None


def namespaces(values: list[str]) -> None:
    for value in values:
        if value != "*":
            try:
                _NAMESPACE.validate_python(value)
            except pydantic.ValidationError:
                raise ValueError(f"{syntax.brief(value)} is not a namespace name (lowercase "
                                 "letters, digits and '-', at most 63) or *") from None


def key(text: str) -> str:
    """A key of the settings file as a message shows it (escaped, cut)."""
    return syntax.brief(syntax.printable(text), 60)


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def variable(prefix: str, name: str) -> str:
    return f"{prefix}{name.upper()}"


def required(prefix: str, name: str) -> str:
    return (f"setting {name}: required: give the flag {flag(name)}, the environment variable "
            f"{variable(prefix, name)}, or `{name}:` in the --config file")


def described(exc: pydantic.ValidationError, sources: Mapping[str, str], prefix: str) -> str:
    """Each problem of the settings on a line: the setting, what is wrong, where its value came
    from."""
    lines = []
    for error in exc.errors(include_url=False, include_input=False):
        name = str(error["loc"][0]) if error["loc"] else "settings"
        if error["type"] == "missing":
            lines.append(required(prefix, name))
            continue
        shown = name if name.isidentifier() else syntax.brief(syntax.printable(name), 60)
        where = sources.get(name, "the default")
        what = ("not a setting" if error["type"] == "extra_forbidden"
                else error["msg"].removeprefix("Value error, "))
        lines.append(f"setting {shown}: {what} (given by {where})")
    return "\n".join(lines)
