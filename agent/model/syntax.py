"""Name rules the servers enforce, checked before anything is sent to them.

Kubernetes (apimachinery's validation): object names are DNS-1123 subdomains (<= 253), namespaces
and Service names DNS-1123 / DNS-1035 labels (<= 63), label values <= 63 characters, label keys an
optional DNS subdomain prefix and a name <= 63. DNS (RFC 1035 2.3.4): a label is at most 63 octets,
a name at most 255 octets in wire form (253 characters written without the final dot).

Every check returns None when the value is fine, else the reason in words. Patterns are matched
with `fullmatch`: `re.match(r"...$")` would accept a trailing newline.
"""

from __future__ import annotations

import functools
import re

from agent.model import printable as _printable

_LABEL_1123 = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(_LABEL_1123)
DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL_1123}(\.{_LABEL_1123})*")
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
MAX_LABEL_OCTETS, MAX_NAME_OCTETS = 63, 255


def printable(text: str) -> str:
    """`text` safe to print on one line: undecodable bytes (surrogate escapes) and non-printable
    characters (newlines, escape sequences, U+2028 ...) written as backslash escapes
    (agent/model/printable.py)."""
    return _printable.line(text)


def brief(name: str, width: int = 40) -> str:
    """A name quoted for a message, cut when long (the file and line say where the rest is)."""
    if len(name) <= width:
        return repr(name)
    return repr(name[:width]) + f"... ({len(name)} characters)"


def _name_error(value: str, limit: int, pattern: re.Pattern[str], rule: str) -> str | None:
    if len(value) > limit:
        return f"is {len(value)} characters long; at most {limit}"
    return None if pattern.fullmatch(value) else rule


_DNS1123_RULE = ("use lowercase letters, digits, '-' (and '.' in names), starting and ending with "
                 "a letter or digit")


def subdomain_error(value: str) -> str | None:
    """A Kubernetes object name (DNS-1123 subdomain)."""
    return _name_error(value, 253, DNS1123_SUBDOMAIN, _DNS1123_RULE)


@functools.lru_cache(maxsize=4096)  # namespaces, label keys and values recur in every document
def label_error(value: str) -> str | None:
    """A namespace name (DNS-1123 label)."""
    return _name_error(value, 63, DNS1123_LABEL, _DNS1123_RULE)


def dns1035_error(value: str) -> str | None:
    """A Service name (DNS-1035 label: starts with a letter)."""
    return _name_error(value, 63, DNS1035_LABEL,
                       "use lowercase letters, digits and '-', starting with a letter "
                       "and ending with a letter or digit")


@functools.lru_cache(maxsize=4096)  # namespaces, label keys and values recur in every document
def label_value_error(value: str) -> str | None:
    if len(value) > 63:
        return f"is {len(value)} characters long; a label value may have at most 63"
    if value and not _QUALIFIED.fullmatch(value):
        return "use letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
    return None


@functools.lru_cache(maxsize=4096)  # namespaces, label keys and values recur in every document
def label_key_error(key: str) -> str | None:
    """A label or annotation key: `[prefix/]name`, the prefix a DNS subdomain."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not prefix:
        return "the prefix before '/' is empty"
    if prefix and (error := subdomain_error(prefix)):
        return f"prefix {prefix!r}: {error}"
    if len(name) > 63:
        return f"name part is {len(name)} characters long; at most 63"
    if not _QUALIFIED.fullmatch(name):
        return "use letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
    return None


def wire_octets(name: str) -> int:
    """Length of a (presentation-form, unescaped) DNS name on the wire, absolute."""
    text = name.rstrip(".")
    return 1 if not text else len(text.encode()) + 2


def dns_name_error(name: str) -> str | None:
    """Labels <= 63 octets and the whole name <= 255 octets on the wire."""
    for label in name.rstrip(".").split("."):
        if len(label.encode()) > MAX_LABEL_OCTETS:
            return (f"label {label[:20]!r}... is {len(label.encode())} octets long; "
                    f"a DNS label may have at most {MAX_LABEL_OCTETS}")
    octets = wire_octets(name)
    if octets > MAX_NAME_OCTETS:
        return (f"is {octets} octets on the wire; a DNS name may have at most {MAX_NAME_OCTETS} "
                "(253 characters without the final dot)")
    return None
