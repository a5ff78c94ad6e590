"""The address lists of A and AAAA records, checked (pure): each an address of the record's family,
or refused with the kind that takes it."""

from __future__ import annotations

import ipaddress

from agent.model.recordtypes.values import RecordError

Family = type[ipaddress.IPv4Address | ipaddress.IPv6Address]


def _not_an_address(addr: str, family: Family) -> str:
    """Why `addr` is refused, naming the record kind that takes it when it is an address of the
    other family."""
    version, other, kind, field = (("IPv4", ipaddress.IPv6Address, "AAAARecord", "ipv6Addresses")
                                   if family is ipaddress.IPv4Address else
                                   ("IPv6", ipaddress.IPv4Address, "ARecord", "ipv4Addresses"))
    try:
        other(addr)
    except ValueError:
        return f"{addr!r} is not an {version} address"
    return (f"{addr!r} is an {'IPv6' if version == 'IPv4' else 'IPv4'} address, not an {version} "
            f"one: publish it with an {kind} (spec.{field})")


def addresses(values: list[str], field: str, family: Family
              ) -> list[str | ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The addresses checked, as what dnspython is given: the parsed address (its bytes are what
    parsing the text again would give; dnspython renders them the same), or the text itself when
    it names a scope (`fe80::1%eth0`), which only ipaddress accepts: dnspython refuses it as
    before."""
    out: list[str | ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for i, addr in enumerate(values):
        try:
            parsed = family(addr)
        except ValueError:
            raise RecordError(f"spec.{field}[{i}]", _not_an_address(addr, family)) from None
        out.append(addr if "%" in addr else parsed)
    return out
