"""Did-you-mean for a reference that finds nothing (pure): the zone name, cluster or label the author most
likely meant, among those the revision declares. Asked only when a reference already failed, so a
valid revision never pays for it (difflib is imported then too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from agent.model.base import LabelSelector
from agent.model.key import ObjectKey

CUTOFF = 0.6  # difflib's ratio below which two spellings are not taken for one another (as for kinds and fields)


def closest(word: str, choices: Iterable[str], cutoff: float = CUTOFF) -> str | None:
    """The choice nearest to `word`, or None when none is near enough."""
    import difflib

    found = difflib.get_close_matches(word, list(dict.fromkeys(choices)), n=1, cutoff=cutoff)
    return found[0] if found else None


def _edits(a: str, b: str) -> int:
    """Levenshtein distance, a swap of two neighbours counting as one edit (optimal string alignment)."""
    rows = [list(range(len(b) + 1))]
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            row.append(min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (ca != cb)))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


def name_meant(word: str, names: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the DNS name of `names` within two edits of `word` (a typo: exmaple.org,
    example.ogr), or nothing: example.com is another name than example.org, not a misspelling of it."""
    scored = sorted((_edits(word.lower(), name.lower()), name) for name in dict.fromkeys(names))
    return f" (did you mean {scored[0][1]!r}?)" if scored and scored[0][0] <= 2 else ""


def did_you_mean(word: str, choices: Iterable[str], cutoff: float = CUTOFF) -> str:
    """` (did you mean 'x'?)`, or nothing."""
    found = closest(word, choices, cutoff)
    return f" (did you mean {found!r}?)" if found else ""


def no_cluster(name: str, clusters: Iterable[ObjectKey], namespace: str | None) -> str:
    """What a Bind9Instance's clusterRef that names no Bind9Cluster of its namespace is told."""
    hint = did_you_mean(name, [k.name for k in clusters if k.namespace == namespace])
    return f"no Bind9Cluster {name!r} in namespace {namespace}{hint}"


def zone_meant(name: str, zones: Iterable[str]) -> str:
    """For a fully qualified name no zone contains: name_meant for the zone whose name is nearest to the
    name's own suffix of as many labels (www.exmaple.org. -> example.org.), or nothing."""
    labels = name.lower().rstrip(".").split(".")
    scored = sorted((_edits(".".join(labels[-zone.count("."):]) + ".", zone), zone) for zone in zones)
    return f" (did you mean {scored[0][1]!r}?)" if scored and scored[0][0] <= 2 else ""


def _shown(key: str, value: str) -> str:
    return f"{key}: {value}"


def label_for(labels: Mapping[str, str], selectors: Iterable[tuple[str, LabelSelector]]) -> str:
    """For an object whose `labels` no selector matches: the selector's label nearest to one of its own,
    as ` (did you mean the label `k: v`? <who> selects it)`, or nothing. `selectors`: (who, selector)."""
    have = [_shown(k, v) for k, v in labels.items()]
    selectors = [(who, s) for who, s in selectors if s.match_labels]
    if not have or not selectors:
        return ""
    import difflib

    best: tuple[float, str, str] | None = None
    for who, selector in selectors:
        for key, value in (selector.match_labels or {}).items():
            want = _shown(key, value)
            if want in have:
                continue
            score = max((difflib.SequenceMatcher(None, want, h).ratio() for h in have), default=0.0)
            if score >= CUTOFF and (best is None or score > best[0]):
                best = (score, want, who)
    return f" (did you mean the label '{best[1]}'? {best[2]} selects it)" if best else ""


def selector_for(selector: LabelSelector, objects: Iterable[tuple[str, Mapping[str, str]]]) -> str:
    """For a selector that matches none of `objects` ((who, labels)): the label of one of them nearest to a
    label the selector asks for, as ` (did you mean 'k: v'? <who> has it)`, or nothing."""
    wanted = [_shown(k, v) for k, v in (selector.match_labels or {}).items()]
    objects = [(who, labels) for who, labels in objects if labels]
    if not wanted or not objects:
        return ""
    import difflib

    best: tuple[float, str, str] | None = None
    for who, labels in objects:
        for key, value in labels.items():
            have = _shown(key, value)
            score = max((difflib.SequenceMatcher(None, w, have).ratio() for w in wanted if w != have), default=0.0)
            if score >= CUTOFF and (best is None or score > best[0]):
                best = (score, have, who)
    return f" (did you mean '{best[1]}'? {best[2]} has it)" if best else ""
