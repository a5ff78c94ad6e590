"""What a record's value may be (pure): RecordError, naming the field at fault, and the checks
shared by the record types and by desired/rrsets.py - a host name target, the size of one record's
data.

dnspython is imported by the first host name checked: `validate` of a repository of zones alone
loads none of its record types (bench/cli_startup_bench.py)."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from agent.model import syntax

if TYPE_CHECKING:
    import dns.name

LABEL = re.compile(r"\*|[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
MAX_RDATA = 65535  # octets of one record's data (RDLENGTH is 16 bits)
CONFIG_UNSAFE = re.compile(r'["{};]')
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class RecordError(ValueError):
    """A record value that cannot be published; `path` is the spec field at fault."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


def absolute(name: str) -> str:
    """Lowercase absolute form of a domain name, with the trailing dot."""
    name = name.lower()
    return name if name.endswith(".") else name + "."


def check_hostname(value: str, path: str, *, require_fqdn: bool) -> dns.name.Name:
    """A host name target (CNAME, MX, NS, SRV): valid labels, and absolute when Bindy needs it."""
    import dns.exception
    import dns.name

    if CONTROL.search(value) or CONFIG_UNSAFE.search(value) or " " in value:
        raise RecordError(path, f"{value!r} contains a character not allowed in a host name")
    if value == ".":
        return dns.name.root
    if require_fqdn and not value.endswith("."):
        raise RecordError(path, f"{value!r} must be fully qualified with a trailing dot "
                          f"(write '{value}.'); without it a DNS server appends the zone name")
    labels = value.rstrip(".").split(".")
    for label in labels:
        if not LABEL.fullmatch(label) or label == "*":
            too_long = " is longer than 63 octets" if len(label) > 63 else ""
            raise RecordError(path, f"{value!r} is not a valid host name (label "
                                    f"{label[:63]!r}{too_long})")
    if error := syntax.dns_name_error(value):
        raise RecordError(path, f"{syntax.brief(value)} {error}")
    try:
        return dns.name.from_text(absolute(value))
    except dns.exception.DNSException as exc:
        raise RecordError(path, f"{value!r} is not a valid host name: {exc}") from exc


@functools.lru_cache(maxsize=16_384)
def host(value: str, path: str) -> dns.name.Name:
    """check_hostname of a target, fully qualified, once per distinct target: mail servers, SRV
    and CNAME targets recur across records (the checked name is immutable; a refused one is checked,
    and refused with the same words, every time)."""
    return check_hostname(value, path, require_fqdn=True)
