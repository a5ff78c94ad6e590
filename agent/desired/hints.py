"""Did-you-mean for a reference that finds nothing (pure): the zone name, cluster or label the
author most likely meant, among those the revision declares. Asked only when a reference already
failed, so a valid revision never pays for it (rapidfuzz is imported then too).

What one failing reference costs is one pass over the candidates in rapidfuzz's compiled loops (no
Python loop over pairs), and a run asks for at most HINTS_PER_KIND hints of each kind (`Budget`): a
revision with 10,000 records that all name a missing zone gets a hint on the first 20 of them and
the plain error on the rest, so that a broken revision is told as fast as a valid one is read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from agent.model.base import LabelSelector
from agent.model.key import ObjectKey

# the similarity (0-1) below which two spellings are not taken for one another (kinds, fields)
CUTOFF = 0.6
HINTS_PER_KIND = 20  # did-you-mean hints one run looks for, per kind of problem


class Budget:
    """The hints one run may still look for: the first HINTS_PER_KIND problems of each kind get
    one."""

    def __init__(self, per_kind: int = HINTS_PER_KIND) -> None:
        self.per_kind, self.asked = per_kind, Counter[str]()

    def hint(self, kind: str, make: Callable[[], str]) -> str:
        """`make()`, or "" once `kind` had its share."""
        self.asked[kind] += 1
        return make() if self.asked[kind] <= self.per_kind else ""


def closest(word: str, choices: Iterable[str], cutoff: float = CUTOFF) -> str | None:
    """The choice nearest to `word` (the first of the nearest), or None when none is near enough."""
    from rapidfuzz import process
    from rapidfuzz.distance import Indel

    found = process.extractOne(word, list(dict.fromkeys(choices)),
                               scorer=Indel.normalized_similarity, score_cutoff=cutoff)
    return str(found[0]) if found else None


def _nearest(word: str, names: Sequence[str], most: int = 2) -> tuple[int, str] | None:
    """(edits, name) of the name of `names` (sorted) fewest edits from `word` (case aside), within
    `most`: Levenshtein, a swap of two neighbours counting as one edit (optimal string
    alignment)."""
    from rapidfuzz import process
    from rapidfuzz.distance import OSA

    found = process.extractOne(word.lower(), [n.lower() for n in names], scorer=OSA.distance,
                               score_cutoff=most)
    return (int(found[1]), names[found[2]]) if found else None


def name_meant(word: str, names: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the DNS name of `names` within two edits of `word` (a typo:
    exmaple.org, example.ogr), or nothing: example.com is another name than example.org, not a
    misspelling of it."""
    found = _nearest(word, sorted(dict.fromkeys(names)))
    return f" (did you mean {found[1]!r}?)" if found else ""


def did_you_mean(word: str, choices: Iterable[str], cutoff: float = CUTOFF) -> str:
    """` (did you mean 'x'?)`, or nothing."""
    found = closest(word, choices, cutoff)
    return f" (did you mean {found!r}?)" if found else ""


def no_cluster(name: str, clusters: Iterable[ObjectKey], namespace: str | None) -> str:
    """What a Bind9Instance's clusterRef that names no Bind9Cluster of its namespace is told."""
    hint = did_you_mean(name, [k.name for k in clusters if k.namespace == namespace])
    return f"no Bind9Cluster {name!r} in namespace {namespace}{hint}"


def zone_meant(name: str, zones: Iterable[str]) -> str:
    """For a fully qualified name no zone contains: name_meant for the zone whose name is nearest to
    the name's own suffix of as many labels (www.exmaple.org. -> example.org.), or nothing."""
    labels = name.lower().rstrip(".").split(".")
    by_depth: dict[int, list[str]] = {}
    for zone in sorted(zones):
        by_depth.setdefault(zone.count("."), []).append(zone)
    found = [f for depth, group in by_depth.items()
             if (f := _nearest(".".join(labels[-depth:]) + ".", group)) is not None]
    return f" (did you mean {min(found)[1]!r}?)" if found else ""


def _shown(key: str, value: str) -> str:
    return f"{key}: {value}"


def _best(queries: Iterable[str], choices: Sequence[str]) -> tuple[float, int] | None:
    """(similarity, index) of the choice most similar to one of `queries` (not equal to it), the
    first of equals; None under CUTOFF."""
    from rapidfuzz import process
    from rapidfuzz.distance import Indel

    best: tuple[float, int] | None = None
    for query in queries:
        for _, score, index in process.extract(query, choices, scorer=Indel.normalized_similarity,
                                               score_cutoff=CUTOFF, limit=None):
            if choices[index] != query and (best is None or (score, -index) > (best[0], -best[1])):
                best = (score, index)
    return best


def label_for(labels: Mapping[str, str], selectors: Iterable[tuple[str, LabelSelector]]) -> str:
    """For an object whose `labels` no selector matches: the selector's label nearest to one of its
    own, as ` (did you mean the label `k: v`? <who> selects it)`, or nothing. `selectors`: (who,
    selector)."""
    have = [_shown(k, v) for k, v in labels.items()]
    wanted = [(who, _shown(k, v)) for who, s in selectors
              for k, v in (s.match_labels or {}).items()]
    wanted = [(who, want) for who, want in wanted if want not in have]
    best = _best(have, [want for _, want in wanted]) if have and wanted else None
    return (f" (did you mean the label '{wanted[best[1]][1]}'? {wanted[best[1]][0]} selects it)"
            if best else "")


def selector_for(selector: LabelSelector, objects: Iterable[tuple[str, Mapping[str, str]]]) -> str:
    """For a selector that matches none of `objects` ((who, labels)): the label of one of them
    nearest to a label the selector asks for, as ` (did you mean 'k: v'? <who> has it)`, or
    nothing."""
    wanted = [_shown(k, v) for k, v in (selector.match_labels or {}).items()]
    had = [(who, _shown(k, v)) for who, labels in objects for k, v in labels.items()]
    best = _best(wanted, [have for _, have in had]) if wanted and had else None
    return f" (did you mean '{had[best[1]][1]}'? {had[best[1]][0]} has it)" if best else ""
