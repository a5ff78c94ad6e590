"""The agent's one error tree.

Library exceptions are translated at the boundary that calls the library and keep their cause
(``raise ZoneApiError(...) from exc``). ``retryable`` tells the runner whether backing off and
trying again can help.

    AgentError
     ├── ConfigError            bad flags, settings or endpoint files
     ├── SourceError            the revision could not be fetched or read        (retryable)
     │    └── FileRefused       one file of the revision may not be read: outside the repository,
     │                          not a regular file, a bad name (not retryable; a problem, not a
     │                          crash)
     ├── ReadError              reading the world failed                        (retryable)
     │    └── ZoneTransferError an AXFR of a zone (refused, cut at a bound, transport)
     │         └── ZoneMissing  the server does not serve the zone (not retryable)
     └── ApplyError             a write to the outside world failed
          ├── KubeError         Kubernetes API (forbidden, not found, conflict, invalid, server)
          ├── ZoneApiError      the BIND9 sidecar's zone HTTP API
          ├── DnsUpdateError    an RFC 2136 DNS UPDATE (rcode, prerequisite, transport)
          └── CommentError      the plan's comment on a pull/merge request (`ci-plan`)

An invalid revision and a plan refused by the safety gate are not exceptions: they are outcomes
of a run (agent.problems.Problem lists, refusal messages), because every problem is collected and
reported together rather than the first one raised.
"""

from __future__ import annotations


class AgentError(Exception):
    """Root of every error the agent raises on purpose."""

    retryable: bool = False


class ConfigError(AgentError):
    """The agent was started or called with settings that cannot work."""


class SourceError(AgentError):
    """A revision could not be fetched or read from its source."""

    retryable = True


class FileRefused(SourceError):
    """A file of the revision that the agent will not read; the loader reports it as a problem of
    that file, at `line` (a warning when `warning` is set, e.g. a submodule that is skipped)."""

    retryable = False

    def __init__(self, message: str, *, warning: bool = False, line: int = 1) -> None:
        super().__init__(message)
        self.warning, self.line = warning, line


class ReadError(AgentError):
    """Reading the world (before planning, or to confirm what was written) failed."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class ZoneTransferError(ReadError):
    """A zone transfer (AXFR) was refused, cut at one of its bounds, or could not be made."""


class TransferRefused(ZoneTransferError):
    """The server refused the agent's zone transfer: the zone's allow-transfer does not list the
    agent's address (a per-zone ACL written while another replica of the agent, at another address,
    led)."""


class ZoneMissing(ZoneTransferError):
    """The server does not serve the zone (e.g. deleted by hand): it is created again."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False)


class ApplyError(AgentError):
    """Writing desired state to the outside world failed."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class KubeError(ApplyError):
    """A Kubernetes API call failed; ``reason`` is forbidden/not_found/conflict/invalid/server."""

    def __init__(self, message: str, *, reason: str, retryable: bool = False) -> None:
        super().__init__(message, retryable=retryable)
        self.reason = reason


class ZoneApiError(ApplyError):
    """The zone HTTP API of a BIND9 instance refused or failed a request."""


class DnsUpdateError(ApplyError):
    """A DNS UPDATE was refused (rcode), failed its prerequisites, or could not be sent."""


class CommentError(ApplyError):
    """A forge refused or failed to list, create or update the plan's comment on a pull/merge
    request."""


class DeliveryError(AgentError):
    """A commit status or an alert was not delivered within its budget (logged; never fatal to a
    run)."""
