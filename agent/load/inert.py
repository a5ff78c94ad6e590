"""The Bindy fields bindy-agent does not act on, and the warning each one gets (pure).

The one list of them: the loader warns with it at the field's file:line (so `validate`, `plan` and
`sync` alike), docs/bindy-fields.md lists the same entries, and tests/load/test_inert.py checks
that every field of the models is either acted on somewhere or listed here: a new field cannot be
ignored silently.

Each warning reads ``<field> has no effect in bindy-agent: <why, what to do instead>``; a field
that Bindy's own operator ignores as well says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from agent.load import rulechecks

CLUSTERS = ("Bind9Cluster", "ClusterBind9Provider")
INSTANCE = ("Bind9Instance",)
ROLES = ("primary", "secondary")


@dataclasses.dataclass(frozen=True)
class Inert:
    kinds: tuple[str, ...]
    path: str  # dotted below the object; "*" stands for every item of a list
    why: str  # why it does nothing here, and what to do instead
    bindy_ignores: bool = False  # Bindy's operator does not act on it either
    # warn only for values that would matter (None: any value)
    when: Callable[[Any], bool] | None = None

    @property
    def field(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    def message(self) -> str:
        too = "Bindy ignores it too; " if self.bindy_ignores else ""
        return f"{self.field} has no effect in bindy-agent: {too}{self.why}"


def _roles(path: str) -> list[str]:
    return [f"spec.{role}.{path}" for role in ROLES]


def _signing(kinds: tuple[str, ...], base: str) -> list[Inert]:
    return [
        Inert(kinds, f"{base}.dnssec.signing.nsec3Salt", "named chooses the NSEC3 salt itself "
              "(`nsec3param ... salt-length 16`); remove it", bindy_ignores=True),
        Inert(kinds, f"{base}.dnssec.signing.exportToSecret",
              "a signed zone's keys are made once by the "
              "agent and kept in the Secret <zone>-dnssec-keys of the zone's namespace, whatever "
              "this says; remove it", bindy_ignores=True),
        Inert(kinds, f"{base}.dnssec.signing.keysFrom",
              "a signed zone's keys are made once by the agent, kept "
              "in the Secret <zone>-dnssec-keys and copied into every primary pod's key directory; "
              "Bindy mounts this Secret at /var/cache/bind/keys but sets no key-directory, so "
              "named never reads it; remove it", bindy_ignores=True),
        Inert(kinds, f"{base}.dnssec.signing.autoGenerate",
              "named generates the keys of a dnssec-policy "
              "whatever this says; remove it", bindy_ignores=True, when=_is_false),
    ]


_INLINE_WHY = ("the agent generates every value of an inline RNDC Secret and keeps only the key "
               "names; to bring your own key, create the Secret and name it in rndcKey.secretRef")


def _unreadable_duration(value: Any) -> bool:
    return not isinstance(value, str) or rulechecks.rotate_after(value) is not None


_ROTATE_AFTER_WHY = ("it is not a rotation interval Bindy reads (a whole number of hours, days or "
                     "weeks within 1h..8760h, e.g. 720h, 30d or 4w), so the key is never rotated; "
                     "write it that way")


def _is_false(value: Any) -> bool:
    return value is False


INERT: tuple[Inert, ...] = (
    Inert(INSTANCE, "spec.primaryServers",
          "a secondary transfers its zones from the primary instances of "
          "its own cluster; remove it", bindy_ignores=True),
    Inert(CLUSTERS, "spec.rndcSecretRefs", "name the RNDC key with spec.global.rndcSecretRef or "
          "spec.primary/secondary.rndcSecretRef", bindy_ignores=True),
    *_signing(CLUSTERS, "spec.global"),
    *_signing(INSTANCE, "spec.config"),
    Inert(INSTANCE, "spec.rndcKey.rotateAfter", _ROTATE_AFTER_WHY, when=_unreadable_duration),
    *(Inert(CLUSTERS, p, _ROTATE_AFTER_WHY, when=_unreadable_duration)
      for p in _roles("rndcKey.rotateAfter")),
    Inert(INSTANCE, "spec.rndcKey.secret.data", _INLINE_WHY),
    Inert(INSTANCE, "spec.rndcKey.secret.stringData", _INLINE_WHY),
    *(Inert(CLUSTERS, p,
            "an inline Secret on a role is not used: each instance the cluster generates "
            "gets its own generated key; to share a key, create the Secret and name it in "
            "rndcKey.secretRef") for p in _roles("rndcKey.secret")),
)

_BY_KIND: dict[str, list[tuple[list[str], Inert]]] = {}
for _entry in INERT:
    for _kind in _entry.kinds:
        _BY_KIND.setdefault(_kind, []).append((_entry.path.split("."), _entry))


def _values(data: Any, parts: list[str],
            loc: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if not parts:
        yield loc, data
        return
    head, rest = parts[0], parts[1:]
    if head == "*":
        for i, item in enumerate(data if isinstance(data, list) else ()):
            yield from _values(item, rest, (*loc, i))
    elif isinstance(data, dict) and data.get(head) is not None:
        yield from _values(data[head], rest, (*loc, head))


def found(kind: str, document: dict[str, Any]) -> Iterator[tuple[tuple[Any, ...], Inert]]:
    """(where, entry) for every field of `document` (a validated CR, as written) that has no
    effect."""
    for parts, entry in _BY_KIND.get(kind, ()):
        for loc, value in _values(document, parts, ()):
            if entry.when is None or entry.when(value):
                yield loc, entry
