"""A record CR's values as dnspython rdata (pure): what desired/rrsets.py renders and checks a
record's data with, by the record's type (model/recordtypes/). A module of its own so that dnspython
is imported with the first record, not by every command that imports rrsets (`validate` of a
repository of zones: bench/cli_startup_bench.py); each type's module imports the rdata classes of
its type."""

from __future__ import annotations

from typing import TYPE_CHECKING

import dns.exception
import dns.rdata

from agent.model import recordtypes
from agent.model.recordtypes.values import RecordError

if TYPE_CHECKING:
    from agent.model import records


def rdatas(record: records.AnyRecord) -> list[dns.rdata.Rdata]:
    """The rdata values of a record CR (raises RecordError on a bad value)."""
    try:
        return (_TYPES.get(record.kind) or recordtypes.of_kind(record.kind)).rdatas(record.spec)
    except (dns.exception.DNSException, ValueError) as exc:
        if isinstance(exc, RecordError):
            raise
        raise RecordError("spec", f"invalid record data: {exc}") from exc


Rendered = tuple[dict[str, dns.rdata.Rdata], tuple[str, ...], tuple[dns.rdata.Rdata, ...]]
_VALUES: dict[tuple[object, ...], Rendered] = {}
_VALUES_MAX = 100_000  # entries; the cache is emptied when it is full
_TYPES = recordtypes.REGISTRY


def rendered(record: records.AnyRecord) -> Rendered:
    """The record's rdata by presentation form (raises RecordError on a bad value), and what an
    RRset of this record alone holds: the forms sorted, the rdata in the mapping's order. Rdata are
    immutable and the same values recur across records (targets, SPF texts, CAA), so they are
    built and rendered once per distinct value, and such RRsets share their tuples."""
    record_type = _TYPES.get(record.kind) or recordtypes.of_kind(record.kind)
    key = record_type.identity(record.spec)
    found = _VALUES.get(key)
    if found is None:
        by_text = {d.to_text(): d for d in rdatas(record)}
        found = (by_text, tuple(sorted(by_text)), tuple(by_text.values()))
        if len(_VALUES) >= _VALUES_MAX:
            _VALUES.clear()
        _VALUES[key] = found
    return found


def values(record: records.AnyRecord) -> dict[str, dns.rdata.Rdata]:
    """The record's rdata by presentation form (raises RecordError on a bad value): `rendered`."""
    return rendered(record)[0]
